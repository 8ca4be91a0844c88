"""What vllm's norm, gated-activation and RoPE kernels compute, in float64 from the inputs
(written from the kernels' definitions, not from the code under test)."""
import math

import torch


def rms_ref(x, weight, eps):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.double()


def fused_add_ref(x, residual, weight, eps):
    """(normalised sum, sum): what ``input`` and ``residual`` hold afterwards."""
    total = x.double() + residual.double()
    return rms_ref(total, weight, eps), total


def act_ref(kind, x):
    x = x.double()
    a, b = x.chunk(2, dim=-1)
    if kind == "silu":
        act = a / (1 + torch.exp(-a))
    elif kind == "gelu":
        act = 0.5 * a * (1 + torch.erf(a / math.sqrt(2)))
    else:
        act = 0.5 * a * (1 + torch.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))
    return act * b


def rope_ref(positions, x, head_size, cache, is_neox):
    """``x`` ([tokens, heads * head_size]) with the first ``rot_dim`` of each head rotated:
    neox pairs element i with i + rot_dim/2, GPT-J element 2i with 2i + 1."""
    rot_dim = cache.shape[-1]
    half = rot_dim // 2
    heads = x.double().reshape(x.shape[0], -1, head_size).clone()
    cos_sin = cache.double()[positions.reshape(-1)]
    cos, sin = cos_sin[:, None, :half], cos_sin[:, None, half:]
    if is_neox:
        first, second = heads[..., :half], heads[..., half:rot_dim]
    else:
        first, second = heads[..., 0:rot_dim:2], heads[..., 1:rot_dim:2]
    new_first = first * cos - second * sin
    new_second = second * cos + first * sin
    if is_neox:
        heads[..., :half], heads[..., half:rot_dim] = new_first, new_second
    else:
        heads[..., 0:rot_dim:2], heads[..., 1:rot_dim:2] = new_first, new_second
    return heads.reshape(x.shape)
