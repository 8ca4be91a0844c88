"""RoPE with a cos/sin cache (``kernels.ops.rope``) against float64: NeoX and GPT-J
pairs, partial rotary dims, head counts that split over programs, int32 positions, the
out-of-place form and the fused KV-buffer write; ``test_gpu_large_rope`` compiled."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K

from ..support.kernels import gpu_only, triton_skip
from ..support.references import (
    DTYPE_IDS,
    DTYPES,
    assert_close,
    nan_like,
    randn,
    ref_rope,
    rope_inputs,
)

triton_skip()  # Triton's interpreter on CPU: before any kernel is defined


ROPE_CASES = [  # tokens, q heads, k heads, head_size, rotary_dim
    (1, 4, 2, 128, 128),
    (7, 3, 1, 64, 32),  # partial rotary
    (33, 2, 2, 80, 48),  # non-power-of-two head and rotary sizes
    (3, 40, 5, 128, 96),  # heads split over two programs per token
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", ROPE_CASES, ids=lambda c: "t{}-q{}-k{}-d{}-r{}".format(*c))
@pytest.mark.parametrize("neox", [True, False], ids=["neox", "gptj"])
def test_rope(backend: str, gen: torch.Generator, case: tuple[int, int, int, int, int],
              dtype: torch.dtype, neox: bool) -> None:
    tokens, nq, nk, head, rd = case
    q, k, cache, pos = rope_inputs(gen, backend, dtype, tokens, nq, nk, head, rd)
    ref_q, ref_k = ref_rope(q, pos, cache, head, neox), ref_rope(k, pos, cache, head, neox)
    q_before, k_before = q.clone(), k.clone()
    ret = K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, head, cache, is_neox=neox)
    assert ret is None
    assert_close(q, ref_q, dtype, "query")
    assert_close(k, ref_k, dtype, "key")
    if rd < head:  # the unrotated tail of each head is untouched, bit for bit
        tail = (slice(None), slice(None), slice(rd, None))
        assert torch.equal(q.view(tokens, nq, head)[tail], q_before.view(tokens, nq, head)[tail])
        assert torch.equal(k.view(tokens, nk, head)[tail], k_before.view(tokens, nk, head)[tail])


def test_rope_positions_int32_and_3d(backend: str, gen: torch.Generator) -> None:
    q, k, cache, pos = rope_inputs(gen, backend, torch.bfloat16, 5, 2, 1, 64, 64)
    ref_q, ref_k = ref_rope(q, pos, cache, 64, True), ref_rope(k, pos, cache, 64, True)
    q3, k3 = q.clone().view(5, 2, 64), k.clone().view(5, 1, 64)
    K.apply_rope_with_cos_sin_cache_inplace(pos.int(), q3, k3, 64, cache)
    assert_close(q3.reshape(5, -1), ref_q, torch.bfloat16, "query")
    assert_close(k3.reshape(5, -1), ref_k, torch.bfloat16, "key")


@pytest.mark.parametrize("neox", [True, False], ids=["neox", "gptj"])
def test_rope_out_of_place(backend: str, gen: torch.Generator, neox: bool) -> None:
    """The op-level form (sgl-kernel's apply_rope_pos_ids_cos_sin_cache) with separate
    outputs: inputs unchanged, the unrotated tail copied into the outputs."""
    from sglang_shims.kernels.ops.rope import rope_into

    dtype = torch.bfloat16
    q, k, cache, pos = rope_inputs(gen, backend, dtype, 4, 3, 1, 64, 32)
    q3, k3 = q.view(4, 3, 64), k.view(4, 1, 64)
    q_before, k_before = q3.clone(), k3.clone()
    q_out, k_out = nan_like(q3), nan_like(k3)
    rope_into(q3, k3, q_out, k_out, cache, pos, not neox)
    assert torch.equal(q3, q_before) and torch.equal(k3, k_before)
    assert_close(q_out.reshape(4, -1), ref_rope(q, pos, cache, 64, neox), dtype, "q_rope")
    assert_close(k_out.reshape(4, -1), ref_rope(k, pos, cache, 64, neox), dtype, "k_rope")


@pytest.mark.parametrize("neox", [True, False], ids=["neox", "gptj"])
def test_rope_fused_set_kv_buffer(backend: str, gen: torch.Generator, neox: bool) -> None:
    dtype = torch.float16
    tokens, nq, nk, head, rd, slots = 6, 2, 2, 64, 32, 20
    q, k, cache, pos = rope_inputs(gen, backend, dtype, tokens, nq, nk, head, rd)
    v = randn(gen, tokens, nk * head, dtype=dtype, device=backend)
    k_buf = torch.full((slots, nk * head), float("nan"), dtype=dtype, device=backend)
    v_buf = torch.full((slots, nk * head), float("nan"), dtype=dtype, device=backend)
    loc = torch.randperm(slots, generator=gen)[:tokens].to(backend)
    ref_k = ref_rope(k, pos, cache, head, neox)
    arg = K.FusedSetKVBufferArg(value=v, k_buffer=k_buf, v_buffer=v_buf, k_scale=None,
                                v_scale=None, cache_loc=loc)
    K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, head, cache, neox, arg)
    assert_close(k, ref_k, dtype, "key")
    assert_close(k_buf[loc], ref_k, dtype, "k_buffer rows at cache_loc")
    assert torch.equal(v_buf[loc], v), "v_buffer rows at cache_loc must equal value"
    others = torch.ones(slots, dtype=torch.bool, device=backend)
    others[loc] = False
    assert torch.isnan(k_buf[others]).all() and torch.isnan(v_buf[others]).all(), \
        "wrote KV rows outside cache_loc"


def test_rope_rejects(gen: torch.Generator) -> None:
    q, k, cache, pos = rope_inputs(gen, "cpu", torch.float32, 2, 1, 1, 64, 64)
    with pytest.raises(ValueError, match="float32"):
        K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, 64, cache.double())
    v = randn(gen, 2, 64)
    arg = K.FusedSetKVBufferArg(v, torch.empty(4, 64), torch.empty(4, 64), 0.5, None,
                                torch.arange(2))
    with pytest.raises(NotImplementedError, match="k_scale"):
        K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, 64, cache, True, arg)
    arg = K.FusedSetKVBufferArg(v, torch.empty(4, 64), torch.empty(4, 64), None, None,
                                torch.arange(2, dtype=torch.int32))
    with pytest.raises(ValueError, match="int64"):
        K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, 64, cache, True, arg)
    with pytest.raises(ValueError, match="rotary_dim"):
        K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, 32, cache)


@gpu_only
@pytest.mark.parametrize("neox", [True, False], ids=["neox", "gptj"])
def test_gpu_large_rope(gen: torch.Generator, neox: bool) -> None:
    dtype = torch.bfloat16
    q, k, cache, pos = rope_inputs(gen, "cuda", dtype, 4096, 32, 8, 128, 128, 8192)
    rq, rk = ref_rope(q, pos, cache, 128, neox), ref_rope(k, pos, cache, 128, neox)
    K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, 128, cache, neox)
    assert_close(q, rq, dtype, "query")
    assert_close(k, rk, dtype, "key")
