"""FP8 matmuls (``kernels.ops.fp8_gemm``): ``fp8_scaled_mm`` with per-token/tensor and
per-channel/tensor scales and a bias, ``fp8_blockwise_scaled_mm`` with 128x128 block
scales in sglang's layouts, and the hand-off to sglang's own Triton kernel on CUDA.

Against float64 products of the dequantised operands, within one output step plus the
fp32 accumulation bound (:func:`assert_matmul`).
"""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K

from ..support.kernels import gpu_only, triton_skip
from ..support.references import FP8, assert_matmul, block_scales, fp8_operand

SEED = 20261201
triton_skip()  # Triton's interpreter on CPU: before any kernel is defined


BF16, FP16 = torch.bfloat16, torch.float16


MM_CASES = [  # M, N, K, out dtype, scales (activation-weight), bias
    (1, 64, 128, BF16, "token-channel", True), (7, 200, 272, FP16, "token-channel", False),
    (33, 128, 48, BF16, "tensor-channel", True), (130, 256, 384, FP16, "token-tensor", True),
    (20, 96, 160, FP16, "tensor-tensor", False)]


@pytest.mark.parametrize("case", MM_CASES, ids=lambda c: "m{}-n{}-k{}-{}-{}{}".format(
    *c[:3], str(c[3])[6:], c[4], "-bias" if c[5] else ""))
def test_fp8_scaled_mm(backend: str, gen: torch.Generator,
                       case: tuple[int, int, int, torch.dtype, str, bool]) -> None:
    """sglang's call: the [N, K] weight transposed (column-major), fp32 scales as [M, 1]
    per token (or one per tensor) and [N] per channel (or one), bias of the out dtype."""
    m, n, k, out_dtype, scales, with_bias = case
    a, weight = fp8_operand(gen, m, k, backend), fp8_operand(gen, n, k, backend)
    sa = (torch.rand(m if scales.startswith("token") else 1, 1, generator=gen) + 0.05) / 64
    sb = (torch.rand(n if scales.endswith("channel") else 1, generator=gen) + 0.05) / 64
    bias = (torch.randn(n, generator=gen) * 4).to(out_dtype).to(backend) if with_bias else None
    out = K.fp8_scaled_mm(a, weight.t(), sa.to(backend), sb.to(backend), out_dtype, bias)
    ad, wd = a.double().cpu(), weight.double().cpu()
    scale = sa.double().view(-1, 1) * sb.double().view(1, -1)
    ref = (ad @ wd.t()) * scale
    if bias is not None:
        ref += bias.double().cpu()
    assert tuple(out.shape) == (m, n)
    assert_matmul(out, ref, (ad.abs() @ wd.abs().t()) * scale, out_dtype)


BLOCK_CASES = [  # M, N, K, out dtype, layout of the activation scales
    (1, 128, 128, BF16, "columns"), (5, 384, 256, FP16, "tma"), (33, 256, 384, BF16, "rows"),
    (130, 200, 320, FP16, "columns")]


@pytest.mark.parametrize("case", BLOCK_CASES, ids=lambda c: "m{}-n{}-k{}-{}-{}".format(
    *c[:3], str(c[3])[6:], c[4]))
def test_fp8_blockwise_scaled_mm(backend: str, gen: torch.Generator,
                                 case: tuple[int, int, int, torch.dtype, str]) -> None:
    """sglang's call: ``(q, weight.T, x_scale, weight_scale.T)`` with ``x_scale`` [M, K/128]
    column-major (or TMA-padded, or row-major) and the weight's [N/128, K/128] scales."""
    m, n, k, out_dtype, layout = case
    kb, nb = -(-k // 128), -(-n // 128)
    a, weight = fp8_operand(gen, m, k, backend), fp8_operand(gen, n, k, backend)
    sa = block_scales(gen, m, kb)
    if layout == "rows":
        x_scale = sa.to(backend)
    else:
        padded = m if layout == "columns" else -(-m // 4) * 4
        x_scale = torch.full((kb, padded), float("nan"), device=backend).t()[:m]
        x_scale.copy_(sa)
    sw = block_scales(gen, nb, kb)
    out = K.fp8_blockwise_scaled_mm(a, weight.t(), x_scale, sw.to(backend).t(), out_dtype)
    a_deq = a.double().cpu() * sa.double().repeat_interleave(128, 1)[:, :k]
    w_full = sw.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:n, :k]
    w_deq = weight.double().cpu() * w_full
    assert tuple(out.shape) == (m, n)
    assert_matmul(out, a_deq @ w_deq.t(), a_deq.abs() @ w_deq.abs().t(), out_dtype)


def test_fp8_blockwise_routes_to_sglangs_triton(gen: torch.Generator,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """On CUDA, with sglang's fp8_kernel imported, its w8a8_block_fp8_matmul_triton gets the
    weight and its scales back as [N, K] and [N/128, K/128] views (no copy), block
    [128, 128] and the out dtype; on CPU, or without that module, ours runs."""
    import types

    from sglang_shims.kernels.device import MEASURED
    from sglang_shims.kernels.ops import fp8_gemm

    calls: list[tuple[object, ...]] = []

    def fake(a: torch.Tensor, b: torch.Tensor, a_s: torch.Tensor, b_s: torch.Tensor,
             block: list[int], output_dtype: torch.dtype) -> torch.Tensor:
        calls.append((a, b, a_s, b_s, block, output_dtype))
        return torch.zeros(a.shape[0], b.shape[0], dtype=output_dtype)

    module = types.ModuleType(fp8_gemm.SGLANG_FP8_KERNEL[1])
    module.w8a8_block_fp8_matmul_triton = fake  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    a, weight = fp8_operand(gen, 3, 256, "cpu"), fp8_operand(gen, 128, 256, "cpu")
    x_scale, w_scale = block_scales(gen, 3, 2), block_scales(gen, 1, 2)
    monkeypatch.delenv("SGLANG_SHIMS_KERNEL_BACKEND", raising=False)
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda t: True))
    monkeypatch.setattr(fp8_gemm, "use_triton", lambda t: True)
    monkeypatch.setattr(fp8_gemm, "device_of", lambda t: MEASURED)  # an fp8-capable GPU
    monkeypatch.setattr(fp8_gemm, "use_pdl", lambda t: False)  # no GPU to ask
    out = K.fp8_blockwise_scaled_mm(a, weight.t(), x_scale, w_scale.t(), torch.bfloat16)
    assert len(calls) == 1 and out.dtype == torch.bfloat16
    got_a, got_b, got_as, got_bs, block, dtype = calls[0]
    assert got_a is a and got_as is x_scale and block == [128, 128] and dtype == torch.bfloat16
    assert isinstance(got_b, torch.Tensor) and isinstance(got_bs, torch.Tensor)
    assert got_b.data_ptr() == weight.data_ptr() and tuple(got_b.shape) == (128, 256)
    assert got_b.is_contiguous() and tuple(got_bs.shape) == (1, 2)
    assert got_bs.data_ptr() == w_scale.data_ptr()
    launched: list[str] = []
    monkeypatch.setattr(fp8_gemm, "launch_kernel",
                        lambda key, *args, **kwargs: launched.append(key[0]))
    row_major_b = weight.t().contiguous()  # [K, N] row-major: sglang's kernel wants [N, K]
    K.fp8_blockwise_scaled_mm(a, row_major_b, x_scale, w_scale.t(), torch.bfloat16)
    assert len(calls) == 1 and launched == ["fp8_blockwise_scaled_mm"], "not ours"
    monkeypatch.setitem(sys.modules, module.__name__, types.ModuleType(module.__name__))
    monkeypatch.setattr(fp8_gemm, "use_triton", lambda t: False)
    K.fp8_blockwise_scaled_mm(a, weight.t(), x_scale, w_scale.t(), torch.bfloat16)
    assert len(calls) == 1, "sglang's kernel was called on the plain-torch path"


SPLIT_CASES = [  # M, N, K, split forced: 4 K steps of 256 in 3 runs leave the last empty
    (1, 96, 1000, 3), (16, 64, 1024, 2), (5, 200, 2040, 4), (32, 128, 768, 8)]


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: "m{}-n{}-k{}-split{}".format(*c))
def test_fp8_scaled_mm_split_k(backend: str, gen: torch.Generator, monkeypatch: pytest.MonkeyPatch,
                               case: tuple[int, int, int, int]) -> None:
    """K cut into runs whose partial sums the tile's last program adds (the decode rule's
    kernel, forced here at small sizes): the product within the matmul bound, the same
    bits on a second call (the partials are added in index order, and the arrival counts
    are back at 0 after each launch)."""
    from sglang_shims.kernels.ops import fp8_gemm
    from sglang_shims.kernels.ops.fp8_gemm import launch

    m, n, k, split = case
    monkeypatch.setattr(launch, "SPLIT_K", split)
    a, weight = fp8_operand(gen, m, k, backend), fp8_operand(gen, n, k, backend)
    sa = (torch.rand(m, 1, generator=gen) + 0.05) / 64
    sb = (torch.rand(n, generator=gen) + 0.05) / 64
    bias = (torch.randn(n, generator=gen) * 4).to(BF16).to(backend)
    first = K.fp8_scaled_mm(a, weight.t(), sa.to(backend), sb.to(backend), BF16, bias)
    again = K.fp8_scaled_mm(a, weight.t(), sa.to(backend), sb.to(backend), BF16, bias)
    ad, wd = a.double().cpu(), weight.double().cpu()
    scale = sa.double().view(-1, 1) * sb.double().view(1, -1)
    assert_matmul(first, (ad @ wd.t()) * scale + bias.double().cpu(),
                  (ad.abs() @ wd.abs().t()) * scale, BF16)
    assert torch.equal(first, again)
    if backend != "torch":
        assert all(int(c.count_nonzero()) == 0 for c in fp8_gemm._COUNTS.values())


@gpu_only
@pytest.mark.parametrize("mnk", [(1, 5120, 5120), (4, 4608, 4608), (16, 4096, 4096),
                                 (32, 7168, 7168), (9, 2880, 2880)], ids=str)
def test_fp8_scaled_mm_split_by_the_rule_on_a_gpu(gen: torch.Generator,
                                                  mnk: tuple[int, int, int]) -> None:
    """The decode rule's split at model widths on a real GPU (hundreds of programs meeting
    on their tiles' counts at once): within the matmul bound of float64, the same bits
    eagerly, in a CUDA graph's replays, and again after them."""
    from sglang_shims.kernels.ops import fp8_gemm

    m, n, k = mnk
    a, weight = fp8_operand(gen, m, k, "cuda"), fp8_operand(gen, n, k, "cuda")
    sa = ((torch.rand(m, 1, generator=gen) + 0.05) / 64).cuda()
    sb = ((torch.rand(n, generator=gen) + 0.05) / 64).cuda()
    cfg = fp8_gemm.launch.config(m, n, decode_tiles=True, dev=fp8_gemm.device_of(a))
    assert fp8_gemm.launch.split_k(m, k, cfg, fp8_gemm.launch.grid(m, n, cfg)[0],
                                   fp8_gemm.device_of(a)) > 1

    def call() -> torch.Tensor:
        return K.fp8_scaled_mm(a, weight.t(), sa, sb, BF16)

    eager = call()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        call()  # this stream's counts exist before its capture (as sglang warms up)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            captured = call()
    for _ in range(3):
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(captured, eager)
    assert torch.equal(call(), eager)
    ad, wd = a.double(), weight.double()
    scale = sa.double().view(-1, 1) * sb.double().view(1, -1)
    assert_matmul(eager.cpu(), ((ad @ wd.t()) * scale).cpu(),
                  ((ad.abs() @ wd.abs().t()) * scale).cpu(), BF16)


@gpu_only
@pytest.mark.parametrize("mnk", [(2048, 4096, 4096), (2049, 3584, 1000)], ids=str)
def test_fp8_scaled_mm_wide_tiles_on_a_gpu(gen: torch.Generator,
                                          mnk: tuple[int, int, int]) -> None:
    """The 128 x 256 prefill tiles where the rule takes them on this GPU (an H100 / H200 at
    these shapes; a row past the tiles and a K that is no multiple of the step in the
    second), with a bias: within the matmul bound of float64."""
    from sglang_shims.kernels.ops import fp8_gemm

    m, n, k = mnk
    a, weight = fp8_operand(gen, m, k, "cuda"), fp8_operand(gen, n, k, "cuda")
    cfg = fp8_gemm.launch.config(m, n, decode_tiles=True, dev=fp8_gemm.device_of(a))
    if cfg["BLOCK_N"] != 256:
        pytest.skip(f"no CUDA GPU that takes the wide tiles here: {torch.cuda.get_device_name()}")
    sa = ((torch.rand(m, 1, generator=gen) + 0.05) / 64).cuda()
    sb = ((torch.rand(n, generator=gen) + 0.05) / 64).cuda()
    bias = (torch.randn(n, generator=gen) * 4).to(BF16).cuda()
    out = K.fp8_scaled_mm(a, weight.t(), sa, sb, BF16, bias)
    ad, wd = a.double(), weight.double()
    scale = sa.double().view(-1, 1) * sb.double().view(1, -1)
    assert_matmul(out.cpu(), ((ad @ wd.t()) * scale + bias.double()).cpu(),
                  ((ad.abs() @ wd.abs().t()) * scale).cpu(), BF16)


def test_fp8_matmul_rejects(backend: str) -> None:
    a = torch.zeros(4, 128, device=backend).to(FP8)
    w = torch.zeros(256, 128, device=backend).to(FP8)
    s4, s256 = torch.ones(4, device=backend), torch.ones(256, device=backend)
    with pytest.raises(TypeError, match="float8_e4m3fn"):
        K.fp8_scaled_mm(a.float(), w.t(), s4, s256, torch.bfloat16)
    with pytest.raises(ValueError, match="cannot be multiplied"):
        K.fp8_scaled_mm(a, w, s4, s256, torch.bfloat16)
    with pytest.raises(ValueError, match="scales_b must be float32 with 256"):
        K.fp8_scaled_mm(a, w.t(), s4, s4, torch.bfloat16)
    with pytest.raises(ValueError, match="bias must have 256"):
        K.fp8_scaled_mm(a, w.t(), s4, s256, torch.bfloat16, torch.zeros(256, device=backend))
    with pytest.raises(TypeError, match="out_dtype"):
        K.fp8_scaled_mm(a, w.t(), s4, s256, torch.int32)
    with pytest.raises(ValueError, match=r"scales_b must be float32 \[1, 2\]"):
        K.fp8_blockwise_scaled_mm(a, w.t(), torch.ones(4, 1, device=backend),
                                  torch.ones(2, 1, device=backend), torch.bfloat16)
