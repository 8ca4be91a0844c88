"""``topk_softmax`` (``kernels.ops.moe_topk``) against float64 probabilities: plain and
renormalised weights, soft-capping and a correction bias, the early four-argument form,
and the tie rule (lower expert index first); ``test_gpu_large_topk`` compiled."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K

from ..support.kernels import gpu_only, triton_skip
from ..support.references import DTYPE_IDS, DTYPES, check_topk, randn, ref_topk

triton_skip()  # Triton's interpreter on CPU: before any kernel is defined


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(("tokens", "experts", "k"), [(1, 128, 8), (7, 60, 2), (33, 8, 1)],
                         ids=["t1-e128-k8", "t7-e60-k2", "t33-e8-k1"])
@pytest.mark.parametrize("renormalize", [False, True], ids=["plain", "renorm"])
def test_topk_softmax(backend: str, gen: torch.Generator, dtype: torch.dtype, tokens: int,
                      experts: int, k: int, renormalize: bool) -> None:
    logits = randn(gen, tokens, experts, dtype=dtype, device=backend, scale=2.0)
    w = torch.full((tokens, k), float("nan"), device=backend)
    ids = torch.full((tokens, k), -1, dtype=torch.int32, device=backend)
    assert K.topk_softmax(w, ids, logits, renormalize) is None
    assert ids.dtype == torch.int32
    p, ref_w = ref_topk(logits.cpu(), k, renormalize)
    check_topk(w, ids, p, ref_w, renormalize)


def test_topk_softmax_softcap_and_bias(backend: str, gen: torch.Generator) -> None:
    """sgl-kernel 0.3.18's extra arguments: tanh soft-capping, then a per-expert bias."""
    tokens, experts, k = 9, 64, 6
    logits = randn(gen, tokens, experts, dtype=torch.bfloat16, device=backend, scale=20.0)
    bias = randn(gen, experts, device=backend, scale=0.5)
    w = torch.full((tokens, k), float("nan"), device=backend)
    ids = torch.full((tokens, k), -1, dtype=torch.int32, device=backend)
    K.topk_softmax(w, ids, logits, renormalize=True, moe_softcapping=30.0,
                   correction_bias=bias)
    p, ref_w = ref_topk(logits.cpu(), k, True, softcap=30.0, bias=bias.cpu())
    check_topk(w, ids, p, ref_w, True)
    with pytest.raises(ValueError, match="correction_bias"):
        K.topk_softmax(w, ids, logits, True, 0.0, bias.half())


def test_topk_softmax_legacy_form(backend: str, gen: torch.Generator) -> None:
    """Early sgl-kernel: (weights, ids, token_expert_indices, gating_output)."""
    tokens, experts, k = 5, 16, 3
    logits = randn(gen, tokens, experts, device=backend)
    w = torch.full((tokens, k), float("nan"), device=backend)
    ids = torch.full((tokens, k), -1, dtype=torch.int32, device=backend)
    tei = torch.full((tokens, k), -1, dtype=torch.int32, device=backend)
    K.topk_softmax(w, ids, tei, logits)
    p, ref_w = ref_topk(logits.cpu(), k, False)
    check_topk(w, ids, p, ref_w, False)
    expect = torch.arange(k)[None, :] * tokens + torch.arange(tokens)[:, None]
    assert torch.equal(tei.long().cpu(), expect)


def test_topk_ties(backend: str) -> None:
    """Equal probabilities: lower expert index first (sgl-kernel's rule)."""
    logits = torch.full((3, 16), 0.5, device=backend)
    logits[1, [3, 9, 12]] = 2.0  # a three-way tie at the top, then 13 equal ones
    w = torch.full((3, 4), float("nan"), device=backend)
    ids = torch.full((3, 4), -1, dtype=torch.int32, device=backend)
    K.topk_softmax(w, ids, logits, False)
    assert ids[0].tolist() == [0, 1, 2, 3]
    assert ids[1].tolist() == [3, 9, 12, 0]
    assert torch.allclose(w[0].cpu(), torch.full((4,), 1 / 16))


def test_topk_rejects(gen: torch.Generator) -> None:
    w = torch.empty(2, 3)
    ids = torch.empty(2, 3, dtype=torch.int32)
    with pytest.raises(TypeError, match="gating_output"):
        K.topk_softmax(w, ids, torch.zeros(2, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="less than or equal"):
        K.topk_softmax(w, ids, randn(gen, 2, 2))
    with pytest.raises(TypeError, match="topk_ids"):
        K.topk_softmax(w, ids.short(), randn(gen, 2, 8))
    K.topk_softmax(torch.empty(0, 3), torch.empty(0, 3, dtype=torch.int32), randn(gen, 0, 8))


@gpu_only
def test_gpu_large_topk(gen: torch.Generator) -> None:
    logits = randn(gen, 16384, 128, dtype=torch.bfloat16, device="cuda")
    w = torch.full((16384, 8), float("nan"), device="cuda")
    ids = torch.full((16384, 8), -1, dtype=torch.int32, device="cuda")
    K.topk_softmax(w, ids, logits, True)
    p, ref_w = ref_topk(logits.cpu(), 8, True)
    check_topk(w.cpu(), ids.cpu(), p, ref_w, True)
