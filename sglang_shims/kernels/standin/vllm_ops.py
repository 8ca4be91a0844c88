"""Stand-ins for the compiled vllm ops that old sglang releases call on CUDA.

sglang up to 0.4.2.post3 requires vllm and, on its CUDA path, reaches some of vllm's
compiled kernels through ``vllm._custom_ops``: RMSNorm and the gated activations (vllm's
layer classes, which 0.4.1.post7 and earlier take where flashinfer is missing, and the
fused MoE's activation), and RoPE.  Each of those Python functions only forwards to
``torch.ops._C.<op>``, registered by vllm's ``_C`` extension.  The extension of the vllm
these releases pin is built for an older torch and CUDA runtime; on today's torch it does
not load, vllm only logs a warning, and the first forward pass fails with the op missing.

The functions here take exactly the parameters of vllm's (0.6.3.post1-0.6.6.post1, the
same source in each), compute what its CUDA kernels compute, in place as they do, and run
the fallback's Triton kernels on the GPU, their PyTorch path on CPU.  :data:`OPS` maps
each name of ``vllm._custom_ops`` to its stand-in; :func:`unloaded` says which of them
have no compiled op behind them in this process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..ops import norm
from . import sglang_jit

if TYPE_CHECKING:
    import torch

__all__ = ["OPS", "fused_add_rms_norm", "gelu_and_mul", "gelu_tanh_and_mul", "rms_norm",
           "rotary_embedding", "silu_and_mul", "unloaded"]


def rms_norm(out: torch.Tensor, input: torch.Tensor, weight: torch.Tensor,
             epsilon: float) -> None:
    """vllm's ``rms_norm``: ``out = input / rms(input) * weight`` (fp32 arithmetic)."""
    norm.rmsnorm(input, weight, epsilon, out=out)


def fused_add_rms_norm(input: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                       epsilon: float) -> None:
    """vllm's ``fused_add_rms_norm``, in place: ``residual += input``, then ``input =
    residual / rms(residual) * weight``.  vllm's kernel normalises the sum after rounding
    it to the residual's dtype, the fallback the fp32 sum: they differ by that rounding."""
    norm.fused_add_rmsnorm(input, residual, weight, epsilon)


def silu_and_mul(out: torch.Tensor, x: torch.Tensor) -> None:
    """vllm's ``silu_and_mul``: ``out = silu(x[..., :d]) * x[..., d:]``."""
    sglang_jit.run_activation("silu", x, out)


def gelu_and_mul(out: torch.Tensor, x: torch.Tensor) -> None:
    """vllm's ``gelu_and_mul``: as :func:`silu_and_mul` with the exact (erf) GELU."""
    sglang_jit.run_activation("gelu", x, out)


def gelu_tanh_and_mul(out: torch.Tensor, x: torch.Tensor) -> None:
    """vllm's ``gelu_tanh_and_mul``: as :func:`silu_and_mul` with the tanh GELU."""
    sglang_jit.run_activation("gelu_tanh", x, out)


def rotary_embedding(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor,
                     head_size: int, cos_sin_cache: torch.Tensor, is_neox: bool) -> None:
    """vllm's ``rotary_embedding``, in place on ``query`` and ``key`` (``[tokens, heads *
    head_size]``, or with ``[batch, seq]`` leading dimensions matching ``positions``): the
    first ``rot_dim`` of each head rotated by the ``[max_pos, rot_dim]`` cache (cos
    halves, then sin halves), neox (split halves) or GPT-J (interleaved pairs) style.
    sglang's own op of that name is vllm's kernel, so its stand-in serves here."""
    sglang_jit.rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox)


OPS: dict[str, Sequence[Callable[..., Any]]] = {
    "rms_norm": (rms_norm,),
    "fused_add_rms_norm": (fused_add_rms_norm,),
    "silu_and_mul": (silu_and_mul,),
    "gelu_and_mul": (gelu_and_mul,),
    "gelu_tanh_and_mul": (gelu_tanh_and_mul,),
    "rotary_embedding": (rotary_embedding,),
}
"""The functions of ``vllm._custom_ops`` stood in for, each named as its ``_C`` op."""


def unloaded(names: Sequence[str]) -> list[str]:
    """Those of ``names`` that ``torch.ops._C`` (vllm's op namespace) lacks: the ops whose
    library did not load here, whatever the reason (vllm's own import only warns)."""
    import torch

    return [name for name in names if not hasattr(torch.ops._C, name)]
