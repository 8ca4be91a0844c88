"""Give sglang back ``Qwen2_5_VisionRotaryEmbedding(dim, theta)`` on transformers >= 5.17.

sglang < 0.5.22 builds the Qwen2.5-VL vision tower's rotary embedding (qwen2_5_vl.py, and
qwen3_vl / moss_vl / mimo_vl in the releases that have them) with::

    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VisionRotaryEmbedding
    self.rotary_pos_emb = Qwen2_5_VisionRotaryEmbedding(head_dim // 2)

transformers 5.17 replaced the class by ``Qwen2_5_VLVisionRotaryEmbedding(config)``, an
axial RoPE driven by ``config.rope_parameters`` (PR 48105), so the import fails and the
model registry drops every model built on that vision tower.  An alias would not do: the
new class takes a config, not ``(dim, theta)``, and computes different angles.

After ``modeling_qwen2_5_vl`` has run, the old class is put back on it, written here from
its transformers 4 behaviour: a non-persistent ``inv_freq`` buffer
``1 / theta ** (arange(0, dim, 2) / dim)`` and ``forward(seqlen)`` returning the
``(seqlen, dim // 2)`` outer product of ``arange(seqlen)`` with it.
"""

from __future__ import annotations

from sglang_shims.patching import PatchContext, module_level

NAME = "Qwen2_5_VisionRotaryEmbedding"


def _build_class(module_name: str) -> type:
    """The class, built on first use: torch is imported only here."""
    import torch
    from torch import nn

    class Qwen2_5_VisionRotaryEmbedding(nn.Module):
        """Vision RoPE frequencies of Qwen2.5-VL as transformers 4 computed them."""

        inv_freq: torch.Tensor  # a non-persistent buffer

        def __init__(self, dim: int, theta: float = 10000.0) -> None:
            super().__init__()
            exponents = torch.arange(0, dim, 2, dtype=torch.float) / dim
            inv_freq = 1.0 / (theta**exponents)
            self.register_buffer("inv_freq", inv_freq, persistent=False)

        def forward(self, seqlen: int) -> torch.Tensor:
            inv_freq = self.inv_freq
            seq = torch.arange(seqlen, device=inv_freq.device, dtype=inv_freq.dtype)
            return torch.outer(seq, inv_freq)

    return module_level(Qwen2_5_VisionRotaryEmbedding, module_name)  # as in transformers 4


def apply(ctx: PatchContext) -> None:
    if NAME in vars(ctx.module):
        ctx.retire(f"{ctx.module.__name__} still defines {NAME}")
    ctx.setattr(ctx.module, NAME, _build_class(ctx.module.__name__))
    ctx.note(f"restored {NAME}(dim, theta=10000.0) with transformers 4 semantics")
