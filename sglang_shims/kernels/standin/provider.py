"""Serve the ``sgl_kernel`` package from our kernels when the real one cannot run.

The module object sglang imports as ``sgl_kernel`` is filled here: every name of the
export surface of the kernel release the installed sglang pins exists -- our Triton
implementations where we have them (:data:`sglang_shims.kernels.OPS`), and
for everything else a lazy :class:`~sglang_shims.engine.proxy.OptionalSymbol` that raises a
clear error only if called.  Names outside that surface raise AttributeError, so
sglang's own ``try: from sgl_kernel import X / except ImportError`` fallbacks still
choose their alternative.  Submodules (``sgl_kernel.kvcacheio`` ...) are served the
same way by a finder that only answers for ``sgl_kernel.*``.  The ``sgl_kernel::*``
torch ops are defined too, since sglang >= 0.5.x registers fake kernels for them at
import: real schemas and kernels for the ops we implement, a catch-all schema for the
rest.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

from ...engine.proxy import OptionalSymbol, unavailable
from ..surface import exports


class SubmoduleFinder:
    """Serves ``<package>.<sub>`` for the submodules of the surface; nothing else
    (``serves``: which ``sub`` names it answers for; every one when not given)."""

    def __init__(self, package: str, build: Callable[[ModuleType], None],
                 serves: Callable[[str], bool] | None = None) -> None:
        self.prefix = package + "."
        self.build = build
        self.serves = serves

    def find_spec(self, fullname: str, path: object = None, target: object = None
                  ) -> ModuleSpec | None:
        if not fullname.startswith(self.prefix):
            return None
        if self.serves is not None and not self.serves(fullname[len(self.prefix):]):
            return None
        return ModuleSpec(fullname, self, is_package=True)  # type: ignore[arg-type]

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        self.build(module)


class Provider:
    """Builds the stand-in package and its submodules for one export surface."""

    def __init__(self, package: str, version: str, cause: str, patch_id: str,
                 implementations: dict[str, Any], remedy: str) -> None:
        self.package = package
        self.version = version
        self.cause = cause
        self.patch_id = patch_id
        self.implementations = implementations
        self.remedy = remedy
        self.exports = exports.exported(version, package)
        self.submodules: dict[str, set[str]] = {
            sub: set(exports.names(names))
            for sub, names in (exports.entry(version) or {"submodules": {}})["submodules"]
            .items()}
        self.proxies: dict[str, OptionalSymbol] = {}

    def explain(self, qualname: str) -> Callable[[], str]:
        """The message a stand-in for ``qualname`` raises with, built when it is raised."""

        def text() -> str:
            return unavailable(qualname, f"sgl_kernel is served by sglang-shims' fallback"
                               f" kernels ({self.cause}), which implement only the ops a"
                               " dense bf16/fp16 model, MoE routing and FP8 (activation"
                               " quantisation, per-tensor/channel and 128x128-block scaled"
                               " matmuls) need", self.remedy, self.patch_id)

        return text

    def symbol(self, module_name: str, name: str) -> Any:
        """The one lazy stand-in for ``module_name.name``: it raises only when called."""
        key = f"{module_name}.{name}"
        if key not in self.proxies:
            self.proxies[key] = OptionalSymbol(module_name, name, self.patch_id,
                                               self.explain(key))
        return self.proxies[key]

    def fill(self, module: ModuleType, names: set[str]) -> None:
        """Real implementations bound now; every other surface name on first access."""
        module_name = module.__name__
        for name in sorted(names & set(self.implementations)):
            setattr(module, name, self.implementations[name])

        def lookup(attr: str) -> Any:
            if module_name == self.package and attr in self.submodules:
                # `sgl_kernel.allreduce` as an attribute: the submodule, served by our finder
                import importlib

                return importlib.import_module(f"{self.package}.{attr}")
            if attr in names:
                value = self.symbol(module_name, attr)
                setattr(module, attr, value)
                return value
            raise AttributeError(f"module {module_name!r} has no attribute {attr!r}"
                                 f" (sgl_kernel {self.version} did not export it either)")

        module.__getattr__ = lookup  # type: ignore[method-assign]
        module.__all__ = sorted(names)  # type: ignore[attr-defined]

    def build_package(self, module: ModuleType) -> None:
        """Make ``module`` the stand-in package: its version, the cause, the surface."""
        module.__path__ = []
        module.__version__ = self.version  # type: ignore[attr-defined]
        module.__sglang_shims_fallback__ = self.cause  # type: ignore[attr-defined]
        self.fill(module, self.exports)
        if "common_ops" not in vars(module):
            common_ops = ModuleType(f"{self.package}.common_ops")
            module.common_ops = common_ops  # type: ignore[attr-defined]

    def build_submodule(self, module: ModuleType) -> None:
        """Fill one submodule of the surface (``scalar_type`` gets the real descriptors)."""
        sub = module.__name__[len(self.package) + 1:]
        module.__path__ = []
        if sub == "scalar_type":
            from . import scalar_type

            for name in ("ScalarType", "scalar_types", "NanRepr"):
                setattr(module, name, getattr(scalar_type, name))
            return
        self.fill(module, self.submodules.get(sub, set()))

    def install_finder(self) -> SubmoduleFinder:
        """Put the finder of the surface's submodules first on ``sys.meta_path``; the
        caller removes it when the patch is undone."""
        finder = SubmoduleFinder(self.package, self.build_submodule)
        sys.meta_path.insert(0, finder)
        return finder


#: Ops sglang registers fake kernels for with a plain ``register_fake`` (which raises when
#: the op does not exist) although no kernel release exports a Python name for them:
#: sglang 0.5.5.post2's ``layers/quantization/gptq.py`` does it for
#: ``sgl_kernel::moe_wna16_marlin_gemm`` on CUDA at import (0.5.5.post3 switched to
#: ``register_fake_if_exists``; found by the compatibility matrix).
FAKE_ONLY_OPS = frozenset({"moe_wna16_marlin_gemm"})


def define_torch_ops(names: set[str]) -> list[str]:
    """Real ops for what we implement; a catch-all schema for the rest of the surface
    (and :data:`FAKE_ONLY_OPS`), so that sglang can register its fake kernels.  Returns
    the names defined."""
    import torch

    from .torch_ops import register_torch_ops

    defined = list(register_torch_ops("sgl_kernel"))
    library = torch.library.Library(  # type: ignore[no-untyped-call, unused-ignore]
        "sgl_kernel", "FRAGMENT")
    for name in sorted(names | FAKE_ONLY_OPS):
        if name[0].isupper() or hasattr(torch.ops.sgl_kernel, name):
            continue
        try:
            schema = f"{name}(Tensor[] args) -> ()"
            library.define(schema)  # type: ignore[no-untyped-call, unused-ignore]
            defined.append(name)
        except RuntimeError:
            pass
    _LIBRARIES.append(library)
    return defined


_LIBRARIES: list[Any] = []  # keep the fragment alive for the life of the process
