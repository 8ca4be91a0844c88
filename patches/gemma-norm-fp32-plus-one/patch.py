"""Gemma 1: keep the checkpoint's norm weights and add the 1 in fp32 at run time.

Gemma's RMSNorm scales by ``(1 + w)``.  sglang's ``GemmaForCausalLM.load_weights``
(``models/gemma.py``) does ``loaded_weight += 1.0`` on every ``*norm.weight`` tensor
-- in the checkpoint dtype, so for a bf16 checkpoint ``1 + w`` is rounded to bf16
(error up to 2**-8 ~= 0.0039 for values in [1, 2)) -- and then uses the plain Llama
``RMSNorm``, which multiplies by that rounded weight.  transformers' ``GemmaRMSNorm``
and sglang's own ``GemmaRMSNorm`` (used by Gemma 2) compute ``1 + w`` in fp32.

The patch makes Gemma 1 use sglang's ``GemmaRMSNorm`` (the ``RMSNorm`` name in the
gemma module is rebound; the layers look it up when the model is built) and keeps the
checkpoint value in it: ``load_weights`` is given each ``*norm.weight`` tensor of a
``GemmaRMSNorm`` module as ``float64(w) - 1``, so sglang's own ``+= 1.0`` runs in
float64 and gives back exactly ``w`` (exact for |w| >= 2**-29; the bits of smaller
weights are lost by an fp32 ``1 + w`` anyway), which the weight loader stores in the
parameter's dtype unchanged.  The ``+ 1`` then happens at run time in fp32:
``GemmaRMSNorm.forward_native`` (CPU, and ROCm up to 0.5.9), sgl-kernel / flashinfer
``gemma_rmsnorm`` and ``gemma_fused_add_rmsnorm`` on CUDA.  (ROCm from 0.5.10 forms
``1 + w`` in the weight dtype in ``forward_hip``: no better, and no worse, than stock.)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from sglang_shims.patching import PatchContext

NORM = "norm.weight"  # the test sglang's load_weights uses to pick the tensors it shifts


def _lands_in(model: Any, name: str, norm_class: type) -> bool:
    """Is checkpoint tensor ``name`` the weight of a ``norm_class`` module of ``model``?

    Norm weights keep their checkpoint names in sglang's Gemma; a model built before
    the patch applied still has stock RMSNorm modules, which need the stock shift.
    """
    try:
        return isinstance(model.get_submodule(name.rsplit(".", 1)[0]), norm_class)
    except AttributeError:
        return False


def unshifted(weights: Iterable[tuple[str, Any]], model: Any,
              norm_class: type) -> Iterator[tuple[str, Any]]:
    """Pre-compensate the ``+= 1.0`` that load_weights applies to norm weights."""
    import torch

    for name, tensor in weights:
        if (NORM in name and isinstance(tensor, torch.Tensor) and tensor.is_floating_point()
                and _lands_in(model, name, norm_class)):
            yield name, tensor.to(torch.float64) - 1.0
        else:
            yield name, tensor


def apply(ctx: PatchContext) -> None:
    gemma = ctx.module
    # gemma.py imported RMSNorm from it, so the layer module is loaded already
    layernorm = sys.modules.get("sglang.srt.layers.layernorm") \
        or importlib.import_module("sglang.srt.layers.layernorm")
    gemma_norm = getattr(layernorm, "GemmaRMSNorm", None)
    if gemma_norm is None:
        raise RuntimeError("sglang.srt.layers.layernorm has no GemmaRMSNorm")
    if gemma.RMSNorm is gemma_norm:
        ctx.retire("the Gemma model already uses GemmaRMSNorm")

    def load_weights(wrapped: Any, instance: Any, args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> Any:
        if args:
            args = (unshifted(args[0], instance, gemma_norm), *args[1:])
        else:
            kwargs = {**kwargs, "weights": unshifted(kwargs["weights"], instance, gemma_norm)}
        return wrapped(*args, **kwargs)

    ctx.setattr(gemma, "RMSNorm", gemma_norm)
    ctx.wrap(gemma.GemmaForCausalLM, "load_weights", load_weights)
    ctx.note(f"Gemma 1 norms are {gemma_norm.__module__}.GemmaRMSNorm holding the checkpoint"
             " weight; 1 + w is computed in fp32 at run time")
