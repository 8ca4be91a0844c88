"""Let sglang 0.5.4-0.5.11's DeepGEMM warm-up run on a deep_gemm without compile modes.

``_compile_deep_gemm_one_type_all`` in ``deep_gemm_wrapper/compile_utils.py`` switches
DeepGEMM to compile-only mode around its warm-up::

    old_compile_mode = deep_gemm.get_compile_mode()
    deep_gemm.set_compile_mode(1)
    ...
    deep_gemm.set_compile_mode(old_compile_mode)

deep_gemm builds that lack the pair (2.4.2, shipped in vendor images) stop the server
there with ``AttributeError: module 'deep_gemm' has no attribute 'get_compile_mode'``
(sglang issue 23843).  sglang 0.5.12 checks with ``hasattr`` and skips both calls.  This
patch gives the module a view of deep_gemm whose compile-mode pair only remembers the
value, which is the same: the warm-up compiles and runs each kernel.  Only that module's
``deep_gemm`` name changes; deep_gemm and its other importers see the real module.
"""

from __future__ import annotations

import types
from typing import Any

from sglang_shims.patching import PatchContext

API = ("get_compile_mode", "set_compile_mode")


class CompileModeView(types.ModuleType):
    """``real`` with a compile-mode pair that remembers the mode and changes nothing."""

    def __init__(self, real: types.ModuleType) -> None:
        super().__init__(real.__name__, real.__doc__)
        self.__real = real
        self.__mode = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__real, name)

    def get_compile_mode(self) -> int:
        return self.__mode

    def set_compile_mode(self, mode: int) -> None:
        self.__mode = int(mode)


def apply(ctx: PatchContext) -> None:
    real = vars(ctx.module).get("deep_gemm")
    if not isinstance(real, types.ModuleType):
        ctx.retire("DeepGEMM JIT is off here: the warm-up module did not import deep_gemm")
    if all(hasattr(real, name) for name in API):
        ctx.retire(f"deep_gemm ({getattr(real, '__file__', '?')}) has {' and '.join(API)}")
    ctx.setattr(ctx.module, "deep_gemm", CompileModeView(real))
    missing = [name for name in API if not hasattr(real, name)]
    ctx.note(f"deep_gemm lacks {', '.join(missing)}: the warm-up module sees a view whose "
             "compile-mode pair only remembers the mode (as sglang 0.5.12+ skip the calls)")
