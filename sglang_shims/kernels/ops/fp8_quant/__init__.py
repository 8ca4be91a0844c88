"""FP8 (e4m3fn) activation quantisation with sgl-kernel's Python signatures.

sglang's FP8 linear layers and its Triton fused-MoE quantise activations through these
before every FP8 matmul (``sglang_per_token_group_quant_fp8``, ``scaled_fp8_quant`` and
``sglang_per_token_quant_fp8`` in ``layers/quantization/fp8_kernel.py``):

* ``sgl_per_token_group_quant_8bit(input, output_q, output_s, group_size, eps, fp8_min,
  fp8_max, scale_ue8m0=False, fuse_silu_and_mul=False, masked_m=None, enable_v2=None)``
  (sgl-kernel >= 0.3.9) and its older name ``sgl_per_token_group_quant_fp8`` (the same
  function; early releases stopped at ``scale_ue8m0``): each run of ``group_size``
  values along the last dimension is one group; ``amax = max(max|x|, eps)``; the stored
  scale is ``amax / 448`` and the values are ``x * (448 / amax)`` saturated to +-448.
  With ``scale_ue8m0`` the scale is rounded up to a power of two and the values divided
  by it exactly.  ``output_s`` is ``[rows, groups]`` float32 with any strides (sglang
  passes row-major, column-major and TMA-padded column-major views);
* ``sgl_per_token_quant_fp8(input, output_q, output_s)``: one scale per row of a 2-D
  input, ``max|x| / 448``; values ``x * (1 / scale)`` saturated;
* ``sgl_per_tensor_quant_fp8(input, output_q, output_s, is_static)``: one scale for
  the whole tensor; dynamic (``is_static=False``) stores ``max(output_s, max|x| / 448)``
  (sgl-kernel takes an atomic maximum into the buffer sglang zeroes), static uses the
  scale given.

Arithmetic is fp32 as in sgl-kernel, and rounding to e4m3 is to nearest, ties to even,
as torch's own conversion.  GPUs below compute capability 8.9 (no e4m3 in Triton) take
the plain-PyTorch path.  Differences from sgl-kernel, on purpose: an all-zero row
or tensor quantises to zeros (sgl-kernel's per-tensor and small-batch per-token kernels
multiply by ``1/0`` there and store 448, which dequantises to 0 all the same); ``eps``
may be any value (sgl-kernel insists on 1e-10).  Refused loudly: packed ``ue8m0``
scales (an int32 ``output_s``), ``fuse_silu_and_mul`` and ``masked_m`` (the DeepEP
paths), and any output other than ``torch.float8_e4m3fn``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...compile_lock import launch_kernel
from ...runtime import device_of, pdl_options, use_pdl, use_triton, vector_align
from . import launch

if TYPE_CHECKING:
    import torch

__all__ = [
    "sgl_per_tensor_quant_fp8",
    "sgl_per_token_group_quant_8bit",
    "sgl_per_token_group_quant_fp8",
    "sgl_per_token_quant_fp8",
]

FP8_MAX = 448.0


def sgl_per_token_group_quant_8bit(
    input: torch.Tensor,
    output_q: torch.Tensor,
    output_s: torch.Tensor,
    group_size: int,
    eps: float,
    fp8_min: float,
    fp8_max: float,
    scale_ue8m0: bool = False,
    fuse_silu_and_mul: bool = False,
    masked_m: torch.Tensor | None = None,
    enable_v2: bool | None = None,
) -> None:
    """Quantise each group of ``group_size`` values to e4m3 with its own fp32 scale;
    ``enable_v2`` picks a CUDA kernel variant and is ignored."""
    if fuse_silu_and_mul or masked_m is not None:
        raise NotImplementedError(
            "sgl_per_token_group_quant_8bit: fuse_silu_and_mul and masked_m (sglang's DeepEP "
            "MoE paths) are not implemented by sglang-shims' fallback kernels")
    group_quant_into(input, output_q, output_s, int(group_size), float(eps),
                     float(fp8_min), float(fp8_max), bool(scale_ue8m0))


#: The older name; sgl-kernel binds it to the same function.
sgl_per_token_group_quant_fp8 = sgl_per_token_group_quant_8bit


def sgl_per_token_quant_fp8(input: torch.Tensor, output_q: torch.Tensor,
                            output_s: torch.Tensor) -> None:
    """Quantise each row of a 2-D ``input`` with one fp32 scale per row."""
    import torch

    _check_io("sgl_per_token_quant_fp8", input, output_q)
    if input.dim() != 2:
        raise ValueError("sgl_per_token_quant_fp8: input must be 2-D [tokens, hidden]")
    scales = _flat_scales("sgl_per_token_quant_fp8", output_s, input.shape[0])
    if input.numel() == 0:
        return
    if _triton_fp8(input):
        _triton_per_token(input, output_q, scales)
        return
    x = input.float()
    scale = x.abs().amax(dim=1) / FP8_MAX
    inv = torch.where(scale == 0, torch.zeros_like(scale), 1.0 / scale)
    output_q.copy_(_quantise(x, inv[:, None], -FP8_MAX, FP8_MAX))
    scales.copy_(scale)


def sgl_per_tensor_quant_fp8(input: torch.Tensor, output_q: torch.Tensor,
                             output_s: torch.Tensor, is_static: bool) -> None:
    """Quantise all of ``input`` with one fp32 scale (computed unless ``is_static``)."""
    import torch

    _check_io("sgl_per_tensor_quant_fp8", input, output_q)
    scale = _flat_scales("sgl_per_tensor_quant_fp8", output_s, 1)
    if input.numel() == 0:
        return
    if _triton_fp8(input):
        _triton_per_tensor(input, output_q, scale, bool(is_static))
        return
    x = input.float()
    if not is_static:
        scale.copy_(torch.maximum(scale, x.abs().amax().reshape(1) / FP8_MAX))
    inv = torch.where(scale == 0, torch.zeros_like(scale), 1.0 / scale)
    output_q.copy_(_quantise(x, inv, -FP8_MAX, FP8_MAX))


def group_quant_into(input: torch.Tensor, output_q: torch.Tensor, output_s: torch.Tensor,
                     group_size: int, eps: float, fp8_min: float, fp8_max: float,
                     scale_ue8m0: bool) -> None:
    """The op-level entry point of the per-group ops; checks as sgl-kernel does, then runs."""
    import torch

    name = "sgl_per_token_group_quant_fp8"
    _check_io(name, input, output_q)
    if fp8_min != -FP8_MAX or fp8_max != FP8_MAX:
        raise ValueError(f"{name}: fp8_min/fp8_max must be -448/448 (e4m3fn), got "
                         f"{fp8_min}/{fp8_max}")
    if group_size <= 0 or input.dim() == 0 or input.shape[-1] % group_size:
        raise ValueError(f"{name}: the last dimension ({tuple(input.shape)}) must be a "
                         f"multiple of group_size={group_size}")
    if output_s.dtype != torch.float32:
        raise NotImplementedError(
            f"{name}: output_s must be float32; packed ue8m0 scales ({output_s.dtype}) are "
            "not implemented by sglang-shims' fallback kernels")
    rows = input.numel() // input.shape[-1] if input.shape[-1] else 0
    groups = input.shape[-1] // group_size
    if output_s.dim() != 2 or tuple(output_s.shape) != (rows, groups):
        raise ValueError(f"{name}: output_s must be [{rows}, {groups}], got "
                         f"{tuple(output_s.shape)}")
    if input.numel() == 0:
        return
    if _triton_fp8(input):
        _triton_group(input, output_q, output_s, rows, group_size, eps, fp8_min, fp8_max,
                      scale_ue8m0)
        return
    x = input.float().reshape(rows, groups, group_size)
    amax = x.abs().amax(dim=-1).clamp_min(eps)
    if scale_ue8m0:
        mantissa, exponent = torch.frexp(amax * (1.0 / fp8_max))
        e = exponent - (mantissa == 0.5).to(exponent.dtype)  # ceil(log2(ratio)), exactly
        scale = torch.ldexp(torch.ones_like(amax), e)
        mult = torch.ldexp(torch.ones_like(amax), -e)
    else:
        scale = amax * (1.0 / fp8_max)
        mult = fp8_max / amax
    output_q.copy_(_quantise(x, mult[..., None], fp8_min, fp8_max).view(output_q.shape))
    output_s.copy_(scale)


def _triton_fp8(x: torch.Tensor) -> bool:
    """The Triton path, where Triton has an e4m3 type for the GPU (compute capability 8.9+;
    below it the kernels do not compile, so plain torch quantises there)."""
    return use_triton(x) and device_of(x).fp8


def _quantise(x: torch.Tensor, mult: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
    import torch

    return (x * mult).clamp(lo, hi).to(torch.float8_e4m3fn)


def _check_io(name: str, input: torch.Tensor, output_q: torch.Tensor) -> None:
    import torch

    if input.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"{name}: input must be float16, bfloat16 or float32, got {input.dtype}")
    if output_q.dtype != torch.float8_e4m3fn:
        raise TypeError(f"{name}: output_q must be torch.float8_e4m3fn, got {output_q.dtype}"
                        " (other 8-bit outputs are not implemented by sglang-shims' fallback)")
    if output_q.shape != input.shape:
        raise ValueError(f"{name}: output_q must have input's shape {tuple(input.shape)}, got "
                         f"{tuple(output_q.shape)}")
    if not (input.is_contiguous() and output_q.is_contiguous()):
        raise ValueError(f"{name}: input and output_q must be contiguous")


def _flat_scales(name: str, output_s: torch.Tensor, n: int) -> torch.Tensor:
    import torch

    if output_s.dtype != torch.float32 or output_s.numel() != n:
        raise ValueError(f"{name}: output_s must be float32 with {n} elements, got "
                         f"{output_s.dtype} {tuple(output_s.shape)}")
    if not output_s.is_contiguous():
        raise ValueError(f"{name}: output_s must be contiguous")
    return output_s.view(-1)


def _triton_group(input: torch.Tensor, output_q: torch.Tensor, output_s: torch.Tensor,
                  rows: int, group_size: int, eps: float, fp8_min: float, fp8_max: float,
                  ue8m0: bool) -> None:
    from .triton import per_token_group_quant_kernel

    n_groups = input.numel() // group_size
    cfg = launch.group_config(rows, n_groups, group_size)
    pdl = use_pdl(input)
    key = ("fp8_group", input.dtype, cfg["BLOCK_G"], cfg["BLOCK_K"], ue8m0, pdl)
    launch_kernel(key, per_token_group_quant_kernel, launch.group_grid(n_groups, cfg),
                  input, output_q, output_s,
                  n_groups, input.shape[-1] // group_size, group_size,
                  output_s.stride(0), output_s.stride(1),
                  eps, fp8_min, fp8_max,
                  UE8M0=ue8m0, **cfg, **pdl_options(pdl))


def _triton_per_token(input: torch.Tensor, output_q: torch.Tensor,
                      scales: torch.Tensor) -> None:
    from .triton import per_token_quant_kernel

    n_rows, n_cols = input.shape
    cfg = launch.token_config(n_rows, n_cols)
    align = vector_align(output_q.element_size(), n_cols, input.stride(0), output_q.stride(0))
    pdl = use_pdl(input)
    key = ("fp8_token", input.dtype, cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"], align,
           pdl)
    launch_kernel(key, per_token_quant_kernel, launch.token_grid(n_rows, cfg),
                  input, output_q, scales, n_rows, n_cols // align, input.stride(0) // align,
                  output_q.stride(0) // align, FP8_MAX, ALIGN=align, **cfg, **pdl_options(pdl))


def _triton_per_tensor(input: torch.Tensor, output_q: torch.Tensor, scale: torch.Tensor,
                       is_static: bool) -> None:
    from .triton import absmax_kernel, per_tensor_quant_kernel

    n = input.numel()
    block = launch.tensor_block(n)
    grid = launch.tensor_grid(n, block)
    align = vector_align(output_q.element_size(), n)
    pdl = use_pdl(input)
    opts = pdl_options(pdl)
    if not is_static:
        # the quantising grid's wait covers every absmax program's atomic (PDL waits for the
        # whole grid before it, not for its release)
        launch_kernel(("fp8_absmax", input.dtype, block, align, pdl), absmax_kernel, grid,
                      input, scale, n // align, FP8_MAX, BLOCK=block, ALIGN=align, **opts)
    launch_kernel(("fp8_tensor", input.dtype, block, align, pdl), per_tensor_quant_kernel,
                  grid, input, output_q, scale, n // align, FP8_MAX, BLOCK=block, ALIGN=align,
                  **opts)
