"""``moe_fused_gate`` (``kernels.ops.moe_gate``), DeepSeek's grouped top-k: exact ids and
float32 weights against a plain-Python float64 reference of sgl-kernel's rules, on data
fp32 cannot reorder; the tie rules by hand; what it refuses."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K

from ..support.kernels import triton_skip
from ..support.references import ref_fused_gate

SEED = 20261201
triton_skip()  # Triton's interpreter on CPU: before any kernel is defined


GATE_CASES = [  # experts, groups, topk_group, topk, shared
    (256, 8, 4, 8, 0), (256, 8, 4, 9, 1), (128, 4, 2, 6, 2), (64, 8, 3, 4, 0), (16, 16, 4, 2, 0)]


def gate_data(experts: int, groups: int, tokens: int, seed: int
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits whose sigmoids are ``(p + 0.5) / E`` and a bias ``q / E + q * d`` (``p``, ``q``
    permutations, ``d = 1 / (2 E^2)``): every biased score and group score then differs from
    the others by at least ~1e-6, far above fp32's rounding, so the order is the same in
    float64 and in the kernel's fp32.  The first seed from ``seed`` that achieves it."""
    per = experts // groups
    for attempt in range(seed, seed + 50):
        gen = torch.Generator().manual_seed(attempt)
        u = (torch.stack([torch.randperm(experts, generator=gen) for _ in range(tokens)])
             .double() + 0.5) / experts
        q = torch.randperm(experts, generator=gen).double()
        bias = q / experts + q / (2 * experts * experts) - 0.5
        biased = u + bias
        tops = biased.view(tokens, groups, per).topk(min(2, per), dim=-1).values.sum(-1)
        gaps = [biased.sort(dim=-1).values.diff(dim=-1).min().item()]
        if per > 1:
            gaps.append(tops.sort(dim=-1).values.diff(dim=-1).min().item())
        if min(gaps) > 1e-6:
            return torch.log(u / (1 - u)), bias
    raise AssertionError("no well-separated test data found")


@pytest.mark.parametrize("case", GATE_CASES, ids=lambda c: "e{}-g{}-kg{}-k{}-s{}".format(*c))
@pytest.mark.parametrize("scale_output", [False, True], ids=["", "scaled"])
def test_moe_fused_gate(backend: str, case: tuple[int, int, int, int, int],
                        scale_output: bool) -> None:
    """Exact ids and float32 weights against the float64 reference, on data where fp32
    cannot reorder anything (:func:`gate_data`)."""
    experts, groups, topk_group, topk, shared = case
    tokens = 9
    x, bias = gate_data(experts, groups, tokens, experts + topk)
    weights, ids = K.moe_fused_gate(x.float().to(backend), bias.float().to(backend), groups,
                                    topk_group, topk, shared, 2.5, scale_output)
    assert weights.dtype == torch.float32 and ids.dtype == torch.int32
    assert tuple(weights.shape) == tuple(ids.shape) == (tokens, topk)
    for row in range(tokens):
        want_w, want_ids = ref_fused_gate(x[row].tolist(), bias.tolist(), groups, topk_group,
                                          topk, shared, 2.5, scale_output)
        assert ids[row].tolist() == want_ids, f"row {row}"
        torch.testing.assert_close(weights[row].double().cpu(), torch.tensor(want_w).double(),
                                   rtol=2e-6, atol=0)


def test_moe_fused_gate_ties(backend: str) -> None:
    """Equal group scores keep the lower groups; equal experts go in index order; with one
    expert per group every group scores -FLT_MAX (no second value), so the lowest
    ``topk_group`` groups are kept whatever their expert's score, as in sgl-kernel."""
    x = torch.zeros(2, 16, device=backend)
    x[1, 13] = 1.0  # group 3 (of 4) now scores highest, and expert 13 comes first
    weights, ids = K.moe_fused_gate(x, torch.zeros(16, device=backend), 4, 2, 3)
    assert ids.tolist() == [[0, 1, 2], [13, 0, 1]]
    assert weights[0].tolist() == pytest.approx([1 / 3] * 3, rel=1e-6)
    _, ids = K.moe_fused_gate(x, torch.zeros(16, device=backend), 16, 2, 2)
    assert ids.tolist() == [[0, 1], [0, 1]]


def test_moe_fused_gate_rejects() -> None:
    x, b = torch.zeros(2, 16), torch.zeros(16)
    with pytest.raises(ValueError, match="cannot form"):
        K.moe_fused_gate(x, b, 3, 1, 2)
    with pytest.raises(ValueError, match="does not fit"):
        K.moe_fused_gate(x, b, 4, 1, 5)
    with pytest.raises(TypeError, match="same floating dtype"):
        K.moe_fused_gate(x, b.double(), 4, 2, 2)
    with pytest.raises(TypeError, match="newer sgl-kernel's argument order"):
        K.moe_fused_gate(x, b, 4, 2, 2, True, "sigmoid")
    with pytest.raises(NotImplementedError, match="scoring_func='softmax'"):
        K.moe_fused_gate(x, b, 4, 2, 2, scoring_func="softmax")
    with pytest.raises(NotImplementedError, match="bias=None"):
        K.moe_fused_gate(x, None, 4, 2, 2)
