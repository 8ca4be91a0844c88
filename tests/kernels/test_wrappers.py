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
from sglang_shims.kernels.ops.fp8_gemm import launch as mm_launch
from sglang_shims.kernels.ops.moe_align import launch as align_launch
from sglang_shims.kernels.ops.moe_topk import launch as topk_launch

from ..support.align import align_buffers, align_reference
from ..support.kernels import triton_skip
from ..support.references import (
    FP8,
    assert_close,
    assert_matmul,
    fp8_operand,
    randn,
    ref_act,
    ref_fused_gate,
)

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


def test_activation_public_ops_take_any_rank_and_refuse_a_scalar() -> None:
    gen = torch.Generator().manual_seed(5)
    x = randn(gen, 8)
    assert_close(K.silu_and_mul(x), ref_act(x, "silu"), torch.float32, "1-D")
    one = randn(gen, 1, 2)
    assert_close(K.gelu_and_mul(one), ref_act(one, "gelu"), torch.float32, "one value")
    with pytest.raises(ValueError, match="gelu_tanh_and_mul: the last dimension must be even"):
        K.gelu_tanh_and_mul(torch.tensor(1.0))


def test_activation_launches_on_the_callers_rows_with_16_byte_vectors() -> None:
    """Rows a 2-D view fits are launched as they are (no copy, no output staging), with
    the widest vector their width and strides allow; nothing is launched for no rows."""
    x = torch.zeros(3, 200, dtype=torch.bfloat16)[:, :128]  # rows 200 apart
    out = torch.empty(3, 64, dtype=torch.bfloat16)
    with compile_lock.recording(MEASURED) as launches:
        activation.act_and_mul_into(out, x, activation.SILU)
        activation.act_and_mul_into(out[:0], x[:0], activation.SILU)
    (launch,) = launches
    assert launch.args[0].data_ptr() == x.data_ptr() and launch.args[1] is out
    assert launch.kwargs["ALIGN"] == 8  # 16 bytes of bf16
    assert launch.args[2:5] == (64 // 8, 200 // 8, 64 // 8)
    odd = torch.zeros(3, 2 * 64 + 1, dtype=torch.bfloat16)[:, :128]  # rows 129 apart
    with compile_lock.recording(MEASURED) as launches:
        activation.act_and_mul_into(out, odd, activation.SILU)
    assert launches[0].kwargs["ALIGN"] == 1


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


def test_fp8_gemm_two_scales_are_one_per_row_or_column(backend: str) -> None:
    """Two rows (columns) with two scales: each row (column) its own, not one for all."""
    gen = torch.Generator().manual_seed(6)
    a = fp8_operand(gen, 2, 32, backend)
    b = fp8_operand(gen, 2, 32, backend).t()
    sa, sb = torch.tensor([[0.5], [3.0]]), torch.tensor([0.25, 2.0])
    out = K.fp8_scaled_mm(a, b, sa.to(backend), sb.to(backend), torch.float32)
    scale = sa.double() * sb.double()[None, :]
    ad, bd = a.double().cpu(), b.double().cpu()
    assert_matmul(out, (ad @ bd) * scale, (ad.abs() @ bd.abs()) * scale, torch.float32)


def test_fp8_gemm_refuses_a_scale_matrix() -> None:
    """A 2-D scale is a row or column of scales ([n, 1] or [1, n]), never a matrix of as
    many values."""
    a, b = torch.zeros(2, 32, dtype=FP8), torch.zeros(32, 4, dtype=FP8)
    with pytest.raises(ValueError, match="scales_b must be float32 with 4 elements"):
        K.fp8_scaled_mm(a, b, torch.ones(2), torch.ones(2, 2), torch.float16)
    assert K.fp8_scaled_mm(a, b, torch.ones(2), torch.ones(1, 4), torch.float16).shape == (2, 4)


def test_fp8_gemm_block_scaled_keeps_the_prefill_tiles_for_few_rows() -> None:
    """The decode tiles were swept for ``fp8_scaled_mm`` only; the block-scaled kernel,
    which steps K by its 128-wide scale blocks, keeps the prefill tiles at any row count."""
    a, b = torch.zeros(1, 256, dtype=FP8), torch.zeros(256, 256, dtype=FP8)
    with compile_lock.recording(MEASURED) as launches:
        K.fp8_blockwise_scaled_mm(a, b, torch.ones(1, 2), torch.ones(2, 2), torch.bfloat16)
    want = mm_launch.config(1, 256, decode_tiles=False, dev=MEASURED)
    assert want != mm_launch.config(1, 256, decode_tiles=True, dev=MEASURED)
    (launch,) = launches
    assert {knob: launch.kwargs[knob] for knob in want if knob != "BLOCK_K"} \
        == {knob: v for knob, v in want.items() if knob != "BLOCK_K"}


# -- fp8_quant -------------------------------------------------------------------------


def test_fp8_quant_checks_each_argument_on_its_own() -> None:
    x, q, s = torch.ones(2, 128), torch.empty(2, 128, dtype=FP8), torch.empty(2)
    with pytest.raises(ValueError, match="sgl_per_token_quant_fp8: input must be 2-D"):
        K.sgl_per_token_quant_fp8(x.view(2, 2, 64), q.view(2, 2, 64), s)
    for scales in (torch.empty(2, dtype=torch.float64), torch.empty(3)):
        with pytest.raises(ValueError, match="output_s must be float32 with 2 elements"):
            K.sgl_per_token_quant_fp8(x, q, scales)
    for lo, hi in ((-448.0, 240.0), (-240.0, 448.0)):
        with pytest.raises(ValueError, match="fp8_min/fp8_max must be -448/448"):
            K.sgl_per_token_group_quant_fp8(x, q, torch.empty(2, 1), 128, 1e-10, lo, hi)


def test_fp8_quant_one_value_groups_and_one_value_tensors(backend: str) -> None:
    """A group of one value is its own scale; a tensor of one value (or none) is
    quantised like any other."""
    x = torch.tensor([[3.0, -0.5]], device=backend)
    q, s = torch.empty(1, 2, dtype=FP8, device=backend), torch.empty(1, 2, device=backend)
    K.sgl_per_token_group_quant_fp8(x, q, s, 1, 1e-10, -448.0, 448.0)
    assert q.float().tolist() == [[448.0, -448.0]]
    assert s[0].tolist() == pytest.approx([3.0 / 448, 0.5 / 448])
    one, scale = torch.tensor([-7.0], device=backend), torch.zeros(1, device=backend)
    one_q = torch.zeros(1, dtype=FP8, device=backend)
    K.sgl_per_tensor_quant_fp8(one, one_q, scale, False)
    assert one_q.float().tolist() == [-448.0]
    assert scale.tolist() == pytest.approx([7.0 / 448])
    K.sgl_per_tensor_quant_fp8(one[:0], one_q[:0], scale, False)  # nothing to do


def test_fp8_quant_per_token_launches_16_byte_vectors() -> None:
    x, q, scales = torch.zeros(2, 128, dtype=torch.bfloat16), torch.empty(2, 128, dtype=FP8), \
        torch.empty(2)
    with compile_lock.recording(MEASURED) as launches:
        K.sgl_per_token_quant_fp8(x, q, scales)
    assert launches[0].kwargs["ALIGN"] == 16  # 16 bytes of e4m3


# -- norm ------------------------------------------------------------------------------


def test_norm_refuses_tensors_on_another_device() -> None:
    x = torch.ones(2, 8)
    for weight, out, residual in ((torch.ones(8, device="meta"), x, None),
                                  (torch.ones(8), torch.ones(2, 8, device="meta"), None),
                                  (torch.ones(8), x, torch.ones(2, 8, device="meta"))):
        with pytest.raises(ValueError, match="rmsnorm: tensors on different devices: cpu and "
                                             "meta"):
            norm.norm_into(out, x, residual, weight, 1e-6, 0.0)


def test_norm_takes_one_row_and_refuses_a_scalar() -> None:
    x, w = torch.tensor([3.0, 4.0]), torch.tensor([1.0, 2.0])
    assert K.rmsnorm(x, w, eps=0.0).tolist() == pytest.approx([3 / 12.5**0.5, 8 / 12.5**0.5])
    with pytest.raises(ValueError, match="rmsnorm: input must have at least one dimension"):
        K.rmsnorm(torch.tensor(1.0), w)


def test_norm_strided_weight_and_an_output_no_row_view_fits(backend: str) -> None:
    """A weight of stride 2 is read as the values it holds; an ``out`` whose rows are not
    unit-stride is written through a copy."""
    gen = torch.Generator().manual_seed(8)
    x = randn(gen, 3, 16, device=backend)
    w = randn(gen, 32, device=backend)[::2]
    want = K.rmsnorm(x, w.contiguous())
    assert_close(K.rmsnorm(x, w), want, torch.float32, "strided weight")
    out = torch.full((16, 3), float("nan"), device=backend).t()
    K.rmsnorm(x, w, out=out)
    assert_close(out, want, torch.float32, "column-major out")


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


def test_moe_gate_checks_input_and_bias_on_their_own() -> None:
    for x, bias in ((torch.zeros(2, 2, 8), torch.zeros(2, 8)), (torch.zeros(2, 8),
                                                                 torch.zeros(9))):
        with pytest.raises(ValueError, match=r"input must be \[tokens, experts\] and bias"):
            K.moe_fused_gate(x, bias, 2, 1, 2)


def test_moe_gate_one_group_and_groups_of_two(backend: str) -> None:
    """One group is a plain top-k; groups of two experts score by both (their sum)."""
    x = torch.tensor([[0.1, 0.9, 0.3, 0.2, 0.8, 0.05, 0.7, 0.6]], device=backend)
    bias = torch.zeros(8, device=backend)
    for groups, topk_group, topk in ((1, 1, 3), (4, 2, 3)):
        weights, ids = K.moe_fused_gate(x, bias, groups, topk_group, topk)
        want_w, want_ids = ref_fused_gate(x[0].tolist(), bias.tolist(), groups, topk_group,
                                          topk, 0, 1.0, False)
        assert ids[0].tolist() == want_ids, groups
        assert weights[0].tolist() == pytest.approx(want_w, rel=1e-6)


def test_moe_gate_ties_among_many_groups_keep_the_lowest(backend: str) -> None:
    """With one expert per group every group ties (no second value): the lowest
    ``topk_group`` groups are kept, also among 64 groups, where an unstable sort of the
    group scores would keep others."""
    x = torch.zeros(2, 64, device=backend)
    x[1, 40] = 5.0
    _, ids = K.moe_fused_gate(x, torch.zeros(64, device=backend), 64, 4, 4)
    assert ids.tolist() == [[0, 1, 2, 3], [0, 1, 2, 3]]


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


def test_moe_topk_checks_each_argument_on_its_own() -> None:
    w, ids, logits = torch.empty(2, 3), torch.empty(2, 3, dtype=torch.int32), torch.zeros(2, 8)
    for bad in ((w[0], ids, logits), (w, ids[0], logits), (w, ids, logits[0])):
        with pytest.raises(ValueError, match="must be 2-D"):
            K.topk_softmax(*bad)
    for bad in ((w[:1], ids, logits), (w, ids[:1], logits)):
        with pytest.raises(ValueError, match="first dimension of topk_weights/topk_ids"):
            K.topk_softmax(*bad)
    with pytest.raises(ValueError, match="token_expert_indices must have topk_ids' shape"):
        K.topk_softmax(w, ids, torch.empty(2, 2, dtype=torch.int32), logits)


def test_moe_topk_takes_a_numpy_flag_as_a_flag() -> None:
    """Only a tensor (``dim`` and ``dtype``) in the fourth place means the early form; a
    NumPy bool (a ``dtype``, no ``dim``) is ``renormalize``."""
    numpy = pytest.importorskip("numpy")
    logits = torch.tensor([[0.0, 1.0, 2.0, 3.0]])
    w, ids = torch.empty(1, 2), torch.empty(1, 2, dtype=torch.int32)
    K.topk_softmax(w, ids, logits, numpy.bool_(True))
    assert w.sum().item() == pytest.approx(1.0)


def test_moe_topk_launches_up_to_its_expert_limit() -> None:
    """The kernel for up to ``MAX_EXPERTS`` experts and some tokens; torch above it (the
    answer still right), nothing for no tokens."""
    limit = topk_launch.MAX_EXPERTS
    w, ids = torch.empty(1, 2), torch.empty(1, 2, dtype=torch.int32)
    wide = torch.zeros(1, limit + 1)
    wide[0, [limit, 7]] = torch.tensor([2.0, 1.0])
    with compile_lock.recording(MEASURED) as launches:
        K.topk_softmax(w, ids, torch.zeros(1, limit))
        K.topk_softmax(w[:0], ids[:0], torch.zeros(0, 8))
        K.topk_softmax(w, ids, wide)
    assert len(launches) == 1
    assert ids.tolist() == [[limit, 7]]


def test_moe_topk_writes_strided_outputs(backend: str) -> None:
    """Weights, ids and the early form's indices with columns 2 apart (every other column
    of a wider tensor) get what contiguous ones get."""
    gen = torch.Generator().manual_seed(7)
    logits = randn(gen, 3, 8, device=backend)
    want_w, want_ids = torch.empty(3, 2, device=backend), torch.empty(3, 2, dtype=torch.int32,
                                                                       device=backend)
    want_tei = torch.empty_like(want_ids)
    K.topk_softmax(want_w, want_ids, want_tei, logits)

    def strided(like: torch.Tensor) -> torch.Tensor:
        return torch.full((3, 4), -7, dtype=like.dtype, device=backend)[:, ::2]

    w, ids, tei = strided(want_w), strided(want_ids), strided(want_tei)
    assert w.stride(1) == ids.stride(1) == tei.stride(1) == 2
    K.topk_softmax(w, ids, tei, logits)
    assert torch.equal(w, want_w) and torch.equal(ids, want_ids)
    assert torch.equal(tei, want_tei)
    contiguous_w = torch.empty_like(want_w)
    K.topk_softmax(contiguous_w, strided(want_ids), torch.empty_like(want_tei), logits)
    assert torch.equal(contiguous_w, want_w)


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


def test_rope_entry_point_checks_q_and_k() -> None:
    q, k = torch.zeros(2, 4, 8), torch.zeros(2, 1, 8)
    cache, pos = torch.zeros(16, 8), torch.zeros(2, dtype=torch.int64)
    for bad_q, bad_k in ((q[0], k), (q, k[0])):
        with pytest.raises(ValueError, match=r"q and k must be \[tokens, heads, head_size\]"):
            rope.rope_into(bad_q, bad_k, bad_q, bad_k, cache, pos, False)
    for bad_k in (torch.zeros(3, 1, 8), torch.zeros(2, 1, 16)):
        with pytest.raises(ValueError, match=r"apply_rope: q \(2, 4, 8\) and k .* disagree"):
            rope.rope_into(q, bad_k, q, bad_k, cache, pos, False)


def test_rope_refuses_positions_that_are_not_integers() -> None:
    q, k, cache = torch.zeros(2, 4, 8), torch.zeros(2, 1, 8), torch.zeros(16, 8)
    for pos in (torch.zeros(2), torch.zeros(2, dtype=torch.complex64)):
        with pytest.raises(ValueError, match="positions must be integers"):
            rope.rope_into(q, k, q, k, cache, pos, False)


def test_rope_refuses_a_strided_head_and_reads_a_strided_cache(backend: str) -> None:
    gen = torch.Generator().manual_seed(9)
    q, k = randn(gen, 2, 2, 8, device=backend), randn(gen, 2, 1, 8, device=backend)
    pos = torch.tensor([3, 1], device=backend)
    cache = randn(gen, 4, 16, device=backend)[:, ::2]
    strided = randn(gen, 2, 2, 16, device=backend)[..., ::2]
    with pytest.raises(ValueError, match="the last dimension of q, k and outputs must be"):
        rope.rope_into(strided, k, strided, k, cache, pos, False)
    want_q, want_k = torch.empty_like(q), torch.empty_like(k)
    rope.rope_into(q, k, want_q, want_k, cache.contiguous(), pos, False)
    got_q, got_k = torch.empty_like(q), torch.empty_like(k)
    rope.rope_into(q, k, got_q, got_k, cache, pos, False)
    assert torch.equal(got_q, want_q) and torch.equal(got_k, want_k)


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


def test_moe_align_launches_up_to_its_bucket_limit() -> None:
    """The kernels for up to ``MAX_BUCKETS`` buckets; torch above it (the answer still
    right)."""
    flat = [2, 0, 2, 2, -1, 1]
    ids = torch.tensor(flat, dtype=torch.int32)
    for buckets, launched in ((8, True), (align_launch.MAX_BUCKETS + 1, False)):
        buffers = align_buffers(len(flat), buckets, 4, "cpu")
        before = [b.tolist() for b in buffers]
        with compile_lock.recording(MEASURED) as launches:
            K.moe_align_block_size(ids, buckets, 4, *buffers, True)
        assert bool(launches) == launched, buckets
        if not launched:
            want = align_reference(flat, buckets, 4, True, False, before)
            assert [b.tolist() for b in buffers] == want


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


def test_moe_align_refuses_no_buckets_or_no_block() -> None:
    ids = torch.zeros(2, 2, dtype=torch.int32)
    for buckets, block in ((0, 4), (4, 0)):
        buffers = align_buffers(4, max(buckets, 1), max(block, 1), "cpu")
        with pytest.raises(ValueError, match="num_experts and block_size must be positive"):
            K.moe_align_block_size(ids, buckets, block, *buffers)


def test_moe_sum_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="moe_sum: input must be float16, bfloat16 or float32"):
        K.moe_sum(torch.zeros(2, 3, 8, dtype=torch.float64), torch.zeros(2, 8))
    for x, out in ((torch.zeros(2, 8), torch.zeros(2, 8)),
                   (torch.zeros(2, 3, 8), torch.zeros(2, 1, 8))):
        with pytest.raises(ValueError, match=r"moe_sum: input must be \[tokens, topk, hidden\]"):
            K.moe_sum(x, out)


def test_moe_sum_strided_hidden_and_one_value(backend: str) -> None:
    """An input whose hidden values are 2 apart and an output whose columns are 2 apart
    are read and written as they are; one token of one value is summed too."""
    gen = torch.Generator().manual_seed(10)
    x = randn(gen, 3, 2, 16, device=backend)[..., ::2]
    out = torch.full((3, 16), float("nan"), device=backend)[:, ::2]
    K.moe_sum_reduce(x, out, 0.5)
    assert_close(out, x.double().sum(dim=1) * 0.5, torch.float32, "strided hidden")
    one, one_out = randn(gen, 1, 3, 1, device=backend), torch.full((1, 1), float("nan"),
                                                                     device=backend)
    K.moe_sum(one, one_out)
    assert_close(one_out, one.double().sum(dim=1), torch.float32, "one value")
