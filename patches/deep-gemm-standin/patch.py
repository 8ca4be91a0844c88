"""Stand in for ``deep_gemm`` where sglang 0.4.4-0.4.6.post4 import it unguarded.

Those releases run ``import deep_gemm`` (and, from 0.4.5.post3, ``from deep_gemm.<sub>
import ...``) at module level whenever CUDA is present, with no ``try``.  DeepGEMM was
never a dependency they declared: it came inside the sgl-kernel wheels of the time.  So
with no kernel, or a kernel that no longer bundles it, ``import sglang.launch_server``
fails although nothing DeepGEMM does is needed to serve a bf16 model.  0.4.6.post5 wraps
the import in ``try/except ImportError`` and then turns its JIT DeepGEMM path off; this
stand-in gives the older releases the same outcome.

The stand-in package has exactly the names those releases bind or call (:data:`SURFACE`,
read from their wheels): each one a lazy placeholder that raises a clear error if it is
ever called.  Any other name or submodule is missing, as with no package at all, so
sglang's own guarded imports (``try: from deep_gemm import ...``) still choose their
fallback.  ``SGL_ENABLE_JIT_DEEPGEMM=0`` is set before sglang reads it, so FP8 block
matmuls take sglang's Triton kernels rather than a placeholder.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType

from sglang_shims.kernels.standin.provider import SubmoduleFinder
from sglang_shims.patching import OptionalSymbol, PatchContext, unavailable

PACKAGE = "deep_gemm"

SURFACE: dict[str, frozenset[str]] = {
    "": frozenset({"gemm_fp8_fp8_bf16_nt", "get_num_sms",
                   "m_grouped_gemm_fp8_fp8_bf16_nt_contiguous",
                   "m_grouped_gemm_fp8_fp8_bf16_nt_masked"}),
    "jit": frozenset(),
    "jit.compiler": frozenset({"get_nvcc_compiler"}),
    "jit.runtime": frozenset({"RuntimeCache"}),
    "jit_kernels": frozenset(),
    "jit_kernels.gemm": frozenset({"get_best_configs", "includes", "template"}),
    "jit_kernels.m_grouped_gemm": frozenset({"template"}),
    "jit_kernels.runtime": frozenset({"FP8GemmRuntime", "GemmType"}),
    "jit_kernels.tuner": frozenset({"jit_tuner"}),
}
"""{submodule ('' for the package): the names sglang 0.4.4-0.4.6.post4 take from it}."""

SWITCH = "SGL_ENABLE_JIT_DEEPGEMM"
"""sglang's own switch for its JIT DeepGEMM path (read right after the import)."""

REMEDY = ("Install the sgl-kernel your sglang pins (its wheels of that time bundled"
          " deep_gemm), or run sglang 0.4.6.post5 or later, which imports without it.")


def unusable(ctx: PatchContext) -> str | None:
    if ctx.target_missing:
        return "deep_gemm is not installed (sgl-kernel bundled it in these releases' time)"
    return None


def provide(ctx: PatchContext) -> None:
    cause, patch_id = ctx.cause, ctx.manifest.id

    def fill(module: ModuleType) -> None:
        name = module.__name__
        module.__path__ = []
        for attr in sorted(SURFACE[name.partition(".")[2]]):
            qualname = f"{name}.{attr}"
            setattr(module, attr, OptionalSymbol(name, attr, patch_id,
                                                 _explain(qualname, cause, patch_id)))

    fill(ctx.module)
    ctx.module.__sglang_shims_standin__ = cause  # type: ignore[attr-defined]
    finder = SubmoduleFinder(PACKAGE, fill, serves=lambda sub: sub in SURFACE)
    sys.meta_path.insert(0, finder)
    ctx.on_undo("sys.meta_path: deep_gemm submodule finder",
                lambda: sys.meta_path.remove(finder) if finder in sys.meta_path else None)
    ctx.setenv(SWITCH, "0")
    ctx.note(f"{SWITCH}=0: FP8 block matmuls take sglang's Triton kernels; every deep_gemm"
             " name sglang binds raises if called")


def _explain(qualname: str, cause: str, patch_id: str) -> Callable[[], str]:
    def text() -> str:
        return unavailable(qualname, cause, REMEDY, patch_id)

    return text
