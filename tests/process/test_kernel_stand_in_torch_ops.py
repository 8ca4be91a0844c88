"""The kernel stand-in in a fresh interpreter: what it registers with torch is global to the
process.  How a ``when = "instead"`` patch stands in for its target is checked in-process,
in ``tests/unit/test_stand_in.py``."""

from __future__ import annotations

import pytest

from ..support.run import run_python


def test_ops_sglang_fakes_without_an_export_are_defined() -> None:
    """sglang 0.5.5.post2 registers a fake for ``sgl_kernel::moe_wna16_marlin_gemm`` with a
    plain register_fake at import (its gptq.py); no kernel exports that name, so the
    stand-in defines the op from FAKE_ONLY_OPS, or 13 of 21 serving modules fail."""
    pytest.importorskip("torch")
    result = run_python("""
        import torch
        from sglang_shims.kernels.standin.provider import define_torch_ops
        defined = define_torch_ops(set())
        @torch.library.register_fake("sgl_kernel::moe_wna16_marlin_gemm")
        def _(*args):
            return None
        print("moe_wna16_marlin_gemm" in defined)
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["True"]
