"""FP8 (e4m3fn) matmuls with sgl-kernel's Python signatures: scaled and 128x128 block-scaled.

sglang's FP8 linear layers call them in ``layers/quantization/fp8_utils.py`` (0.5.1 to
0.5.17; the block-scaled one to 0.5.15.post1, after which sglang JIT-compiles its own):

* ``fp8_scaled_mm(mat_a, mat_b, scales_a, scales_b, out_dtype, bias=None)``: ``mat_a``
  ``[M, K]`` (quantised activations, row-major), ``mat_b`` ``[K, N]`` (the weight
  ``[N, K]`` seen transposed, so column-major), ``scales_a`` one fp32 scale per row
  (``[M]`` or ``[M, 1]``), ``scales_b`` one per column; returns a new ``[M, N]`` tensor
  of ``out_dtype``: ``(A @ B) * scales_a * scales_b + bias`` computed in fp32, rounded
  once.  sglang calls it for per-channel FP8 checkpoints on compute capability 8.9+.
* ``fp8_blockwise_scaled_mm(mat_a, mat_b, scales_a, scales_b, out_dtype)``: ``mat_b`` is
  the ``[N, K]`` weight transposed as above, quantised in 128x128 blocks;
  ``scales_b`` its ``[N/128, K/128]`` scales transposed (``[K/128, N/128]``);
  ``scales_a`` ``[M, K/128]``, one scale per token and group of 128 (sglang passes
  column-major and TMA-padded views; any strides are read).  Each 128-wide slice of K is
  multiplied, scaled by its two scales and added in fp32, as sgl-kernel's CUTLASS kernel.

Paths: on GPUs below compute capability 8.9, where Triton has no e4m3 type, plain torch
(``Device.fp8``).  Otherwise, for CUDA tensors in a process where sglang's own Triton
block-scaled matmul (``w8a8_block_fp8_matmul_triton``, the kernel behind sglang's
``--fp8-gemm-backend triton``, tuned per GPU) is already imported, the block-scaled op
calls it with the weight and its scales transposed back (views, no copy); it computes
the same sum in the same order.  Otherwise our Triton kernels (``triton.py``),
and plain torch (dequantise to fp32, one matmul) for CPU tensors or without Triton.
sglang's ``triton_scaled_mm`` is *not* used for ``fp8_scaled_mm``: in every release
0.5.1-0.5.17 it loads the K tail without a fill value (undefined values where K is not
a multiple of its 128/256 tile, which sgl-kernel allows) and adds the bias after
rounding to the output dtype.

Accepted beyond sgl-kernel: one scale for the whole of ``mat_a`` or ``mat_b`` (a
per-tensor scale, ``numel() == 1``), any strides, a float32 output, K and N not
multiples of 16 (or of 128 for the block-scaled op, given the scale tensors' rounded-up
sizes).  Refused loudly: inputs other than ``torch.float8_e4m3fn``, non-fp32 scales,
shapes that do not match.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...compile_lock import launch_kernel
from ...runtime import device_of, pdl_options, use_pdl, use_triton
from . import launch

if TYPE_CHECKING:
    import torch

__all__ = ["fp8_blockwise_scaled_mm", "fp8_scaled_mm"]

BLOCK = 128  # the block of fp8_blockwise_scaled_mm's weight scales, both ways
#: Where sglang keeps its Triton block-scaled matmul (to 0.5.15.post1; from 0.5.16).
SGLANG_FP8_KERNEL = ("sglang.srt.layers.quantization.fp8_kernel",
                     "sglang.kernels.ops.quantization.fp8_kernel")


def fp8_scaled_mm(mat_a: torch.Tensor, mat_b: torch.Tensor, scales_a: torch.Tensor,
                  scales_b: torch.Tensor, out_dtype: torch.dtype,
                  bias: torch.Tensor | None = None) -> torch.Tensor:
    """``(mat_a @ mat_b) * scales_a[:, None] * scales_b[None, :] + bias`` as ``out_dtype``."""
    import torch

    name = "fp8_scaled_mm"
    m, n, k = _check_operands(name, mat_a, mat_b, out_dtype)
    sa = _vector_scale(name, "scales_a", scales_a, m)
    sb = _vector_scale(name, "scales_b", scales_b, n)
    if bias is not None and (bias.numel() != n or bias.dtype != out_dtype):
        raise ValueError(f"{name}: bias must have {n} elements of {out_dtype}, got "
                         f"{bias.dtype} {tuple(bias.shape)}")
    out = torch.empty((m, n), dtype=out_dtype, device=mat_a.device)
    if m == 0 or n == 0:
        return out
    if not (use_triton(mat_a) and device_of(mat_a).fp8):
        acc = (mat_a.float() @ mat_b.float()) * sa.view(-1, 1) * sb.view(1, -1)
        if bias is not None:
            acc += bias.float().view(1, -1)
        return out.copy_(acc)
    from .triton import scaled_mm_kernel, scaled_mm_split_kernel

    flat_bias = bias.reshape(-1) if bias is not None else None
    dev = device_of(mat_a)
    cfg = launch.config(m, n, decode_tiles=True, dev=dev)
    pdl = use_pdl(mat_a) and launch.with_pdl(m)
    (tiles,) = launch.grid(m, n, cfg)
    split = launch.split_k(m, k, cfg, tiles, dev)
    counts = _counts(mat_a.device) if split > 1 else None
    args = (mat_a, mat_b, sa, sb, flat_bias if flat_bias is not None else sa, out)
    rest = (m, n, k, mat_a.stride(0), mat_a.stride(1), mat_b.stride(0), mat_b.stride(1),
            out.stride(0), out.stride(1), int(sa.numel() > 1), int(sb.numel() > 1))
    if counts is None:
        launch_kernel(_key(name, out, cfg, bias is not None, pdl), scaled_mm_kernel, (tiles,),
                      *args, *rest, HAS_BIAS=flat_bias is not None, **cfg, **pdl_options(pdl))
        return out
    parts = torch.empty(tiles * split * cfg["BLOCK_M"] * cfg["BLOCK_N"], dtype=torch.float32,
                        device=mat_a.device)
    launch_kernel((*_key(name, out, cfg, bias is not None, pdl), split),
                  scaled_mm_split_kernel, (tiles, split), *args, parts, counts, *rest,
                  HAS_BIAS=flat_bias is not None, SPLIT=split, **cfg, **pdl_options(pdl))
    return out


def fp8_blockwise_scaled_mm(mat_a: torch.Tensor, mat_b: torch.Tensor, scales_a: torch.Tensor,
                            scales_b: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    """``mat_a @ mat_b`` with per-(token, 128-group) and per-128x128-block fp32 scales."""
    import torch

    name = "fp8_blockwise_scaled_mm"
    m, n, k = _check_operands(name, mat_a, mat_b, out_dtype)
    kb, nb = -(-k // BLOCK), -(-n // BLOCK)
    for label, s, want in (("scales_a", scales_a, (m, kb)), ("scales_b", scales_b, (kb, nb))):
        if s.dtype != torch.float32 or tuple(s.shape) != want:
            raise ValueError(f"{name}: {label} must be float32 {list(want)}, got {s.dtype} "
                             f"{list(s.shape)}")
    if m == 0 or n == 0:
        return torch.empty((m, n), dtype=out_dtype, device=mat_a.device)
    if not (use_triton(mat_a) and device_of(mat_a).fp8):
        sa = scales_a.repeat_interleave(BLOCK, dim=1)[:, :k]
        sb = scales_b.repeat_interleave(BLOCK, dim=0).repeat_interleave(BLOCK, dim=1)[:k, :n]
        return ((mat_a.float() * sa) @ (mat_b.float() * sb)).to(out_dtype)
    sglang = _sglang_block_matmul() if mat_a.is_cuda else None
    if sglang is not None and mat_a.is_contiguous() and mat_b.t().is_contiguous():
        out: torch.Tensor = sglang(mat_a, mat_b.t(), scales_a, scales_b.t(), [BLOCK, BLOCK],
                                   output_dtype=out_dtype)
        return out
    from .triton import block_scaled_mm_kernel

    out = torch.empty((m, n), dtype=out_dtype, device=mat_a.device)
    cfg = launch.config(m, n, decode_tiles=False, dev=device_of(mat_a))
    pdl = use_pdl(mat_a) and launch.with_pdl(m)
    launch_kernel(_key(name, out, cfg, False, pdl), block_scaled_mm_kernel,
                  launch.grid(m, n, cfg),
                  mat_a, mat_b, scales_a, scales_b, out, m, n, k,
                  mat_a.stride(0), mat_a.stride(1), mat_b.stride(0), mat_b.stride(1),
                  out.stride(0), out.stride(1), scales_a.stride(0), scales_a.stride(1),
                  scales_b.stride(0), scales_b.stride(1), SCALE_BLOCK=BLOCK,
                  **{knob: v for knob, v in cfg.items() if knob != "BLOCK_K"},
                  **pdl_options(pdl))
    return out


_COUNTS: dict[tuple[str, int], torch.Tensor] = {}
"""The split matmul's arrival counts for each (device, stream): a slot of the device's
arena, handed out on the stream's first split launch and kept for good."""
_ARENA: dict[str, torch.Tensor] = {}
"""Per device, ``STREAM_SLOTS`` rows of ``launch.MAX_SPLIT_TILES`` counts, zeroed once."""
STREAM_SLOTS = 64
_SLOTS_LOCK = threading.Lock()


def _counts(device: torch.device) -> torch.Tensor | None:
    """Arrival counts for the split kernel on the current stream, all 0 between launches
    (each tile's last program resets its own), or ``None``: do not split.

    Per stream, because two matmuls on one stream never run at once (stream order; under
    PDL the kernel waits for the one before it before its first atomic), while two streams
    may.  The device's arena is zeroed outside any CUDA graph capture, on the first split
    launch (a launch captured before it is not split: zeroing inside the capture would
    happen only when that graph replays).  A stream met first inside a capture gets a
    slot of the arena that no launch has used yet, so zero already."""
    import torch

    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (str(device), int(stream))
    with _SLOTS_LOCK:
        counts = _COUNTS.get(key)
        if counts is not None:
            return counts
        arena = _ARENA.get(key[0])
        if arena is None:
            if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
                return None
            arena = _ARENA[key[0]] = torch.zeros(STREAM_SLOTS, launch.MAX_SPLIT_TILES,
                                                 dtype=torch.int32, device=device)
        used = sum(1 for dev, _ in _COUNTS if dev == key[0])
        if used == STREAM_SLOTS:
            return None
        counts = _COUNTS[key] = arena[used]
        return counts


def _sglang_block_matmul() -> Callable[..., Any] | None:
    """sglang's own Triton block-scaled matmul, if this process has already imported it
    (never imported here: the serving code that calls us imported it first)."""
    for module_name in SGLANG_FP8_KERNEL:
        fn = getattr(sys.modules.get(module_name), "w8a8_block_fp8_matmul_triton", None)
        if callable(fn):
            return fn  # type: ignore[no-any-return]
    return None


def _check_operands(name: str, mat_a: torch.Tensor, mat_b: torch.Tensor,
                    out_dtype: torch.dtype) -> tuple[int, int, int]:
    import torch

    if mat_a.dim() != 2 or mat_b.dim() != 2 or mat_a.shape[1] != mat_b.shape[0]:
        raise ValueError(f"{name}: mat_a [M, K] and mat_b [K, N] cannot be multiplied: "
                         f"{list(mat_a.shape)} x {list(mat_b.shape)}")
    if mat_a.dtype != torch.float8_e4m3fn or mat_b.dtype != torch.float8_e4m3fn:
        raise TypeError(f"{name}: mat_a and mat_b must be torch.float8_e4m3fn, got "
                        f"{mat_a.dtype} and {mat_b.dtype}")
    if out_dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"{name}: out_dtype must be float16, bfloat16 or float32, got "
                        f"{out_dtype}")
    return int(mat_a.shape[0]), int(mat_b.shape[1]), int(mat_a.shape[1])


def _vector_scale(name: str, label: str, s: torch.Tensor, n: int) -> torch.Tensor:
    """A per-row (per-column) scale as a flat fp32 vector of ``n``, or of 1 (per tensor)."""
    import torch

    if s.dtype != torch.float32 or s.numel() not in (1, n) or (s.dim() == 2 and 1 not in
                                                                s.shape) or s.dim() > 2:
        raise ValueError(f"{name}: {label} must be float32 with {n} elements (or 1), got "
                         f"{s.dtype} {list(s.shape)}")
    return s.reshape(-1)


def _key(op: str, out: torch.Tensor, cfg: dict[str, int], has_bias: bool, pdl: bool
         ) -> tuple[Any, ...]:
    """The compile lock's key: one per op, output dtype, tiles, stages, bias and PDL."""
    return (op, out.dtype, cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], cfg["num_stages"],
            has_bias, pdl)
