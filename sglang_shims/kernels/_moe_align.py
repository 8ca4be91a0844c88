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

On the Triton path, small inputs -- at most ``_ONE_LAUNCH_MAX_ENTRIES`` routed tokens
and ``_ONE_LAUNCH_MAX_BUCKETS`` buckets, and with the padding fill at most
``_ONE_LAUNCH_MAX_FILL`` slots of ``sorted_token_ids`` -- go to one single-program
launch; larger ones to three launches spread over chunks (see
``_moe_align_kernels``).  Why: decode (1 to 64 tokens, top-k up to 8) runs this op every
step, and there the three launches cost more than their work (on the H200, 1 token x
top-8 of 128 experts took 7.9 us against sgl-kernel's 4.5 us).  One program does the
work serially, so it only pays while the input is small.  Compiled and timed on the
H200 on 2026-12-02 (top-8 of 128 experts, block 64, CUDA-graph replay): 4.0 us against
7.4 us for the three launches at 8 routed tokens, 8.5 against 9.8 us at 64, but 24.2
against 12.6 us at 256; a later run timed the one launch at 4.4 us at 8 and 11.4 us at
64.  So 64 is about where it stops paying, and ``_ONE_LAUNCH_MAX_ENTRIES`` is 32 (4
decode tokens at top-8; between 8 and 64 entries, unmeasured, the time grows with the
entries).  The other limits: 1024 buckets covers 512-expert models (Qwen3-Next) and keeps
the one-hot tiles at no fewer than 8 tokens a step; 65536 slots caps the fill that one
program writes alone at 256 KiB.  The tests raise the entry limit to ``_ONE_LAUNCH_ON``
(1024) to check the path on larger inputs too; so does ``benchmarks/kernels.py
--moe-align-one-launch`` to time it there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import DECODE_ROWS, next_pow2, use_triton
from ._compile_lock import launch

if TYPE_CHECKING:
    import torch

__all__ = ["moe_align_block_size", "moe_sum", "moe_sum_reduce"]

_MAX_TRITON_BUCKETS = 4096
_TILE = 8192  # one-hot tile elements a program holds at once
# The single-program path (see the module docstring for the H200 timings behind the limit).
_ONE_LAUNCH_ON = 1024  # routed tokens the path is tested up to (the tests' limit)
_ONE_LAUNCH_MAX_ENTRIES = 32  # where it pays (H200, see above); 0 turns it off
_ONE_LAUNCH_MAX_BUCKETS = 1024
_ONE_LAUNCH_MAX_FILL = 65536  # sorted_token_ids slots, when pad_sorted_token_ids asks
_ONE_LAUNCH_WARPS = 8  # one program: more threads per program is its only parallelism
_FILL_STEP = 2048  # slots the one program fills per step


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
    if use_triton(topk_ids) and topk_ids.numel() and n_buckets <= _MAX_TRITON_BUCKETS:
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
    """The Triton path: one launch for small inputs (:func:`one_launch`), else three.

    Every size here comes from shapes and arguments, so the launches can be captured in
    a CUDA graph.
    """
    import torch
    import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]

    from . import _moe_align_kernels as k

    ids = topk_ids if topk_ids.is_contiguous() else topk_ids.contiguous()
    numel = ids.numel()
    block_e = next_pow2(n_buckets)
    rows = max(1, _TILE // block_e)  # expert_ids entries written per step
    if one_launch(numel, n_buckets, sorted_token_ids.numel(), pad):
        block_t = min(_TILE // block_e, max(16, next_pow2(numel)))
        key = ("moe_align_one", ids.dtype, block_t, block_e, pad, ignore_invalid)
        launch(key, lambda: k.align_one_launch_kernel[(1,)](
            ids, sorted_token_ids, experts_ids, num_tokens_post_pad, cumsum_buffer, numel,
            n_buckets, bs, sorted_token_ids.numel(), experts_ids.numel(),
            IGNORE_INVALID=ignore_invalid, PAD=pad, BLOCK_T=block_t, BLOCK_E=block_e,
            BLOCK_J=rows, BLOCK_F=_FILL_STEP, num_warps=_ONE_LAUNCH_WARPS))
        return
    block_t = max(16, min(256, _TILE // block_e))
    n_chunks = triton.cdiv(numel, block_t)
    counts = torch.empty(n_chunks * block_e, dtype=torch.int32, device=ids.device)
    n_sorted = sorted_token_ids.numel()
    fill = triton.cdiv(n_sorted, n_chunks)
    common = (ids.dtype, block_t, block_e, ignore_invalid)
    launch(("moe_align_count", pad, *common), lambda: k.align_count_kernel[(n_chunks,)](
        ids, counts, sorted_token_ids, numel, n_buckets, n_sorted, fill,
        IGNORE_INVALID=ignore_invalid, BLOCK_T=block_t, BLOCK_E=block_e, PAD=pad,
        BLOCK_F=1024))
    launch(("moe_align_scan", block_e, rows), lambda: k.align_scan_kernel[(1,)](
        counts, cumsum_buffer, experts_ids, num_tokens_post_pad, n_chunks, n_buckets, bs,
        experts_ids.numel(), BLOCK_C=rows, BLOCK_E=block_e, BLOCK_J=rows))
    launch(("moe_align_place", *common), lambda: k.align_place_kernel[(n_chunks,)](
        ids, counts, cumsum_buffer, sorted_token_ids, numel, n_buckets,
        IGNORE_INVALID=ignore_invalid, BLOCK_T=block_t, BLOCK_E=block_e))


def one_launch(numel: int, n_buckets: int, n_sorted: int, pad: bool) -> bool:
    """Whether the Triton path takes the single-program kernel (sizes only, no device read)."""
    return (0 < numel <= _ONE_LAUNCH_MAX_ENTRIES and n_buckets <= _ONE_LAUNCH_MAX_BUCKETS
            and (not pad or n_sorted <= _ONE_LAUNCH_MAX_FILL))


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
    import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]

    from . import _moe_align_kernels

    x = input if input.stride(2) == 1 else input.contiguous()
    out = output if output.stride(1) == 1 else torch.empty_like(output)
    tokens, topk, hidden = x.shape
    # 1024 columns and 4 warps a program (0.98-0.99x the AOT kernel at 4096-16384 tokens
    # on an H200); at 1-32 tokens (top-8, hidden 4096/8192) 512 columns and 8 warps are
    # the best or within 4%, 8-22% less time (twice the programs; the top-k loop is short).
    block_h = min(next_pow2(hidden), 512 if tokens <= DECODE_ROWS else 1024)
    warps = 8 if tokens <= DECODE_ROWS and block_h == 512 else 4
    grid = (tokens, triton.cdiv(hidden, block_h))
    key = ("moe_sum", x.dtype, block_h, warps, scale is not None)
    launch(key, lambda: _moe_align_kernels.moe_sum_kernel[grid](
        x, out, hidden, topk, x.stride(0), x.stride(1), out.stride(0),
        1.0 if scale is None else scale, BLOCK_H=block_h, SCALE=scale is not None,
        num_warps=warps))
    if out is not output:
        output.copy_(out)
