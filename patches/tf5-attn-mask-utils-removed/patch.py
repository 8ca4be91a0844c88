"""Put back ``transformers.modeling_attn_mask_utils`` for sglang's CLIP on transformers >= 5.24.

sglang 0.4.4.post3 - 0.5.17 starts ``sglang/srt/models/clip.py`` with::

    from transformers.modeling_attn_mask_utils import _create_4d_causal_attention_mask

transformers deprecated that module in favour of ``masking_utils`` and removed it in
5.24.0, so ``clip.py`` no longer imports: sglang's model registry drops CLIP with
"Ignore import error", and the CLIP multimodal processor fails to import.

Before ``clip.py`` runs, a small module of that name is registered in ``sys.modules``
(and as ``transformers.modeling_attn_mask_utils``) holding the two legacy helpers with
transformers 4's semantics, written here from their documented behaviour:

* ``_create_4d_causal_attention_mask(input_shape, dtype, device, past_key_values_length=0,
  sliding_window=None)``: additive causal mask ``(batch, 1, query, past + query)``, 0 where
  key ``j`` may be attended by query ``i`` (``j <= past + i`` and, with a window ``w``,
  ``j >= past + i - w``), ``finfo(dtype).min`` elsewhere; ``None`` for a single query
  token without a window, as in transformers 4;
* ``_prepare_4d_attention_mask(mask, dtype, tgt_len=None)``: expands a 2-D padding mask
  to ``(batch, 1, tgt_len, src_len)``, 0 where the mask is 1, ``finfo(dtype).min`` where
  it is anything else.

Any other name of the old module fails to import with an error that names this patch
(attribute access also says which names are provided).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

from sglang_shims.patching import PatchContext

MODULE = "transformers.modeling_attn_mask_utils"
PROVIDED = ("_create_4d_causal_attention_mask", "_prepare_4d_attention_mask")


def _create_4d_causal_attention_mask(input_shape: Any, dtype: Any, device: Any,
                                     past_key_values_length: int = 0,
                                     sliding_window: int | None = None) -> Any:
    """Additive 4-D causal mask ``(batch, 1, query, past + query)`` (transformers 4 semantics)."""
    import torch

    if sliding_window is not None and sliding_window <= 0:
        raise ValueError("Make sure that when passing `sliding_window` that its value is a"
                         f" strictly positive integer, not `{sliding_window}`")
    batch, query = int(input_shape[0]), int(input_shape[-1])
    if query <= 1 and sliding_window is None:
        return None
    past = int(past_key_values_length)
    rows = torch.arange(query, device=device).view(query, 1) + past  # absolute query positions
    cols = torch.arange(past + query, device=device).view(1, past + query)
    allowed = cols <= rows
    if sliding_window is not None:
        allowed = allowed & (cols >= rows - sliding_window)
    mask = torch.zeros((query, past + query), dtype=dtype, device=device)
    mask = mask.masked_fill(~allowed, torch.finfo(dtype).min)
    return mask[None, None].expand(batch, 1, query, past + query)


def _prepare_4d_attention_mask(mask: Any, dtype: Any, tgt_len: int | None = None) -> Any:
    """Expand a 2-D padding mask to an additive ``(batch, 1, tgt_len, src_len)`` mask."""
    import torch

    batch, source = mask.shape
    target = source if tgt_len is None else tgt_len
    keep = mask[:, None, None, :].expand(batch, 1, target, source).to(dtype) == 1
    out = torch.zeros((batch, 1, target, source), dtype=dtype, device=mask.device)
    return out.masked_fill(~keep, torch.finfo(dtype).min)


def _missing(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"{MODULE} was removed in transformers 5.24 (use transformers.masking_utils); the"
        f" stand-in that sglang-shims (patch tf5-attn-mask-utils-removed) registers for"
        f" sglang's CLIP provides only {', '.join(PROVIDED)}, not {name!r}")


def _build() -> types.ModuleType:
    module = types.ModuleType(MODULE, __doc__)
    module.__spec__ = importlib.machinery.ModuleSpec(
        MODULE, None, origin="sglang-shims:tf5-attn-mask-utils-removed")
    module.__package__ = "transformers"
    # shown by Python's "cannot import name X from M (<file>)" for names not provided
    module.__file__ = "<stand-in registered by sglang-shims patch tf5-attn-mask-utils-removed>"
    module._create_4d_causal_attention_mask = _create_4d_causal_attention_mask  # type: ignore[attr-defined]
    module._prepare_4d_attention_mask = _prepare_4d_attention_mask  # type: ignore[attr-defined]
    module.__getattr__ = _missing  # type: ignore[method-assign]
    module.__all__ = list(PROVIDED)  # type: ignore[attr-defined]
    return module


def apply(ctx: PatchContext) -> None:
    import transformers

    if MODULE in sys.modules or importlib.util.find_spec(MODULE) is not None:
        ctx.retire(f"{MODULE} exists in this transformers")
    module = _build()
    ctx.setitem(sys.modules, MODULE, module)
    ctx.setattr(transformers, "modeling_attn_mask_utils", module)
    ctx.note(f"registered a stand-in {MODULE} providing {', '.join(PROVIDED)}")
