"""Stand in for ``sgl_kernel`` when the real package cannot serve this process.

``unusable(ctx)`` runs before the real package's body: it answers why it cannot serve
(not installed, or no code for this GPU -- read from the ELF headers of the library its
loader would pick, without loading it).  A real package that fails while importing
(torch ABI, CUDA libraries) is caught by the engine, which then calls ``provide(ctx)``
with the error as the cause.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sglang_shims.patching import PatchContext

REMEDY = ("Install an sgl-kernel built for your torch and GPU (`sglang-shims doctor` names"
          " it), or use a model that needs only the ops provided here.")


def _library_for(folder: Path, capability: tuple[int, int]) -> Path | None:
    """The common_ops that sgl_kernel's loader picks: sm90/ on 9.0, sm100/ otherwise,
    then the flat layout of older releases."""
    preferred = "sm90" if capability == (9, 0) else "sm100"
    for sub in (preferred, ""):
        hits = sorted((folder / sub).glob("common_ops*.so")) if (folder / sub).is_dir() else []
        if hits:
            return hits[0]
    return None


def unusable(ctx: PatchContext) -> str | None:
    module = ctx.module
    if ctx.target_missing:
        return "sgl_kernel is not installed"
    spec = getattr(module, "__spec__", None)
    locations = list(getattr(spec, "submodule_search_locations", None) or [])
    if not locations:
        return None
    if getattr(module, "__file__", None) is None:
        # a folder without __init__.py: what a broken or half-done uninstall leaves
        return (f"sgl_kernel is a namespace package ({locations[0]} has no __init__.py):"
                " a broken or partial install")
    from sglang_shims.patching.elf import inspect_library

    for capability in ctx.gpus():
        library = _library_for(Path(locations[0]), capability)
        if library is None:
            continue
        info = inspect_library(library)
        if not info.runs_on(capability):
            held = ", ".join(info.sass) or "no SASS"
            return (f"no kernel image for sm_{capability[0]}{capability[1]} in"
                    f" {library.parent.name}/{library.name} (it holds {held})")
    return None


def provide(ctx: PatchContext) -> None:
    from sglang_shims import kernels
    from sglang_shims.kernels.standin.provider import Provider, define_torch_ops
    from sglang_shims.kernels.surface.exports import choose_surface, sglang_kernel_pin

    pin = sglang_kernel_pin()
    version = choose_surface(pin)
    implementations = {name: kernels.OPS[name] for name in kernels.OPS}
    implementations["FusedSetKVBufferArg"] = kernels.FusedSetKVBufferArg
    # a property of the GPU, not of the library (sgl_kernel.utils): sglang 0.5.17's Triton
    # attention backend asks it when it is built
    from sglang_shims.kernels.standin.device import is_arch_support_pdl

    implementations["is_arch_support_pdl"] = is_arch_support_pdl
    provider = Provider("sgl_kernel", version, ctx.cause, ctx.manifest.id, implementations,
                        REMEDY)
    provider.build_package(ctx.module)
    finder = provider.install_finder()
    ctx.on_undo("sys.meta_path: sgl_kernel submodule finder",
                lambda: sys.meta_path.remove(finder) if finder in sys.meta_path else None)
    names = set(provider.exports)
    for sub in provider.submodules.values():
        names |= sub
    if "torch" in sys.modules or _importable("torch"):
        defined = define_torch_ops(names)
        ctx.note(f"{len(defined)} sgl_kernel torch ops defined")
    # sglang checks the kernel's distribution version at server start; the stand-in has
    # none, and sglang's own switch for that check is the honest way through it.
    ctx.setenv("SGLANG_SKIP_SGL_KERNEL_VERSION_CHECK", "1")
    detail = _import_error_detail()
    if detail:
        ctx.note(f"why the installed sgl_kernel did not import: {detail}")
    served = sorted(provider.exports & set(implementations))
    ctx.note(f"export surface of sgl-kernel {version} (sglang pins {pin or 'none'});"
             f" implemented: {', '.join(served)}; every other name raises when called")
    # the model sglang loads is judged against what is served (details["models"])
    from sglang_shims.kernels.serving.serving_model import observe_models

    observe_models(ctx)


def _import_error_detail() -> str | None:
    """The lines of the real package's import error that say what failed to load.

    provide() runs inside the engine's handler of that error, and the reason the engine
    records is its first line only -- for sgl-kernel >= 0.4 "Could not load any
    common_ops library!", while the cause ("libcudart.so.12: cannot open shared object
    file", "undefined symbol: ...") is listed further down the same message.
    """
    exc = sys.exc_info()[1]
    if exc is None:
        return None
    lines = [line.strip(" -\t") for line in str(exc).splitlines()[1:]]
    keys = ("Error:", "cannot open shared object", "undefined symbol")
    hits = [line for line in lines if any(key in line for key in keys)]
    return "; ".join(dict.fromkeys(hits))[:800] or None


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None
