"""The plumbing around sglang's own Triton fused-MoE: block alignment and top-k reduction.

sglang runs MoE experts with its own Triton kernel (``fused_moe_triton``); on CUDA the two
steps around it come from sgl-kernel, with these Python signatures:

* ``moe_align_block_size(topk_ids, num_experts, block_size, sorted_token_ids,
  experts_ids, num_tokens_post_pad, cumsum_buffer, pad_sorted_token_ids=False,
  ignore_invalid_experts=False)``: sglang passes ``num_experts + 1`` *buckets*; routed
  token ``i`` (the flat index into ``topk_ids``) with expert ``e`` goes to bucket
  ``e + 1``, so bucket 0 gathers the ``-1`` ids expert parallelism uses for experts on
  other ranks.  Each bucket's count is padded up to a multiple of ``block_size``; the
  buckets are laid out one after another in ``sorted_token_ids``, each holding its
  tokens' flat indices, in the tokens' order, then padding.  ``experts_ids[j]`` is the
  expert (bucket - 1) of block ``j`` for every block up to ``num_tokens_post_pad[0]``
  (the padded total); later blocks are not written.  With ``pad_sorted_token_ids`` the
  whole of ``sorted_token_ids`` is first set to ``topk_ids.numel()`` (the fused-MoE
  kernel's "no token"); without it, the padding slots keep what the caller put there.
  ``cumsum_buffer`` is scratch to sgl-kernel; here it is left holding each bucket's
  starting offset and, last, the total.  ``ignore_invalid_experts`` (sglang 0.5.17's
  ninth argument) leaves the ``-1`` ids out entirely.
* ``moe_sum_reduce(input_tensor, output_tensor, routed_scaling_factor=0)`` (sgl-kernel
  >= 0.3.12): ``output[t] = routed_scaling_factor * sum_k input[t, k]``, summed in fp32
  and rounded once; ``moe_sum(input_tensor, output_tensor)`` (>= 0.3.16) is the same
  without the factor.

Ids outside ``[-1, num_experts - 1)`` are left out of the alignment in both paths (the
CUDA kernel would write outside its buffers).  Accepted beyond sgl-kernel: any strides
for the reductions.  Bucket counts above 4096 run on the plain-PyTorch path.

On the Triton path small inputs take one single-program launch, larger ones two or
three launches over sorted chunks: ``launch.py`` gives the limits and the timings behind them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...compile_lock import launch_kernel
from ...runtime import cdiv, device_of, pdl_options, use_pdl, use_triton, vector_align
from . import launch

if TYPE_CHECKING:
    import torch

__all__ = ["moe_align_block_size", "moe_sum", "moe_sum_reduce"]


def moe_align_block_size(
    topk_ids: torch.Tensor,
    num_experts: int,
    block_size: int,
    sorted_token_ids: torch.Tensor,
    experts_ids: torch.Tensor,
    num_tokens_post_pad: torch.Tensor,
    cumsum_buffer: torch.Tensor,
    pad_sorted_token_ids: bool = False,
    ignore_invalid_experts: bool = False,
) -> None:
    """Group routed tokens by expert, each group padded to a multiple of ``block_size``."""
    if _is_tensor(pad_sorted_token_ids):
        raise TypeError("moe_align_block_size: the early form with a token_cnts_buffer "
                        "(sglang < 0.4.4) is not implemented by sglang-shims' fallback")
    n_buckets, bs = int(num_experts), int(block_size)
    _check(topk_ids, n_buckets, bs, sorted_token_ids, experts_ids, num_tokens_post_pad,
           cumsum_buffer)
    if use_triton(topk_ids) and topk_ids.numel() and n_buckets <= launch.MAX_BUCKETS:
        _triton_align(topk_ids, n_buckets, bs, sorted_token_ids, experts_ids,
                      num_tokens_post_pad, cumsum_buffer, bool(pad_sorted_token_ids),
                      bool(ignore_invalid_experts))
    else:
        moe_align_torch(topk_ids, n_buckets, bs, sorted_token_ids, experts_ids,
                        num_tokens_post_pad, cumsum_buffer, bool(pad_sorted_token_ids),
                        bool(ignore_invalid_experts))


def _is_tensor(obj: object) -> bool:
    return hasattr(obj, "dim") and hasattr(obj, "dtype")


def _check(ids: torch.Tensor, n_buckets: int, bs: int, sorted_ids: torch.Tensor,
           expert_ids: torch.Tensor, post_pad: torch.Tensor, cumsum: torch.Tensor) -> None:
    """Types, and buffer sizes against the most padding there can be (no device sync)."""
    import torch

    name = "moe_align_block_size"
    if ids.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"{name}: topk_ids must be int32 or int64, got {ids.dtype}")
    for label, t in (("sorted_token_ids", sorted_ids), ("experts_ids", expert_ids),
                     ("num_tokens_post_pad", post_pad), ("cumsum_buffer", cumsum)):
        if t.dtype != torch.int32 or not t.is_contiguous():
            raise TypeError(f"{name}: {label} must be a contiguous int32 tensor, got "
                            f"{t.dtype}")
    if n_buckets <= 0 or bs <= 0:
        raise ValueError(f"{name}: num_experts and block_size must be positive, got "
                         f"{n_buckets} and {bs}")
    numel = ids.numel()
    most = min(numel * bs, numel + n_buckets * (bs - 1))
    if (sorted_ids.numel() < most or expert_ids.numel() < -(-most // bs)
            or post_pad.numel() < 1 or cumsum.numel() < n_buckets + 1):
        raise ValueError(
            f"{name}: buffers too small for {numel} routed tokens, {n_buckets} buckets and "
            f"block_size {bs}: sorted_token_ids needs {most} (has {sorted_ids.numel()}), "
            f"experts_ids {-(-most // bs)} (has {expert_ids.numel()}), cumsum_buffer "
            f"{n_buckets + 1} (has {cumsum.numel()})")


def moe_align_torch(topk_ids: torch.Tensor, n_buckets: int, bs: int,
                    sorted_token_ids: torch.Tensor, experts_ids: torch.Tensor,
                    num_tokens_post_pad: torch.Tensor, cumsum_buffer: torch.Tensor,
                    pad: bool, ignore_invalid: bool) -> None:
    """Plain-PyTorch path, exact integer arithmetic.

    Every shape here follows from the arguments, never from the ids' values: no boolean
    indexing, ``bincount`` or ``repeat_interleave`` by counts, which read the device and
    cannot run inside a CUDA graph capture (sglang captures its decode step, MoE included;
    the eager tier's first version failed there on the H200, 2026-12-01).  Ids that are
    left out go to a last, "dropped" bucket that sorts after every real one and is never
    written.
    """
    import torch

    dev = topk_ids.device
    numel = topk_ids.numel()
    bucket = topk_ids.reshape(-1).long() + 1
    ok = (bucket >= (1 if ignore_invalid else 0)) & (bucket < n_buckets)
    bucket = torch.where(ok, bucket, torch.full_like(bucket, n_buckets))
    counts = torch.zeros(n_buckets + 1, dtype=torch.long, device=dev)
    counts.scatter_add_(0, bucket, torch.ones_like(bucket))
    padded = (counts[:n_buckets] + bs - 1) // bs * bs
    ends = padded.cumsum(0)
    starts = ends - padded
    total = ends[-1:]
    if pad:
        sorted_token_ids.fill_(numel)
    order = torch.sort(bucket, stable=True).indices
    sorted_bucket = bucket[order]
    first = counts.cumsum(0) - counts  # where each bucket begins among the sorted tokens
    rank = torch.arange(numel, device=dev) - first[sorted_bucket]
    # slot numel of a one-longer copy takes the dropped ids; the rest is copied back as is
    dest = torch.cat([starts, starts.new_zeros(1)])[sorted_bucket] + rank
    dest = torch.where(sorted_bucket < n_buckets, dest, torch.full_like(dest, -1))
    staged = torch.cat([sorted_token_ids, sorted_token_ids.new_zeros(1)])
    staged[dest] = order.to(torch.int32)  # -1: the extra last slot
    sorted_token_ids.copy_(staged[:-1])
    # block j belongs to the first bucket whose padded end lies beyond j * bs
    block = torch.arange(experts_ids.numel(), device=dev) * bs
    owner = torch.searchsorted(ends, block, right=True)
    written = block < total
    experts_ids.copy_(torch.where(written, (owner - 1).to(torch.int32), experts_ids))
    num_tokens_post_pad.view(-1)[:1].copy_(total)
    cumsum_buffer[:n_buckets].copy_(starts)
    cumsum_buffer[n_buckets:n_buckets + 1].copy_(total)


def _triton_align(topk_ids: torch.Tensor, n_buckets: int, bs: int,
                  sorted_token_ids: torch.Tensor, experts_ids: torch.Tensor,
                  num_tokens_post_pad: torch.Tensor, cumsum_buffer: torch.Tensor,
                  pad: bool, ignore_invalid: bool) -> None:
    """The Triton path: one launch for small inputs (``launch.one_launch``), else two
    (``launch.fused``) or three.

    Every size here comes from shapes and arguments, so the launches can be captured in
    a CUDA graph.
    """
    import torch

    from . import triton as k

    ids = topk_ids if topk_ids.is_contiguous() else topk_ids.contiguous()
    numel = ids.numel()
    pdl = use_pdl(ids)
    opts = pdl_options(pdl)
    if launch.one_launch(numel, n_buckets, sorted_token_ids.numel(), pad):
        one = launch.one_config(numel, n_buckets)
        atomic = launch.one_launch_atomic(numel, device_of(ids))
        key = ("moe_align_one_atomic" if atomic else "moe_align_one", ids.dtype, one["SUB"],
               one["BLOCK_E"], pad, ignore_invalid, pdl)
        kernel = k.align_atomic_one_launch_kernel if atomic else k.align_one_launch_kernel
        launch_kernel(key, kernel, (1,), ids, sorted_token_ids, experts_ids,
                      num_tokens_post_pad, cumsum_buffer, numel, n_buckets, bs,
                      sorted_token_ids.numel(), experts_ids.numel(),
                      IGNORE_INVALID=ignore_invalid, PAD=pad, **one, **opts)
        return
    cfg = launch.chunked_config(numel, n_buckets)
    sub, block_e, rows = cfg["SUB"], cfg["BLOCK_E"], cfg["BLOCK_J"]
    n_chunks = cdiv(numel, sub)
    fused = launch.fused(numel, n_buckets)
    # the chunks' counts, and for two launches each placing program's starts beside them
    scratch = torch.empty((2 if fused else 1) * n_chunks * block_e, dtype=torch.int32,
                          device=ids.device)
    counts = scratch[:n_chunks * block_e]
    n_sorted = sorted_token_ids.numel()
    common = (ids.dtype, sub, block_e, ignore_invalid, pdl)
    launch_kernel(("moe_align_count", pad, *common), k.align_count_kernel, (n_chunks,),
                  ids, counts, sorted_token_ids, numel, n_buckets, n_sorted,
                  cdiv(n_sorted, n_chunks), IGNORE_INVALID=ignore_invalid, SUB=sub,
                  BLOCK_E=block_e, PAD=pad, BLOCK_F=launch.COUNT_FILL_STEP, **opts)
    if fused:
        launch_kernel(("moe_align_scan_place", *common, rows), k.align_scan_place_kernel,
                      (n_chunks,), ids, counts, scratch[n_chunks * block_e:], cumsum_buffer,
                      num_tokens_post_pad, sorted_token_ids, experts_ids, numel, n_chunks,
                      n_buckets, bs, experts_ids.numel(), cdiv(experts_ids.numel(), n_chunks),
                      IGNORE_INVALID=ignore_invalid, SUB=sub, BLOCK_E=block_e, BLOCK_J=rows,
                      BLOCK_C=rows, **opts)
        return
    launch_kernel(("moe_align_scan", block_e, rows, pdl), k.align_scan_kernel, (1,),
                  counts, cumsum_buffer, num_tokens_post_pad, n_chunks, n_buckets, bs,
                  BLOCK_C=rows, BLOCK_E=block_e, **opts)
    launch_kernel(("moe_align_place", *common, rows), k.align_place_kernel, (n_chunks,),
                  ids, counts, cumsum_buffer, sorted_token_ids, experts_ids, numel, n_buckets,
                  bs, experts_ids.numel(), cdiv(experts_ids.numel(), n_chunks),
                  IGNORE_INVALID=ignore_invalid, SUB=sub, BLOCK_E=block_e, BLOCK_J=rows, **opts)


def moe_sum_reduce(input_tensor: torch.Tensor, output_tensor: torch.Tensor,
                   routed_scaling_factor: float = 0) -> None:
    """``output = routed_scaling_factor * input.sum(dim=1)``, fp32 accumulation (the default
    factor is sgl-kernel's; sglang always passes one)."""
    sum_into(input_tensor, output_tensor, float(routed_scaling_factor))


def moe_sum(input_tensor: torch.Tensor, output_tensor: torch.Tensor) -> None:
    """``output = input.sum(dim=1)``, fp32 accumulation."""
    sum_into(input_tensor, output_tensor, None)


def sum_into(input: torch.Tensor, output: torch.Tensor, scale: float | None) -> None:
    """The op-level entry point of both reductions."""
    import torch

    if input.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"moe_sum: input must be float16, bfloat16 or float32, got "
                        f"{input.dtype}")
    if input.dim() != 3 or output.dim() != 2:
        raise ValueError("moe_sum: input must be [tokens, topk, hidden] and output "
                         "[tokens, hidden]")
    if input.shape[0] != output.shape[0] or input.shape[2] != output.shape[1]:
        raise ValueError(f"moe_sum: shapes {tuple(input.shape)} and {tuple(output.shape)} "
                         "do not match")
    if output.dtype != input.dtype:
        raise TypeError(f"moe_sum: output must be {input.dtype}, got {output.dtype}")
    if output.numel() == 0:
        return
    if not use_triton(input):
        acc = input.float().sum(dim=1)
        output.copy_(acc if scale is None else acc * scale)
        return
    from .triton import moe_sum_kernel

    x = input if input.stride(2) == 1 else input.contiguous()
    out = output if output.stride(1) == 1 else torch.empty_like(output)
    tokens, topk, hidden = x.shape
    cfg = launch.sum_config(tokens, hidden)
    strides = (x.stride(0), x.stride(1), out.stride(0))
    align = vector_align(min(x.element_size(), out.element_size()), hidden, *strides)
    pdl = use_pdl(x)
    key = ("moe_sum", x.dtype, cfg["BLOCK_H"], cfg["num_warps"], scale is not None, align, pdl)
    launch_kernel(key, moe_sum_kernel, launch.sum_grid(tokens, hidden, cfg),
                  x, out, hidden // align, topk, *(s // align for s in strides),
                  1.0 if scale is None else scale, SCALE=scale is not None, ALIGN=align, **cfg,
                  **pdl_options(pdl))
    if out is not output:
        output.copy_(out)
