"""benchmarks/kernels.py's AOT column times the real kernel only, never our own code.

With the shims active the hybrid tier binds our implementations (and adapters) onto the
real ``sgl_kernel`` under the names a newer kernel dropped; the benchmark must see those
names as missing, or it would report us against ourselves as "AOT".  Also its option
types that are more than a number."""

from __future__ import annotations

import types

import pytest

from ..support.scripts import load_script

pytest.importorskip("torch")


def _bench() -> types.ModuleType:
    return load_script("benchmarks/kernels.py", "bench_kernels")


def test_names_bound_by_the_shims_read_as_missing() -> None:
    from sglang_shims import kernels as ours

    bench = _bench()
    real = types.ModuleType("sgl_kernel")

    def rmsnorm() -> None:
        """Stands for the kernel's own op."""
    rmsnorm.__module__ = "sgl_kernel.elementwise"
    real.rmsnorm = rmsnorm  # type: ignore[attr-defined]
    real.apply_rope_with_cos_sin_cache_inplace = (  # type: ignore[attr-defined]
        ours.apply_rope_with_cos_sin_cache_inplace)
    real.rotary_embedding = rmsnorm  # type: ignore[attr-defined]
    only = bench.KernelOnly(real)
    assert only.rmsnorm is rmsnorm
    assert not hasattr(only, "apply_rope_with_cos_sin_cache_inplace")
    assert only.rotary_embedding is rmsnorm  # the successor the RoPE row then times
    assert not hasattr(only, "moe_fused_gate")


def test_the_aot_activations_are_not_called_where_they_fault() -> None:
    """A fault ends the process's CUDA context and every row after it (the 2026-12-05 run
    lost its activation table at width 4100): the benchmark names those widths instead."""
    bench = _bench()
    assert "misaligned" in bench.act_aot_fault(4100, 2)
    assert "misaligned" in bench.act_aot_fault(4099, 4)
    for d in (1000, 3000, 4096, 5000, 11000, 14336):
        assert bench.act_aot_fault(d, 2) == "", d


def test_decode_tiles_option_takes_powers_of_two() -> None:
    """``--fp8-decode-tiles``: ``MxN`` with both powers of two of at least 16; anything else
    is a usage error naming the value, not a traceback."""
    import argparse

    bench = _bench()
    assert bench._tiles("16x64") == (16, 64) and bench._tiles("32X32") == (32, 32)
    for bad in ("16", "16x", "12x64", "16x8", "axb"):
        with pytest.raises(argparse.ArgumentTypeError, match=repr(bad)):
            bench._tiles(bad)
