"""Lazy stand-ins for every kernel name the installed sglang needs and the kernel lacks.

Which names to supply is data, not a range: :mod:`sglang_shims.kernels.surface.symbols` lists,
for every published sglang release, the names it imports from ``sgl_kernel`` at
module level without a fallback.  Comparing that list with what the live module binds
covers both directions of skew -- a kernel older than sglang's pin (``awq_dequantize``
before 0.1.x, issue 5867) and one newer than it (names dropped by the 0.4.0 slimming)
-- with one rule.  A name that is a submodule on disk is left to the import system.

Each missing name is then routed (:mod:`sglang_shims.kernels.serving.hybrid`): an adapter to
the kernel's renamed successor, our Triton implementation, or -- where neither
exists -- a proxy that raises on call.  ``status()[id]["details"]["kernel_ops"]``
says, for every name this sglang imports, which of them serves it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sglang_shims.kernels.serving import hybrid
from sglang_shims.kernels.surface import symbols
from sglang_shims.patching import (
    KERNEL_DISTS,
    OptionalSymbol,
    PatchContext,
    Retired,
    unavailable,
)


def _kernel(ctx: PatchContext) -> tuple[str, str | None]:
    """(how to name the installed kernel, its version)."""
    for dist in KERNEL_DISTS:
        version = ctx.version(dist)
        if version:
            return f"{dist} {version}", version
    return "kernel (no sgl-kernel or sglang-kernel distribution found)", None


def _submodules(module: Any) -> set[str]:
    """Names that ``from sgl_kernel import X`` would load as a submodule file."""
    found: set[str] = set()
    for folder in getattr(module, "__path__", None) or ():
        try:
            entries = [p.name for p in Path(folder).iterdir()]
        except OSError:
            continue
        for entry in entries:
            if entry.endswith((".py", ".so", ".pyd")) or "." not in entry:
                found.add(entry.split(".", 1)[0])
    return found


def explain(name: str, sglang: str, module: str, kernel: str) -> str:
    """The call-time message: what is missing, who needs it, what to install."""
    pin = symbols.pinned(sglang)
    install = (f"sglang {sglang} pins {pin}: pip install '{pin}' (the build matching your"
               " torch)" if pin else
               "install one of those kernel versions (the build matching your torch)")
    return unavailable(f"sgl_kernel.{name}",
                       f"the installed {kernel} does not export it, and sglang {sglang} imports"
                       f" it at module level (first in {module}). Kernel versions that export"
                       f" it: {symbols.exported_by(name)}", f"{install}.",
                       "sgl-kernel-missing-symbols")


def missing(sglang: str, module: Any, kernel: str | None = None) -> dict[str, str] | None:
    """{name: importing module} that need a stand-in; None when the data lacks ``sglang``.

    A name another patch owns for this ``kernel`` (fused_marlin_moe on sgl-kernel
    >= 0.3.18: sgl-kernel-fused-marlin-moe) is left to it, toggle and remedy included.
    """
    needs = symbols.needed(sglang)
    if needs is None:
        return None
    bound = set(vars(module)) | _submodules(module) | set(symbols.deferred(kernel))
    return {name: where for name, where in needs.items() if name not in bound}


def absent_submodules(sglang: str, module: Any) -> dict[str, dict[str, str]]:
    """{submodule: {name: importing module}} that sglang imports unguarded and the kernel
    lacks as a whole (``sparse_flash_attn`` on sglang-kernel >= 0.4.7).  A submodule
    that exists is left to the import system, missing names in it included; one that some
    module of this release imports under a guard is left stock (its fallback)."""
    present = set(vars(module)) | _submodules(module)
    out = {}
    for sub, names in symbols.needed_from_submodules(sglang).items():
        guarded = any(symbols.guarded_in(f"{sub}.{n}", sglang) for n in names)
        if sub.partition(".")[0] not in present and not guarded:
            out[sub] = names
    return out


class _Submodules:
    """A finder for ``sgl_kernel.<sub>`` of the absent submodules only: each is a module of
    lazy stand-ins (any public name where sglang imports the module itself)."""

    def __init__(self, package: str, proxy: Callable[[str, str], OptionalSymbol],
                 absent: dict[str, dict[str, str]]) -> None:
        self.package = package
        self.proxy = proxy
        self.absent = absent

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> Any:
        from importlib.machinery import ModuleSpec

        sub = fullname.partition(".")[2]
        if fullname.partition(".")[0] != self.package or sub not in self.absent:
            return None
        return ModuleSpec(fullname, self)  # type: ignore[arg-type]

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        sub = module.__name__.partition(".")[2]
        names = self.absent[sub]
        for name in names:
            if name != "*":
                setattr(module, name, self.proxy(sub, name))
        if "*" in names:
            def __getattr__(name: str, sub: str = sub) -> Any:
                if name.startswith("_"):
                    raise AttributeError(name)
                return self.proxy(sub, name)

            module.__getattr__ = __getattr__


def serve_submodules(ctx: PatchContext, absent: dict[str, dict[str, str]], sglang: str,
                     kernel: str) -> None:
    """Put a finder for the ``absent`` submodules on ``sys.meta_path`` (undone with the
    patch); each name a lazy stand-in that says what is missing when called."""
    made: dict[str, OptionalSymbol] = {}

    def proxy(sub: str, name: str) -> OptionalSymbol:
        key = f"{sub}.{name}"
        if key not in made:
            where = absent[sub].get(name) or absent[sub].get("*", "")
            made[key] = OptionalSymbol(f"sgl_kernel.{sub}", name, ctx.manifest.id,
                                       lambda: explain(key, sglang, where, kernel))
        return made[key]

    finder = _Submodules("sgl_kernel", proxy, absent)
    sys.meta_path.insert(0, finder)
    ctx.on_undo("sys.meta_path: finder of absent sgl_kernel submodules",
                lambda: sys.meta_path.remove(finder) if finder in sys.meta_path else None)
    ctx.details["absent_submodules"] = {f"sgl_kernel.{sub}": sorted(names)
                                        for sub, names in sorted(absent.items())}
    ctx.note("submodules the installed kernel lacks, served as lazy stand-ins: "
             + ", ".join(f"sgl_kernel.{sub}" for sub in sorted(absent)))


def apply(ctx: PatchContext) -> None:
    sglang = ctx.version("sglang")
    if sglang is None:
        raise Retired("sglang is not installed")
    kernel, kernel_version = _kernel(ctx)
    todo = missing(sglang, ctx.module, kernel_version)
    if todo is None:
        first, last = symbols.load()["releases"][0], symbols.load()["releases"][-1]
        raise Retired(f"no import data for sglang {sglang} (the data covers the published"
                      f" releases {first} to {last})")
    absent = absent_submodules(sglang, ctx.module)
    if not todo and not absent:
        raise Retired(f"the installed {kernel} binds every name sglang {sglang}"
                      " imports from it")
    if absent:
        serve_submodules(ctx, absent, sglang, kernel)
    # what the kernel itself binds (another patch's proxies, fused_marlin_moe's, are not it)
    real = {n for n, v in vars(ctx.module).items() if not isinstance(v, OptionalSymbol)}
    routes = hybrid.plan(todo, real)
    gated: dict[str, OptionalSymbol] = {}
    for name, where in sorted(todo.items()):
        chosen = routes[name]
        if chosen.provider != hybrid.NONE:
            ctx.setattr(ctx.module, name, hybrid.implementation(name, chosen, ctx.module))
            continue

        def message(name: str = name, where: str = where) -> str:
            return explain(name, sglang, where, kernel)

        proxy = OptionalSymbol("sgl_kernel", name, ctx.manifest.id, message)
        if symbols.guarded_in(name, sglang):
            gated[name] = proxy  # its guarded importers keep their own fallback
        else:
            ctx.setattr(ctx.module, name, proxy)
    if gated:
        ctx.setattr(ctx.module, "__getattr__", guarded_lookup(ctx.module, gated, sglang))
        ctx.note("served only to their unguarded importers (sglang's guarded imports still"
                 " see them missing): " + ", ".join(sorted(gated)))
    widened = half_types_to_ours(ctx, hybrid.widened(symbols.needed(sglang) or (), routes,
                                                     real))
    ops = define_torch_ops(ctx, sorted(todo))
    if ops:
        ctx.note(f"sgl_kernel torch ops defined (schema only, for sglang's fake-kernel"
                 f" registrations): {', '.join(ops)}")
    ctx.details["kernel_ops"] = table(sglang, routes, kernel_version, real)
    ctx.details["kernel_ops"].update({name: hybrid.HALF_ONLY_LABEL for name in widened})
    if widened:
        ctx.note(f"float32 calls of {', '.join(widened)} go to ours: the installed {kernel}"
                 " has half-type kernels only for them")
    by = {p: sorted(n for n, r in routes.items() if r.provider == p) for p in hybrid.PROVIDERS}
    ctx.note(f"supplied {len(todo)} name(s) missing from the installed {kernel}: "
             + "; ".join(f"{p}: {', '.join(names)}" for p, names in by.items() if names))
    # the model sglang loads is judged against this table and the live module
    from sglang_shims.kernels.serving.serving_model import observe_models

    observe_models(ctx)


def guarded_lookup(module: Any, gated: dict[str, OptionalSymbol], sglang: str
                   ) -> Callable[[str], Any]:
    """A module ``__getattr__`` that gives a proxy to every importer except the modules that
    import that name under a guard in release ``sglang`` (the data's ``guarded_in``).

    sglang 0.5.9 imports ``scaled_fp4_quant`` unguarded in one module (whose import fails
    without it) and in ``try/except ImportError`` in two others, which then fall back
    (``fp4_quantize = None``).  A bound attribute would reach both; this hook asks who is
    importing (the frame that runs ``from sgl_kernel import ...`` or ``hasattr``) and
    answers the guarded ones as stock Python would.  Any ``__getattr__`` the module had is
    asked for every other name.  ``proxies`` lists what it serves (for ``status()``).
    """
    previous = vars(module).get("__getattr__")
    guards = {name: symbols.guarded_in(name, sglang) for name in gated}

    def __getattr__(name: str) -> Any:
        proxy = gated.get(name)
        if proxy is not None:
            importer = sys._getframe(1).f_globals.get("__name__", "")
            if importer not in guards[name]:
                return proxy
        if previous is not None:
            return previous(name)
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

    __getattr__.proxies = dict(gated)  # type: ignore[attr-defined]
    return __getattr__


def half_types_to_ours(ctx: PatchContext, names: list[str]) -> list[str]:
    """Wrap the kernel's half-only norms (:func:`hybrid.widened` chose them) so that a
    float32 call runs ours; half types still run the real kernel."""
    from sglang_shims.kernels import OPS

    for name in names:
        ctx.setattr(ctx.module, name, hybrid.half_only(getattr(ctx.module, name), OPS[name]))
    return names


def define_torch_ops(ctx: PatchContext, names: list[str]) -> list[str]:
    """``sgl_kernel::<name>`` for each missing function name the kernel does not define.

    sglang (0.5.5 on) registers fake kernels for some ops at import, unconditionally, and
    that fails when the op does not exist.  A schema-only op (no kernel: a call through
    the dispatcher raises) lets the import through; sglang's Python call sites get the
    routed names above.  Only when the kernel already imported torch.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    library: Any = None
    defined = []
    for name in names:
        if not name[0].islower() or hasattr(torch.ops.sgl_kernel, name):
            continue
        if library is None:
            library = torch.library.Library("sgl_kernel", "FRAGMENT")
        library.define(f"{name}(Tensor[] args) -> ()")
        defined.append(name)
    if library is not None:
        _LIBRARIES.append(library)

        def undo() -> None:
            _LIBRARIES.remove(library)
            library._destroy()

        ctx.on_undo("sgl_kernel torch ops: " + ", ".join(defined), undo)
    return defined


_LIBRARIES: list[Any] = []  # a torch Library unregisters its ops when collected


def table(sglang: str, routes: dict[str, hybrid.Route], kernel: str | None,
          bound: set[str]) -> dict[str, str]:
    """{name: provider label} for every name the sglang release imports from the kernel
    (``bound``: what the kernel itself binds)."""
    out = {name: hybrid.REAL for name in symbols.needed(sglang) or ()}
    out.update({name: f"{hybrid.NONE}: patch {pid}"
                for name, pid in symbols.deferred(kernel).items()
                if name in out and name not in bound})
    out.update({name: chosen.label() for name, chosen in routes.items()})
    return dict(sorted(out.items()))
