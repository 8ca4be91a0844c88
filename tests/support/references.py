"""Float64 references, tolerances and inputs for the kernel tests.

Every op is checked against a float64 reference written here in plain torch, on fresh
seeded ``torch.randn`` inputs, with outputs filled with NaN first (so an element the kernel
never writes fails).

Tolerances (:func:`assert_close`): ``|actual - ref| <= atol + rtol * |ref|``, elementwise,
where ``ref`` is the float64 result from the same (already rounded) inputs.  ``rtol`` is
about twice the worst rounding of one store in that dtype; the kernels compute in fp32, so
their error is that final rounding plus fp32 noise.

| output dtype | rtol          | atol |
|--------------|---------------|------|
| float32      | 1e-5          | 1e-6 |
| float16      | 2**-9 (~2e-3) | 1e-5 |
| bfloat16     | 2**-7 (~8e-3) | 1e-5 |

(Triton 3.8's interpreter rounds fp32 to bf16 toward zero, not to nearest as the GPU
does: up to one bf16 ulp, still inside 2**-7.)

FP8 (:func:`assert_fp8`): the values as torch rounds the float64 product to e4m3 (to
nearest, ties to even).  The kernels multiply in fp32, so a product within fp32 rounding
of an e4m3 midpoint may land on the neighbouring value: at most one e4m3 step off, and at
most 0.1% of the values.

MoE routing weights are float32 (the float32 row).  Expert ids are checked through their
probabilities (:func:`check_topk`): the j-th pick's float64 probability must equal the
j-th largest, each expert once, so equal probabilities may come in either order there.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

from .kernels import has_cuda

FP8 = torch.float8_e4m3fn
FLT_MAX = float(torch.finfo(torch.float32).max)

TOL = {
    torch.float32: (1e-5, 1e-6),
    torch.float16: (2.0**-9, 1e-5),
    torch.bfloat16: (2.0**-7, 1e-5),
}
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
DTYPE_IDS = ["bf16", "fp16", "fp32"]


def randn(gen: torch.Generator, *shape: int, dtype: torch.dtype = torch.float32,
          device: str = "cpu", scale: float = 1.0) -> torch.Tensor:
    """Seeded normal values (never all zeros), made on CPU then moved."""
    return (torch.randn(*shape, generator=gen) * scale).to(dtype=dtype, device=device)


def nan_like(t: torch.Tensor) -> torch.Tensor:
    return torch.full_like(t, float("nan"))


def assert_close(actual: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, what: str) -> None:
    rtol, atol = TOL[dtype]
    a = actual.detach().double().cpu()
    r = ref.detach().double().cpu()
    assert a.shape == r.shape, f"{what}: shape {tuple(a.shape)} != {tuple(r.shape)}"
    assert not torch.isnan(a).any(), f"{what}: NaN in the output (an element was not written)"
    err = (a - r).abs()
    bad = err > atol + rtol * r.abs()
    if bad.any():
        i = int(bad.flatten().nonzero()[0])
        pytest.fail(f"{what}: {int(bad.sum())} of {bad.numel()} elements beyond rtol={rtol} "
                    f"atol={atol}; max error {err.max().item():.3g}; first bad "
                    f"actual={a.flatten()[i].item()!r} ref={r.flatten()[i].item()!r}")


def ref_rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float, gemma: bool) -> torch.Tensor:
    xd = x.double()
    wd = w.double() + (1.0 if gemma else 0.0)
    return xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + eps) * wd


def ref_act(x: torch.Tensor, kind: str) -> torch.Tensor:
    xd = x.double()
    d = xd.shape[-1] // 2
    a, b = xd[..., :d], xd[..., d:]
    if kind == "silu":
        y = a / (1.0 + torch.exp(-a))
    elif kind == "gelu":
        y = 0.5 * a * (1.0 + torch.erf(a / math.sqrt(2.0)))
    else:
        y = 0.5 * a * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (a + 0.044715 * a**3)))
    return y * b


def ref_rope(x: torch.Tensor, pos: torch.Tensor, cache: torch.Tensor, head_size: int,
             neox: bool) -> torch.Tensor:
    """x: [tokens, heads * head_size] -> rotated, float64, same shape."""
    t = x.shape[0]
    xd = x.double().reshape(t, -1, head_size).clone()
    rd = cache.shape[1]
    half = rd // 2
    cs = cache.double()[pos.long().cpu()]
    cos, sin = cs[:, None, :half], cs[:, None, half:]
    if neox:
        x1, x2 = xd[..., :half].clone(), xd[..., half:rd].clone()
        xd[..., :half] = x1 * cos - x2 * sin
        xd[..., half:rd] = x2 * cos + x1 * sin
    else:
        x1, x2 = xd[..., 0:rd:2].clone(), xd[..., 1:rd:2].clone()
        xd[..., 0:rd:2] = x1 * cos - x2 * sin
        xd[..., 1:rd:2] = x2 * cos + x1 * sin
    return xd.reshape(x.shape)


def ref_topk(logits: torch.Tensor, k: int, renormalize: bool, softcap: float = 0.0,
             bias: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    x = logits.double()
    if softcap:
        x = torch.tanh(x / softcap) * softcap
    if bias is not None:
        x = x + bias.double()
    p = torch.softmax(x, dim=-1)
    return p, torch.sort(p, dim=-1, descending=True, stable=True).values[:, :k]


def rope_inputs(gen: torch.Generator, device: str, dtype: torch.dtype, tokens: int, nq: int,
                nk: int, head: int, rd: int, max_pos: int = 300,
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Query, key, cos/sin cache and positions laid out as sglang's: q and k are column
    slices of one qkv tensor."""
    qkv = randn(gen, tokens, (nq + 2 * nk) * head, dtype=dtype, device=device)
    q, k = qkv[:, : nq * head], qkv[:, nq * head: (nq + nk) * head]
    angles = torch.rand(max_pos, rd // 2, generator=gen, dtype=torch.float64) * 2 * math.pi
    cache = torch.cat((angles.cos(), angles.sin()), dim=-1).float().to(device)
    pos = torch.randint(0, max_pos, (tokens,), generator=gen).to(device)
    return q, k, cache, pos


def check_topk(w: torch.Tensor, ids: torch.Tensor, p: torch.Tensor, ref_w: torch.Tensor,
               renormalize: bool) -> None:
    """Top-k weights and ids against the float64 probabilities ``p`` and their sorted top
    ``ref_w`` (see the module docstring)."""
    k = ref_w.shape[1]
    expect = ref_w / ref_w.sum(-1, keepdim=True) if renormalize else ref_w
    assert w.dtype == torch.float32
    assert_close(w, expect, torch.float32, "topk_weights")
    ids_c = ids.long().cpu()
    assert ((ids_c >= 0) & (ids_c < p.shape[1])).all(), "expert id out of range"
    assert all(len(set(row.tolist())) == k for row in ids_c), "an expert was picked twice"
    picked = p.gather(1, ids_c)  # each pick's probability must be the k-th largest
    assert_close(picked, ref_w, torch.float32, "probabilities of the picked experts")


def fp8_step(v: torch.Tensor) -> torch.Tensor:
    """The spacing of e4m3 values at each |v| (2**-9 below the smallest normal)."""
    e = torch.floor(torch.log2(v.abs().clamp_min(2.0**-6)))
    return torch.exp2(e - 3)


def assert_fp8(q: torch.Tensor, exact: torch.Tensor) -> None:
    """``q`` (e4m3) against float64 ``exact`` values: torch's rounding of them, bit for bit,
    except within one e4m3 step on at most 0.1% (see the module docstring;
    ``test_fp8_ties_round_to_even`` feeds exact midpoints, where no such slack exists)."""
    assert q.dtype == FP8
    want = exact.cpu().clamp(-448, 448).to(FP8)
    got_bits, want_bits = q.cpu().view(torch.uint8), want.cpu().view(torch.uint8)
    differ = got_bits != want_bits
    if differ.any():
        g, w = q.cpu().double()[differ], want.double()[differ]
        assert ((g - w).abs() <= fp8_step(w) * 1.0001).all(), \
            f"{int(differ.sum())} values more than one e4m3 step off: {g[:4]} vs {w[:4]}"
        assert differ.float().mean() <= 1e-3, f"{int(differ.sum())} of {q.numel()} differ"


def spread(gen: torch.Generator, shape: tuple[int, ...], dtype: torch.dtype, dev: str
           ) -> torch.Tensor:
    """Values spread over several binades, some rows far larger than others."""
    x = torch.randn(*shape, generator=gen) * torch.exp2(torch.randint(-4, 6, (*shape[:-1], 1),
                                                                      generator=gen).double())
    return x.to(dtype).to(dev)


def ref_fused_gate(x: list[float], bias: list[float], groups: int, topk_group: int, topk: int,
                   shared: int, factor: float, scale_output: bool,
                   rnd: Callable[[float], float] = float) -> tuple[list[float], list[int]]:
    """One row of ``moe_fused_gate``, in float64 and plain Python, from the rules in the
    docstring of ``kernels.ops.moe_gate``.  ``rnd`` rounds a value to the input's dtype
    where sgl-kernel does (the sigmoid, the biased score, a group's score); the identity
    suits data whose order fp32 cannot change."""
    s = [rnd(1 / (1 + math.exp(-v))) for v in x]
    b = [rnd(si + bi) for si, bi in zip(s, bias, strict=True)]
    per = len(x) // groups
    # the two largest of each group; a group of one adds -FLT_MAX (sgl-kernel's "none")
    score = [rnd(sum([*sorted(b[g * per:(g + 1) * per], reverse=True), -FLT_MAX][:2]))
             for g in range(groups)]
    kept = sorted(range(groups), key=lambda g: (-score[g], g))[:topk_group]
    candidates = [e for e in range(len(x)) if e // per in kept]
    ids = sorted(candidates, key=lambda e: (-b[e], e))[:topk - shared]
    w = [s[e] for e in ids]
    total = sum(w)
    w += [total / factor] * shared
    ids += [len(x) + i for i in range(shared)]
    out = [v / total * (factor if scale_output else 1.0) for v in w]
    return out, ids


def ulp(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of ``dtype`` values at each |v| (float64)."""
    mant = {torch.bfloat16: 7, torch.float16: 10, torch.float32: 23}[dtype]
    low = {torch.bfloat16: -126, torch.float16: -14, torch.float32: -126}[dtype]
    e = torch.floor(torch.log2(v.abs().clamp_min(2.0**low)))
    return torch.exp2(e - mant)


def assert_matmul(out: torch.Tensor, ref: torch.Tensor, magnitude: torch.Tensor,
                  dtype: torch.dtype) -> None:
    """``out`` against the float64 ``ref``: within one ``dtype`` step (the rounding; Triton's
    CPU interpreter truncates to bf16/fp16, so one step, not half) plus the fp32
    accumulation bound ``2**-20 * sum|a*b|`` (``magnitude``; on a GPU ``2**-11``, since
    Hopper's FP8 tensor cores accumulate with fewer bits)."""
    assert out.dtype == dtype
    got = out.double().cpu()
    assert torch.isfinite(got).all(), "an element was not written"
    slack = (2.0**-11 if has_cuda() else 2.0**-20) * magnitude.cpu()
    err = (got - ref.cpu()).abs()
    bound = ulp(ref.cpu(), dtype) * 1.0001 + slack
    assert (err <= bound).all(), f"max error {err.max().item():.3g} (bound there " \
        f"{bound.flatten()[err.argmax()].item():.3g})"


def fp8_operand(gen: torch.Generator, rows: int, cols: int, device: str) -> torch.Tensor:
    """A matmul operand: normal values times 8, in e4m3."""
    return (torch.randn(rows, cols, generator=gen) * 8).to(FP8).to(device)


def block_scales(gen: torch.Generator, rows: int, cols: int) -> torch.Tensor:
    """Positive float32 scales, one per block."""
    return (torch.rand(rows, cols, generator=gen) + 0.05) / 64
