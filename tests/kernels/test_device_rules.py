"""The launch rules read the GPU they launch for (``kernels.device.Device``), never a list of
architectures; the wrappers build that value once per device from torch's properties.

Runs on CPU: launches are recorded (``compile_lock.recording(device)``), not run.
"""

from __future__ import annotations

import types
from typing import Any

import pytest

from sglang_shims.kernels import compile_lock, runtime
from sglang_shims.kernels.device import MEASURED, Device, cuda_device
from sglang_shims.kernels.ops.fp8_gemm import launch as gemm

from ..support.run import need

SM86 = Device((8, 6), 101376, 82)
SM89 = Device((8, 9), 101376, 128)
SM120 = Device((12, 0), 101376, 36)
SM90 = Device((9, 0), 232448, 132)
SMALL = Device((8, 9), 65536, 40)  # an fp8-capable GPU with a T4's shared memory


def test_triton_atomics_from_sm_70() -> None:
    """ptxas refuses the memory order Triton gives its atomics below sm_70 (found by the
    every-arch compile on sm_61), so the atomic moe_align program is never chosen there."""
    assert not Device((6, 1), 49152, 20).atomics
    assert Device((7, 0), 98304, 80).atomics and SM86.atomics and SM90.atomics
    assert not Device((6, 2), 49152, 2).atomics


def test_fp8_gemm_asks_for_pdl_up_to_16_rows() -> None:
    """Measured on an H100: PDL made every cell of 1-16 rows faster and some of 32-256
    rows 15-40% slower."""
    assert gemm.with_pdl(1) and gemm.with_pdl(16)
    assert not gemm.with_pdl(17) and not gemm.with_pdl(4096)


def test_fp8_matmul_stages_follow_shared_memory() -> None:
    """The measured stages where they fit (every fp8-capable GPU has 99 KiB or more); fewer
    where a block has less, down to two."""
    for dev in (SM89, SM120, SM90):
        assert gemm.config(4096, 4096, decode_tiles=False, dev=dev)["num_stages"] == 3
        assert gemm.config(8, 4096, decode_tiles=True, dev=dev)["num_stages"] == 4
    assert gemm.config(32, 4096, decode_tiles=True, dev=SMALL)["num_stages"] == 3
    assert gemm.config(8, 4096, decode_tiles=True, dev=SMALL)["num_stages"] == 4
    assert gemm.config(4096, 4096, decode_tiles=False, dev=SMALL)["num_stages"] == 2
    assert gemm.stages_that_fit(SMALL, 128, 128, 128, 3) == 2


def _recorded(dev: Device, call: Any) -> list[Any]:
    with compile_lock.recording(dev) as launches:
        call()
    return list(launches)


def test_fp8_ops_take_torch_where_triton_has_no_e4m3() -> None:
    """Below compute capability 8.9 Triton refuses e4m3 kernels, so the FP8 ops compute in
    torch there; from 8.9 they launch their kernels."""
    need("torch")
    import torch

    from sglang_shims import kernels as K

    e, f32, fp8 = torch.empty, torch.float32, torch.float8_e4m3fn

    def quant() -> None:
        K.sgl_per_token_quant_fp8(torch.ones(2, 256), e(2, 256, dtype=fp8), e(2))

    def matmul() -> None:
        a, b = torch.zeros(2, 128, dtype=fp8), torch.zeros(128, 64, dtype=fp8)
        K.fp8_scaled_mm(a, b, torch.ones(2, 1), torch.ones(64, 1), torch.bfloat16)

    for call in (quant, matmul):
        assert _recorded(SM86, call) == []
        assert len(_recorded(SM89, call)) == 1
    assert not SM86.fp8 and SM89.fp8 and SM120.fp8 and MEASURED.fp8
    del f32


def test_recording_for_a_device_takes_the_triton_path_on_cpu_tensors() -> None:
    need("torch")
    import torch

    from sglang_shims import kernels as K

    x = torch.ones(4, 4096, dtype=torch.bfloat16)
    assert not runtime.use_triton(x) or runtime.interpret_mode()
    (rec,) = _recorded(SM120, lambda: K.rmsnorm(x, torch.ones(4096, dtype=torch.bfloat16)))
    assert rec.kwargs["BLOCK_N"] == 4096
    assert runtime.device_of(x) is MEASURED  # outside the block: no GPU, the H200's rules


@pytest.mark.parametrize(("dev", "expected"), [(SM120, True), (SM90, True), (SM89, False)])
def test_pdl_follows_the_assumed_device(monkeypatch: pytest.MonkeyPatch, dev: Device,
                                        expected: bool) -> None:
    need("torch")
    import torch

    monkeypatch.setattr(runtime, "PDL_SHIPPED", True)
    x = torch.ones(2, 8)
    with compile_lock.recording(dev):
        assert runtime.use_pdl(x) is expected
        assert runtime.use_pdl(x, False) is False
    assert runtime.use_pdl(x) is False  # a CPU tensor outside: no GPU


def test_the_rules_are_measured_for_the_h200() -> None:
    """What a tensor on no GPU is launched for: the H200 the rules were measured on (sm_90,
    227 KiB of shared memory a block, 132 SMs)."""
    assert Device((9, 0), 227 * 1024, 132) == MEASURED


def test_the_device_is_read_from_torch_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Capability, opt-in shared memory and SM count from torch's device properties, read
    once per device; older torch without the opt-in figure falls back to the default."""
    need("torch")
    import torch

    reads: list[int] = []

    def props(index: int) -> Any:
        reads.append(index)
        if index == 0:
            return types.SimpleNamespace(major=12, minor=0, multi_processor_count=36,
                                         shared_memory_per_block_optin=101376)
        if index == 1:
            return types.SimpleNamespace(major=7, minor=5, multi_processor_count=40,
                                         shared_memory_per_block=65536)
        return types.SimpleNamespace(major=7, minor=0, multi_processor_count=80)

    monkeypatch.setattr(torch.cuda, "get_device_properties", props)
    cuda_device.cache_clear()
    try:
        assert cuda_device(0) == SM120
        assert cuda_device(0) == SM120
        assert cuda_device(1) == Device((7, 5), 65536, 40)
        assert cuda_device(2) == Device((7, 0), 48 * 1024, 80)  # what every GPU gives
        assert reads == [0, 1, 2]
    finally:
        cuda_device.cache_clear()


# the sorting program, the atomic one, two launches (4 chunks), three (79 chunks)
@pytest.mark.parametrize("routed", [8, 100, 1024, 20000])
def test_moe_align_and_sum_launch_with_pdl_where_the_gpu_has_it(
        monkeypatch: pytest.MonkeyPatch, routed: int) -> None:
    """Every launch of the MoE plumbing asks for PDL on sm_90+ (its kernels wait for the one
    before them) and none below; the cache key tells the two compilations apart."""
    need("torch")
    import torch

    from sglang_shims.kernels.ops import moe_align as A

    monkeypatch.setattr(runtime, "PDL_SHIPPED", True)
    ids = torch.zeros(routed, dtype=torch.int32)
    bufs = [torch.empty(n, dtype=torch.int32)
            for n in (routed + 64 * 9, routed // 64 + 10, 1, 10)]

    def both() -> None:
        A.moe_align_block_size(ids, 9, 64, *bufs)
        A.moe_sum_reduce(torch.ones(2, 8, 64), torch.empty(2, 64), 1.0)

    keys: dict[bool, set[Any]] = {}
    for dev, on in ((SM90, True), (SM120, True), (SM86, False)):
        launches = _recorded(dev, both)
        assert len(launches) >= 2
        for rec in launches:
            assert rec.kwargs.get("launch_pdl", False) is on, rec.key
            assert rec.kwargs.get("USE_PDL", False) is on, rec.key
        keys.setdefault(on, set()).update(rec.key for rec in launches)
    assert not keys[True] & keys[False]


def test_fp8_gemm_and_quant_launch_with_pdl_where_the_gpu_has_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Both FP8 matmuls (up to ``PDL_MAX_ROWS`` rows) and every quantiser (per group, per
    token, per tensor dynamic and static) ask for PDL on sm_90+ and not on sm_89 (e4m3, no
    PDL); the cache key tells the two compilations apart."""
    need("torch")
    import torch

    from sglang_shims import kernels as K

    monkeypatch.setattr(runtime, "PDL_SHIPPED", True)
    e, fp8 = torch.empty, torch.float8_e4m3fn
    a, b = torch.zeros(2, 256, dtype=fp8), torch.zeros(256, 128, dtype=fp8)
    x = torch.ones(2, 256)

    def every_op() -> None:
        K.fp8_scaled_mm(a, b, torch.ones(2, 1), torch.ones(128, 1), torch.bfloat16)
        K.fp8_blockwise_scaled_mm(a, b, torch.ones(2, 2), torch.ones(2, 1), torch.bfloat16)
        K.sgl_per_token_group_quant_fp8(x, e(2, 256, dtype=fp8), e(2, 2), 128, 1e-10,
                                        -448.0, 448.0)
        K.sgl_per_token_quant_fp8(x, e(2, 256, dtype=fp8), e(2))
        K.sgl_per_tensor_quant_fp8(x, e(2, 256, dtype=fp8), torch.zeros(1), False)
        K.sgl_per_tensor_quant_fp8(x, e(2, 256, dtype=fp8), torch.ones(1), True)

    keys: dict[bool, set[Any]] = {}
    rows = gemm.PDL_MAX_ROWS + 1  # beyond it the matmuls launch without PDL (measured)
    tall = torch.zeros(rows, 256, dtype=fp8)
    for matmul in (lambda: K.fp8_scaled_mm(tall, b, torch.ones(rows, 1), torch.ones(128, 1),
                                           torch.bfloat16),
                   lambda: K.fp8_blockwise_scaled_mm(tall, b, torch.ones(rows, 2),
                                                     torch.ones(2, 1), torch.bfloat16)):
        (rec,) = _recorded(SM90, matmul)
        assert "launch_pdl" not in rec.kwargs and "USE_PDL" not in rec.kwargs
    for dev, on in ((SM90, True), (SM120, True), (SM89, False)):
        launches = _recorded(dev, every_op)
        assert len(launches) == 7  # the dynamic per-tensor quantiser is two launches
        for rec in launches:
            assert rec.kwargs.get("launch_pdl", False) is on, rec.key
            assert rec.kwargs.get("USE_PDL", False) is on, rec.key
        keys.setdefault(on, set()).update(rec.key for rec in launches)
    assert not keys[True] & keys[False]


@pytest.mark.parametrize("rows", [1, runtime.PDL_EARLY_MAX_ROWS, runtime.PDL_EARLY_MAX_ROWS + 1,
                                  2048])
def test_norm_and_activation_pdl_release_moves_to_the_exit_beyond_decode_rows(
        monkeypatch: pytest.MonkeyPatch, rows: int) -> None:
    """The norms and the activations release the next kernel at their start up to
    ``PDL_EARLY_MAX_ROWS`` rows and at their exit beyond (``PDL_LATE``); the cache key
    tells the two compilations apart.  The FP8 quantisers (measured slower released late)
    and the MoE plumbing always release at the start: they take no ``PDL_LATE``."""
    need("torch")
    import torch

    from sglang_shims import kernels as K

    monkeypatch.setattr(runtime, "PDL_SHIPPED", True)
    e, bf, fp8 = torch.empty, torch.bfloat16, torch.float8_e4m3fn
    x, w = torch.ones(rows, 256, dtype=bf), torch.ones(256, dtype=bf)

    def by_rows() -> None:
        K.rmsnorm(x, w)
        K.fused_add_rmsnorm(x.clone(), x.clone(), w)
        K.gemma_rmsnorm(x, w)
        K.silu_and_mul(torch.ones(rows, 512, dtype=bf))
        K.gelu_tanh_and_mul(torch.ones(rows, 512, dtype=bf))

    def always_early() -> None:
        K.sgl_per_token_group_quant_fp8(x, e(rows, 256, dtype=fp8), e(rows, 2), 128, 1e-10,
                                        -448.0, 448.0)
        K.sgl_per_token_quant_fp8(x, e(rows, 256, dtype=fp8), e(rows))
        K.sgl_per_tensor_quant_fp8(x, e(rows, 256, dtype=fp8), torch.zeros(1), False)
        K.moe_sum_reduce(torch.ones(rows, 8, 64), torch.empty(rows, 64), 1.0)

    late = rows > runtime.PDL_EARLY_MAX_ROWS
    launches = _recorded(SM90, by_rows)
    assert len(launches) == 5
    for rec in launches:
        assert rec.kwargs.get("USE_PDL") is True, rec.key
        assert rec.kwargs.get("PDL_LATE", False) is late, rec.key
    for rec in _recorded(SM90, always_early):
        assert rec.kwargs.get("USE_PDL") is True and "PDL_LATE" not in rec.kwargs, rec.key
    # the same launches released the other way are other compilations
    monkeypatch.setattr(runtime, "PDL_EARLY_MAX_ROWS", 0 if not late else 1 << 62)
    others = _recorded(SM90, by_rows)
    assert not {r.key for r in launches} & {r.key for r in others}


def test_fp8_gemm_splits_k_at_decode_sizes() -> None:
    """``fp8_scaled_mm`` doubles its K split while the grid stays within 2.5 programs an SM
    and each program keeps two K steps; from ``DECODE_ROWS + 1`` rows, or past the counts'
    tiles, it does not split."""
    def split(m: int, n: int, k: int, dev: Device = SM90) -> int:
        cfg = gemm.config(m, n, decode_tiles=True, dev=dev)
        (tiles,) = gemm.grid(m, n, cfg)
        return gemm.split_k(m, k, cfg, tiles, dev)

    assert split(1, 5120, 5120) == 2  # 160 tiles of 32 columns: 320 programs on 132 SMs
    assert split(16, 4096, 4096) == 2  # 128 tiles
    assert split(32, 4096, 4096) == 2  # 64-column tiles from 17 rows, two row tiles: 128
    assert split(16, 2304, 2304) == 4  # 72 tiles: 288 programs
    assert split(1, 7168, 7168) == 1  # 224 tiles: two splits would be 3.4 programs an SM
    assert split(1, 165 * 32, 4096) == 2  # 330 programs: 2.5 an SM exactly
    assert split(1, 166 * 32, 4096) == 1
    assert split(1, 4096, 1024) == 2  # 4 K steps of 256: two a program
    assert split(1, 2048, 1024) == 2  # room for four, but only 4 K steps
    assert split(1, 4096, 512) == 1
    assert split(1, 2048, 4096, SM120) == 1  # 36 SMs: 128 programs are 3.6 an SM
    assert split(1, 1024, 4096, SM120) == 2
    assert split(runtime.DECODE_ROWS + 1, 4096, 4096) == 1
    assert split(1, 32 * (gemm.MAX_SPLIT_TILES + 1), 4096) == 1


def test_fp8_gemm_forced_split_keeps_to_the_steps_and_the_counts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``SPLIT_K`` (the benchmark's override) splits any decode-sized launch into at most
    its K steps, never past the tiles one stream's counts cover, and 1 means no split."""
    cfg = gemm.config(1, 4096, decode_tiles=True, dev=SM90)
    monkeypatch.setattr(gemm, "SPLIT_K", 1)
    assert gemm.split_k(1, 4096, cfg, 128, SM90) == 1
    monkeypatch.setattr(gemm, "SPLIT_K", 8)
    assert gemm.split_k(1, 4096, cfg, 128, SM90) == 8  # beyond the rule's 2
    assert gemm.split_k(1, 1024, cfg, 128, SM90) == 4  # 4 K steps of 256
    assert gemm.split_k(1, 4096, cfg, gemm.MAX_SPLIT_TILES, SM90) == 8
    assert gemm.split_k(1, 4096, cfg, gemm.MAX_SPLIT_TILES + 1, SM90) == 1


def test_fp8_gemm_split_counts_are_per_stream_and_never_zeroed_in_a_capture(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream's counts are a slot of the device's arena; the arena is made (zeroed) only
    outside a capture, and a stream first met inside a capture gets an unused slot."""
    need("torch")
    import torch

    from sglang_shims.kernels.ops import fp8_gemm

    monkeypatch.setattr(fp8_gemm, "_COUNTS", {})
    monkeypatch.setattr(fp8_gemm, "_ARENA", {})
    monkeypatch.setattr(fp8_gemm, "STREAM_SLOTS", 2)
    stream = types.SimpleNamespace(cuda_stream=7)
    capturing = [True]
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: stream)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: capturing[0])
    zeros = torch.zeros
    monkeypatch.setattr(torch, "zeros", lambda *a, **k: zeros(*a, **{**k, "device": "cpu"}))
    cuda = torch.device("cuda", 0)
    assert fp8_gemm._counts(cuda) is None  # capturing, no arena yet: do not split
    capturing[0] = False
    first = fp8_gemm._counts(cuda)
    assert first is not None and first.numel() == gemm.MAX_SPLIT_TILES
    assert fp8_gemm._counts(cuda) is first
    capturing[0] = True
    stream.cuda_stream = 8  # a new stream inside a capture: the next unused slot
    second = fp8_gemm._counts(cuda)
    assert second is not None and second.data_ptr() != first.data_ptr()
    assert int(second.count_nonzero()) == 0
    stream.cuda_stream = 9  # the slots are spent
    assert fp8_gemm._counts(cuda) is None
    cpu = fp8_gemm._counts(torch.device("cpu"))  # another device, its own arena
    assert cpu is not None and int(cpu.count_nonzero()) == 0


def test_fp8_gemm_launches_the_split_kernel_where_the_rule_splits() -> None:
    """The wrapper launches what the rules choose: the decode tiles, and the split kernel
    (grid tiles x split) exactly where ``split_k`` says more than 1."""
    need("torch")
    import torch

    from sglang_shims import kernels as K

    fp8 = torch.float8_e4m3fn
    b = torch.zeros(4096, 4096, dtype=fp8)

    def matmul(m: int, k: int = 4096) -> Any:
        a = torch.zeros(m, k, dtype=fp8)
        (rec,) = _recorded(SM90, lambda: K.fp8_scaled_mm(a, b[:k], torch.ones(m, 1),
                                                         torch.ones(4096), torch.bfloat16))
        return rec

    split = matmul(1)  # 128 tiles of 16 x 32: two runs of K
    assert (split.kwargs["BLOCK_M"], split.kwargs["BLOCK_N"], split.kwargs["BLOCK_K"]) == (
        16, 32, 256)
    assert split.kwargs["SPLIT"] == 2 and tuple(split.grid) == (128, 2)
    for whole in (matmul(1, 512), matmul(runtime.DECODE_ROWS + 1)):  # 2 K steps; prefill
        assert "SPLIT" not in whole.kwargs and len(tuple(whole.grid)) == 1
