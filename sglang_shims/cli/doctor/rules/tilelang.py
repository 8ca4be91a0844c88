"""Rules on tilelang, the kernel DSL of sglang's DeepSeek V3.2 (DSA) and mHC kernels."""

from __future__ import annotations

from ..facts import Facts
from ..finding import Finding, Level
from ._common import Rule, unless_patched, verdict


def _fast_math_key(facts: Facts) -> Finding | None:
    sglang, tilelang = facts.version("sglang"), facts.version("tilelang")
    unpatched = verdict(
        Level.FAIL, f"sglang {sglang}'s nsa/tilelang_kernel.py builds its pass options with "
        f"tilelang.PassConfigKey.TL_DISABLE_FAST_MATH, which tilelang {tilelang} no longer "
        "has: DeepSeek V3.2 fails to start with AttributeError ('TL_DISABLE_FAST_MATH')",
        "pip install 'tilelang==0.1.7' (the last release with the name), or upgrade sglang to "
        ">= 0.5.9")
    return unless_patched(facts, "tilelang-fast-math-key-removed", unpatched,
                          "puts the name back as the option tilelang still registers")


def _gemm_wg_wait(facts: Facts) -> Finding | None:
    sglang, tilelang = facts.version("sglang"), facts.version("tilelang")
    return verdict(
        Level.WARN, f"sglang {sglang}'s DeepSeek V3.2 sparse-attention kernels (and, from "
        "0.5.12, the mHC kernels) call T.gemm(..., wg_wait=...), which tilelang "
        f"{tilelang} removed (tilelang PR 1949 moved asynchronous WGMMA to T.wgmma_gemm): "
        "building them fails with \"TypeError: gemm() got an unexpected keyword argument "
        "'wg_wait'\". Not shimmed: the mechanical rewrite to T.wgmma_gemm fails tilelang's "
        "layout inference for these decode kernels. Models without DSA or mHC are unaffected",
        "pip install 'tilelang==0.1.8' (the pin of sglang 0.5.12-0.5.14, and the last release "
        "with wg_wait), or upgrade sglang to >= 0.5.15")


RULES: tuple[Rule, ...] = (
    Rule("tilelang-gemm-wg-wait-removed", "https://github.com/tile-ai/TileOPs/issues/1423",
         "sglang's DSA/mHC kernels pass T.gemm(wg_wait=...)", _gemm_wg_wait,
         when=(("sglang", ">=0.5.3rc2,<0.5.15"), ("tilelang", ">=0.1.9"))),
    Rule("tilelang-fast-math-key-removed", "https://github.com/sgl-project/sglang/issues/17298",
         "", _fast_math_key, patch="tilelang-fast-math-key-removed"),
)
