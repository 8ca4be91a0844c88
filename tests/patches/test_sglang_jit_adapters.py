"""The stand-ins for sglang's own JIT kernels (``sglang_shims.kernels.standin.sglang_jit``) against
float64 math written here (the gated activations' is the kernel tests' ``ref_act``), on the
calls sglang 0.5.10-0.5.23 make.

What the CUDA kernels do was read from the wheels (``elementwise/rope.cuh``,
``pos_enc.cuh``, ``activation.cuh``) and their callers: RoPE on ``[tokens, heads,
rope_dim]`` views that are the ``[..., :rotary_dim]`` slice of each head (partial rotary),
neox or interleaved pairs, positions int32 or int64, in place; the fused store of the
rotated key and the value into ``[slots, kv_heads * head_dim]`` caches at ``cache_loc``;
vLLM's ``rotary_embedding`` with a cache in the query's dtype and an optional key; gated
activations, and their MoE variant that leaves rows of unrouted tokens alone.  Each runs
on the PyTorch path and on the Triton kernels (Triton's interpreter on CPU, as the GPU
compiles them).  The patches that install these are tested on the real wheels in
``test_sglang_kernels_rope_fallback.py`` and ``test_sglang_kernels_activation_fallback.py``.
"""

from __future__ import annotations

import math
import types
from collections.abc import Iterator

import pytest

torch = pytest.importorskip("torch")

from sglang_shims.kernels.standin import sglang_jit  # noqa: E402

from ..support.kernels import load_triton, select_backend  # noqa: E402
from ..support.references import ref_act  # noqa: E402

HAS_CUDA = torch.cuda.is_available()
NO_TRITON = load_triton(("ops.rope.triton", "ops.activation.triton"), HAS_CUDA)
BACKENDS = ["torch", pytest.param("triton", marks=pytest.mark.skipif(bool(NO_TRITON),
                                                                     reason=NO_TRITON))]


@pytest.fixture(params=BACKENDS)
def device(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    yield select_backend(request.param, monkeypatch, HAS_CUDA)


def cos_sin(max_pos: int, rot: int, base: float = 10000.0) -> torch.Tensor:
    """[max_pos, rot]: cos of each pair's angle in the first half, sin in the second."""
    inv = [base ** (-2 * i / rot) for i in range(rot // 2)]
    ang = [[p * f for f in inv] for p in range(max_pos)]
    return torch.tensor([[math.cos(a) for a in row] + [math.sin(a) for a in row]
                         for row in ang], dtype=torch.float64)


def rotated(x: torch.Tensor, cache: torch.Tensor, pos: torch.Tensor, neox: bool) -> torch.Tensor:
    """float64 RoPE of x [tokens, heads, >= rot]: the first rot dims rotated, the rest kept."""
    out = x.double().clone()
    rot = cache.shape[1]
    half = rot // 2
    for t in range(x.shape[0]):
        c, s = cache[int(pos[t]), :half].double(), cache[int(pos[t]), half:].double()
        for h in range(x.shape[1]):
            v = x[t, h, :rot].double()
            if neox:
                a, b = v[:half], v[half:]
                out[t, h, :half], out[t, h, half:rot] = a * c - b * s, b * c + a * s
            else:
                a, b = v[0::2], v[1::2]
                out[t, h, 0:rot:2], out[t, h, 1:rot:2] = a * c - b * s, b * c + a * s
    return out


TOL = {torch.float32: 1e-5, torch.bfloat16: 2e-2}


@pytest.mark.parametrize("neox", [True, False], ids=["neox", "interleaved"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_apply_rope_on_the_slice_sglang_passes(device: str, neox: bool,
                                               dtype: torch.dtype) -> None:
    """Partial rotary as base.py calls it: q/k are [..., :rotary_dim] views of the heads of
    a fused qkv; only those dims change, in place; positions int32."""
    g = torch.Generator().manual_seed(1)
    tokens, hq, hk, head, rot = 7, 4, 2, 64, 32
    qkv = torch.randn(tokens, (hq + 2 * hk) * head, generator=g).to(dtype).to(device)
    before = qkv.clone()
    q = qkv[:, :hq * head].view(tokens, hq, head)[..., :rot]
    k = qkv[:, hq * head:(hq + hk) * head].view(tokens, hk, head)[..., :rot]
    cache = cos_sin(64, rot)
    pos = torch.tensor([0, 3, 9, 63, 1, 17, 40], dtype=torch.int32)
    sglang_jit.apply_rope(q, k, cache.float().to(device), pos.to(device), is_neox=neox)
    got = qkv.cpu().double()
    ref = before.cpu().double()
    want_q = rotated(before[:, :hq * head].view(tokens, hq, head).cpu(), cache, pos, neox)
    want_k = rotated(before[:, hq * head:(hq + hk) * head].view(tokens, hk, head).cpu(),
                     cache, pos, neox)
    tol = TOL[dtype]
    assert torch.allclose(got[:, :hq * head].view(tokens, hq, head), want_q, atol=tol, rtol=tol)
    assert torch.allclose(got[:, hq * head:(hq + hk) * head].view(tokens, hk, head), want_k,
                          atol=tol, rtol=tol)
    assert torch.equal(got[:, (hq + hk) * head:], ref[:, (hq + hk) * head:])  # v untouched


def test_apply_rope_fused_store_into_2d_caches(device: str) -> None:
    """fused_args as models/utils.py builds it: caches [slots, kv_heads * head_dim], value
    a [tokens, kv_heads * head_dim] view, cache_loc int32 like positions."""
    g = torch.Generator().manual_seed(2)
    tokens, hq, hk, head, slots = 5, 4, 2, 64, 12
    q = torch.randn(tokens, hq, head, generator=g).to(device)
    k = torch.randn(tokens, hk, head, generator=g).to(device)
    v = torch.randn(tokens, hk * head, generator=g).to(device)
    kc = torch.full((slots, hk * head), 7.0, device=device)
    vc = torch.full((slots, hk * head), 7.0, device=device)
    loc = torch.tensor([3, 0, 11, 5, 8], dtype=torch.int32)
    pos = torch.tensor([4, 2, 0, 30, 31], dtype=torch.int32)
    cache = cos_sin(32, head)
    want_q, want_k = (rotated(t.cpu(), cache, pos, True) for t in (q, k))
    args = types.SimpleNamespace(value=v, k_buffer=kc, v_buffer=vc, cache_loc=loc.to(device))
    sglang_jit.apply_rope(q, k, cache.float().to(device), pos.to(device), is_neox=True,
                           fused_args=args)
    assert torch.allclose(q.cpu().double(), want_q, atol=1e-5)
    assert torch.allclose(k.cpu().double(), want_k, atol=1e-5)
    rows = loc.long()
    assert torch.allclose(kc.cpu()[rows].double(), want_k.reshape(tokens, -1), atol=1e-5)
    assert torch.equal(vc.cpu()[rows], v.cpu())
    others = [r for r in range(slots) if r not in rows.tolist()]
    assert bool((kc.cpu()[others] == 7.0).all()) and bool((vc.cpu()[others] == 7.0).all())


def test_apply_rope_rejects_what_the_cuda_kernel_rejects() -> None:
    q, k = torch.zeros(2, 4, 64), torch.zeros(2, 2, 64)
    cache, pos = torch.zeros(8, 64), torch.zeros(2, dtype=torch.int64)
    with pytest.raises(ValueError, match="rope_dim"):
        sglang_jit.apply_rope(q, k, cache, pos, is_neox=True, rope_dim=32)
    with pytest.raises(ValueError, match=r"\[tokens, heads, 32\]"):
        sglang_jit.apply_rope(q, k, torch.zeros(8, 32), pos, is_neox=True)
    with pytest.raises(ValueError, match="float32"):
        sglang_jit.apply_rope(q, k, cache.bfloat16(), pos, is_neox=True)
    full = torch.zeros(2, 4, 128)
    args = types.SimpleNamespace(value=torch.zeros(2, 128), k_buffer=torch.zeros(4, 128),
                                 v_buffer=torch.zeros(4, 128), cache_loc=pos)
    with pytest.raises(ValueError, match="whole heads"):
        sglang_jit.apply_rope(full[..., :64], torch.zeros(2, 2, 128)[..., :64], cache, pos,
                               is_neox=True, fused_args=args)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("with_key", [True, False], ids=["key", "no-key"])
def test_rotary_embedding_odd_head_size(device: str, with_key: bool,
                                        dtype: torch.dtype) -> None:
    """head_size 80 (not 64/128/256/512: sglang's other path), rotary dim 64, cache in the
    query's dtype as base.py casts it, key optional; returns (query, key)."""
    g = torch.Generator().manual_seed(3)
    tokens, hq, hk, head, rot = 6, 3, 1, 80, 64
    query = torch.randn(tokens, hq * head, generator=g).to(dtype).to(device)
    key = (torch.randn(tokens, hk * head, generator=g).to(dtype).to(device) if with_key
           else None)
    cache = cos_sin(16, rot).to(dtype)
    pos = torch.tensor([0, 1, 2, 15, 7, 3])
    want_q = rotated(query.view(tokens, hq, head).cpu(), cache, pos, True)
    want_k = None if key is None else rotated(key.view(tokens, hk, head).cpu(), cache, pos,
                                              True)
    out = sglang_jit.rotary_embedding(pos.to(device), query, key, head, cache.to(device), True)
    assert out[0] is query and out[1] is key
    tol = TOL[dtype]
    assert torch.allclose(query.cpu().double().view(tokens, hq, head), want_q, atol=tol,
                          rtol=tol)
    if key is not None and want_k is not None:
        assert torch.allclose(key.cpu().double().view(tokens, hk, head), want_k, atol=tol,
                              rtol=tol)


@pytest.mark.parametrize("op", ["silu", "gelu", "gelu_tanh"])
def test_run_activation(device: str, op: str) -> None:
    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, 3, 64, generator=g).to(device)
    out = torch.empty(2, 3, 32, device=device)
    sglang_jit.run_activation(op, x, out)
    assert torch.allclose(out.cpu().double(), ref_act(x.cpu(), op), atol=1e-5)
    with pytest.raises(ValueError, match="relu"):
        sglang_jit.run_activation("relu", x, out)


def test_run_activation_filtered_leaves_unrouted_rows(device: str) -> None:
    """expert_ids[t // expert_step] == -1: row t of out keeps what it had."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(6, 32, generator=g).to(device)
    out = torch.full((6, 16), 3.0, device=device)
    expert_ids = torch.tensor([0, -1, 2], dtype=torch.int32, device=device)
    sglang_jit.run_activation_filtered("silu", x, out, expert_ids, 2)
    want = ref_act(x.cpu(), "silu")
    got = out.cpu().double()
    assert torch.allclose(got[[0, 1, 4, 5]], want[[0, 1, 4, 5]], atol=1e-5)
    assert bool((got[[2, 3]] == 3.0).all())


def test_replacements_bind_by_parameters_only() -> None:
    """A function with other parameters is refused (TypeError, the patch fails closed);
    an optional name that is missing is skipped; each known one gets its stand-in."""

    def apply_rope_with_cos_sin_cache_inplace(q, k, cos_sin_cache, positions, *,  # type: ignore[no-untyped-def]
                                              is_neox, rope_dim=0, fused_args=None):
        """0.5.10-0.5.23's parameters."""

    def rotary_embedding(positions, query, key, head_size, cos_sin_cache,  # type: ignore[no-untyped-def]
                         is_neox=True):
        """0.5.10-0.5.23's parameters."""

    def changed(q, k, cos_sin_cache, positions, *, is_neox, rope_dim=0):  # type: ignore[no-untyped-def]
        """fused_args gone: not a signature we know."""

    mod = types.ModuleType("fake_rope")
    mod.apply_rope_with_cos_sin_cache_inplace = apply_rope_with_cos_sin_cache_inplace  # type: ignore[attr-defined]
    got = sglang_jit.replacements(mod, sglang_jit.ROPE, optional=("rotary_embedding",))
    assert got == {"apply_rope_with_cos_sin_cache_inplace": sglang_jit.apply_rope}
    mod.rotary_embedding = rotary_embedding  # type: ignore[attr-defined]
    got = sglang_jit.replacements(mod, sglang_jit.ROPE)
    assert got["rotary_embedding"] is sglang_jit.rotary_embedding
    mod.apply_rope_with_cos_sin_cache_inplace = changed  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="no stand-in takes"):
        sglang_jit.replacements(mod, sglang_jit.ROPE)
