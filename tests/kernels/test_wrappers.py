"""The kernel families' wrappers (``kernels/ops/<family>/__init__.py``): their own decisions.

The family test files check each op's numbers on shapes chosen for the kernels; these
check what the wrapper decides around the launch, on the smallest tensors that reach each
decision: the argument checks of the op-level entry points (which serving code calls
directly, past the public op's own checks), the copies made for outputs and inputs no row
view fits, ``out=`` handling, and which path runs.  Where the launch's arguments are the
point, it is recorded (``compile_lock.recording``), not run; elsewhere the Triton path runs
under the interpreter on a few rows (a second or so a file on one core).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K
from sglang_shims.kernels import compile_lock
from sglang_shims.kernels.device import MEASURED
from sglang_shims.kernels.ops import activation, norm, rope

from ..support.align import align_buffers, align_reference
from ..support.kernels import triton_skip
from ..support.references import FP8, assert_close, randn, ref_act

triton_skip()  # Triton's interpreter on CPU: before any kernel is defined


# -- activation ------------------------------------------------------------------------


def test_activation_entry_point_refuses_an_odd_or_empty_width() -> None:
    """``act_and_mul_into`` is what serving code calls: it checks the width itself."""
    gen = torch.Generator().manual_seed(1)
    with pytest.raises(ValueError, match="silu_and_mul: the last dimension must be even"):
        activation.act_and_mul_into(torch.empty(2, 3), randn(gen, 2, 7), activation.SILU)
    with pytest.raises(ValueError, match="gelu_and_mul: the last dimension must be even"):
        activation.act_and_mul_into(torch.empty(()), torch.tensor(1.0), activation.GELU)


def test_activation_into_outputs_and_inputs_no_row_view_fits(backend: str) -> None:
    """An ``out`` (or input) whose rows are not unit-stride is written through a copy."""
    gen = torch.Generator().manual_seed(2)
    x = randn(gen, 2 * 8, 3, dtype=torch.float16, device=backend).t()  # column-major [3, 16]
    out = torch.full((8, 3), float("nan"), dtype=torch.float16, device=backend).t()
    activation.act_and_mul_into(out, x, activation.GELU_TANH)
    assert_close(out, ref_act(x, "gelu_tanh"), torch.float16, "column-major in and out")


# -- fp8_gemm --------------------------------------------------------------------------


@pytest.mark.parametrize("m, n", [(0, 128), (2, 0)])
def test_fp8_gemm_empty_products_launch_nothing(m: int, n: int) -> None:
    """An output with no rows or no columns is returned as it is, with no launch (recorded
    for the H200 the rules are measured on, so CPU tensors take the Triton path)."""
    a, b = torch.zeros(m, 128, dtype=FP8), torch.zeros(128, n, dtype=FP8)
    with compile_lock.recording(MEASURED) as launches:
        block = K.fp8_blockwise_scaled_mm(a, b, torch.ones(m, 1), torch.ones(1, -(-n // 128)),
                                          torch.bfloat16)
        scaled = K.fp8_scaled_mm(a, b, torch.ones(1), torch.ones(1), torch.float16)
    assert launches == []
    assert block.shape == scaled.shape == (m, n)
    assert (block.dtype, scaled.dtype) == (torch.bfloat16, torch.float16)


# -- norm ------------------------------------------------------------------------------


def test_norm_refuses_tensors_on_another_device() -> None:
    x = torch.ones(2, 8)
    for weight, out, residual in ((torch.ones(8, device="meta"), x, None),
                                  (torch.ones(8), torch.ones(2, 8, device="meta"), None),
                                  (torch.ones(8), x, torch.ones(2, 8, device="meta"))):
        with pytest.raises(ValueError, match="rmsnorm: tensors on different devices: cpu and "
                                             "meta"):
            norm.norm_into(out, x, residual, weight, 1e-6, 0.0)


# -- moe_gate --------------------------------------------------------------------------


def test_moe_gate_reads_strided_scores_as_they_are(backend: str) -> None:
    """Scores whose columns are not adjacent (every other column of a wider tensor) are
    routed as their contiguous copy is: the kernel reads unit-stride rows only."""
    gen = torch.Generator().manual_seed(3)
    wide = torch.randn(3, 32, generator=gen) * 8  # the columns in between: other scores
    wide[:, ::2] = torch.stack([torch.randperm(16, generator=gen) for _ in range(3)]) / 16.0
    scores, bias = wide.to(backend)[:, ::2], torch.zeros(16, device=backend)
    assert scores.stride(1) == 2
    weights, ids = K.moe_fused_gate(scores, bias, 4, 2, 3)
    want_weights, want_ids = K.moe_fused_gate(scores.contiguous(), bias, 4, 2, 3)
    assert ids.tolist() == want_ids.tolist()
    assert torch.equal(weights, want_weights)


# -- moe_topk --------------------------------------------------------------------------


def test_moe_topk_keeps_the_softmax_unless_asked_to_renormalise() -> None:
    logits = torch.tensor([[0.0, 1.0, 2.0, 3.0]])
    w, ids = torch.empty(1, 2), torch.empty(1, 2, dtype=torch.int32)
    K.topk_softmax(w, ids, logits)
    p = torch.softmax(logits.double(), dim=-1)[0, [3, 2]]
    assert ids.tolist() == [[3, 2]]
    assert w[0].tolist() == pytest.approx(p.tolist(), rel=1e-6)
    K.topk_softmax(w, ids, logits, True)
    assert w[0].tolist() == pytest.approx((p / p.sum()).tolist(), rel=1e-6)


def test_moe_topk_refuses_a_topk_of_zero() -> None:
    with pytest.raises(ValueError, match="num_experts and topk must be greater than 0"):
        K.topk_softmax(torch.empty(2, 0), torch.empty(2, 0, dtype=torch.int32),
                       torch.zeros(2, 4))


# -- rope ------------------------------------------------------------------------------


def test_rope_entry_point_checks_the_value_and_buffers() -> None:
    """``rope_into`` with a value to store: each of its dimensions checked on its own, and
    buffers without a value refused."""
    q, k = torch.zeros(2, 4, 8), torch.zeros(2, 1, 8)
    cache, pos = torch.zeros(16, 8), torch.zeros(2, dtype=torch.int64)
    buffers = torch.zeros(5, 1, 8), torch.zeros(5, 1, 8), torch.zeros(2, dtype=torch.int64)
    for v in (torch.zeros(2, 8), torch.zeros(3, 1, 8), torch.zeros(2, 2, 8)):
        with pytest.raises(ValueError, match=r"apply_rope: v must be \[tokens, k_heads=1"):
            rope.rope_into(q, k, q, k, cache, pos, False, v, *buffers)
    for n in range(3):
        alone = [None, None, None]
        alone[n] = buffers[n]
        with pytest.raises(ValueError, match="k_buffer, v_buffer and kv_cache_loc need v"):
            rope.rope_into(q, k, q, k, cache, pos, False, None, *alone)


def test_rope_partial_rotary_writes_the_tail_of_an_output_of_its_own(backend: str) -> None:
    """With ``rotary_dim < head_size``, an output that is not its input gets the input's
    unrotated tail copied, even where the other output is rotated in place."""
    gen = torch.Generator().manual_seed(4)
    cache = randn(gen, 8, 8, device=backend)
    pos = torch.tensor([5, 0], device=backend)
    q, k = randn(gen, 2, 2, 16, device=backend), randn(gen, 2, 1, 16, device=backend)
    want_q, want_k = torch.empty_like(q), torch.empty_like(k)
    rope.rope_torch(q, k, want_q, want_k, cache, pos, False)
    for in_place in ("q", "k"):
        q_in, k_in = q.clone(), k.clone()
        q_out = q_in if in_place == "q" else torch.full_like(q, float("nan"))
        k_out = k_in if in_place == "k" else torch.full_like(k, float("nan"))
        rope.rope_into(q_in, k_in, q_out, k_out, cache, pos, False)
        assert_close(q_out, want_q, torch.float32, f"q ({in_place} in place)")
        assert_close(k_out, want_k, torch.float32, f"k ({in_place} in place)")


# -- moe_align -------------------------------------------------------------------------


def test_moe_align_leaves_the_padding_unless_asked(backend: str) -> None:
    """``pad_sorted_token_ids`` defaults to off, as in sgl-kernel: the padding slots keep
    what the caller put there."""
    flat = [2, 0, 2, 2, -1, 1]
    buffers = align_buffers(len(flat), 4, 4, backend)
    before = [b.tolist() for b in buffers]
    ids = torch.tensor(flat, dtype=torch.int32, device=backend).view(3, 2)
    K.moe_align_block_size(ids, 4, 4, *buffers)
    want = align_reference(flat, 4, 4, False, False, before)
    assert [b.tolist() for b in buffers] == want
