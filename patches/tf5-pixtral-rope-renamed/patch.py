"""Give sglang back ``PixtralRotaryEmbedding`` and ``position_ids_in_meshgrid`` (transformers 5.17).

sglang 0.4.6.post4 - 0.5.21 builds the Pixtral vision encoder (models/pixtral.py) with::

    from transformers.models.pixtral.modeling_pixtral import PixtralRotaryEmbedding
    from transformers.models.pixtral.modeling_pixtral import position_ids_in_meshgrid
    self.patch_positional_embedding = PixtralRotaryEmbedding(config)
    position_ids = position_ids_in_meshgrid(embeds_2d, max_width=image_size // patch_size)
    cos, sin = self.patch_positional_embedding(embeds, position_ids)

transformers 5.17 (PR 48105) replaced both by ``PixtralVisionRotaryEmbedding`` (axial RoPE
over 2-D position ids, a different ``forward``), so ``pixtral.py`` no longer imports and
the registry drops Pixtral / Mistral-3 vision.  After ``modeling_pixtral`` has run, the two
missing names are put back, written here from their transformers 4 behaviour:

* ``position_ids_in_meshgrid(patch_embeds_list, max_width)``: for each ``(..., h, w)``
  patch grid, the row-major ids ``row * max_width + col``, concatenated;
* ``PixtralRotaryEmbedding(config)``: per flattened patch position of a
  ``(image_size // patch_size)``-square grid, the first ``head_dim // 4`` angles follow the
  row with the even inverse frequencies, the next ``head_dim // 4`` the column with the
  odd ones, duplicated to ``head_dim``; ``forward(x, position_ids)`` returns
  ``(cos, sin)`` of those angles, computed in float32 and cast to ``x.dtype``.  The base
  is ``config.rope_theta`` or, on transformers 5, ``config.rope_parameters["rope_theta"]``.
"""

from __future__ import annotations

from typing import Any

from sglang_shims.patching import PatchContext, module_level

NAMES = ("PixtralRotaryEmbedding", "position_ids_in_meshgrid")


def _rope_theta(config: Any) -> float:
    try:
        return float(config.rope_theta)
    except AttributeError:
        params = getattr(config, "rope_parameters", None)
        if isinstance(params, dict) and "rope_theta" in params:
            return float(params["rope_theta"])
        raise


def position_ids_in_meshgrid(patch_embeds_list: Any, max_width: int) -> Any:
    """Row-major flat position ids of each patch grid, concatenated (transformers 4)."""
    import torch

    positions = []
    for patch in patch_embeds_list:
        height, width = patch.shape[-2:]
        rows = torch.arange(height).view(height, 1).expand(height, width)
        cols = torch.arange(width).view(1, width).expand(height, width)
        positions.append((rows * max_width + cols).reshape(-1))
    return torch.cat(positions)


def _build_rotary_class(module_name: str) -> type:
    """The class, built on first use: torch is imported only here."""
    import torch
    from torch import nn

    class PixtralRotaryEmbedding(nn.Module):
        """2-D RoPE angles of Pixtral's vision encoder as transformers 4 computed them."""

        inv_freq: torch.Tensor  # a non-persistent buffer

        def __init__(self, config: Any, device: Any = None) -> None:
            super().__init__()
            self.rope_type = "default"
            self.dim = config.head_dim
            self.base = _rope_theta(config)
            side = config.image_size // config.patch_size
            freqs = 1.0 / (self.base ** (torch.arange(0, self.dim, 2).float() / self.dim))
            grid = torch.arange(side, device=freqs.device)
            rows = torch.outer(grid, freqs[::2]).float()  # (side, dim // 4)
            cols = torch.outer(grid, freqs[1::2]).float()
            per_patch = torch.cat(
                [rows[:, None, :].expand(side, side, -1),
                 cols[None, :, :].expand(side, side, -1)],
                dim=-1,
            ).reshape(side * side, self.dim // 2)
            self.register_buffer("inv_freq", torch.cat((per_patch, per_patch), dim=-1),
                                 persistent=False)

        def forward(self, x: torch.Tensor,
                    position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            with torch.no_grad():
                freqs = self.inv_freq[position_ids]
                device_type = x.device.type if x.device.type != "mps" else "cpu"
                with torch.autocast(device_type=device_type, enabled=False):
                    cos, sin = freqs.cos(), freqs.sin()
                return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)

    return module_level(PixtralRotaryEmbedding, module_name)  # where transformers 4 defined it


def apply(ctx: PatchContext) -> None:
    missing = [name for name in NAMES if name not in vars(ctx.module)]
    if not missing:
        ctx.retire(f"{ctx.module.__name__} still defines {' and '.join(NAMES)}")
    for name in missing:
        value: Any = _build_rotary_class(ctx.module.__name__) \
            if name == "PixtralRotaryEmbedding" else position_ids_in_meshgrid
        ctx.setattr(ctx.module, name, value)
    ctx.note(f"restored {', '.join(missing)} with transformers 4 semantics")
