"""Let sglang's Gemma 3 build its two RoPE tables from transformers 5 configs.

sglang 0.4.4.post2 - 0.5.9 (``sglang/srt/models/gemma3_causal.py``) reads Gemma 3's
RoPE settings the transformers 4 way:

* ``config.rope_local_base_freq`` -- the sliding-window layers' base (10 000).
  transformers 5 keeps it only in ``config.rope_parameters["sliding_attention"]``;
  the attribute is gone, so building the first (sliding) layer raises AttributeError.
* ``Gemma3RotaryEmbedding`` picks ``ROPE_INIT_FUNCTIONS[rope_type]`` from
  ``config.rope_scaling`` -- in transformers 5 an alias of ``rope_parameters``, which
  for Gemma 3 is a dict *per layer type*, so the type is ``None`` -- and from 0.5.7 the
  fallback ``"default"``, which transformers 5 no longer registers there.  KeyError.

Both are fixed here without touching transformers' behaviour elsewhere:

1. ``Gemma3TextConfig.rope_local_base_freq`` becomes a property that answers an
   explicitly set value first, else ``rope_parameters["sliding_attention"]["rope_theta"]``,
   else -- on the copy sglang makes for the local layers, whose RoPE dict it flattens
   right after setting ``rope_theta`` to the local base -- that flat ``rope_theta``
   (AttributeError otherwise, as in stock transformers 5).
2. ``Gemma3RotaryEmbedding.__init__`` computes the inverse frequencies itself when the
   config is a transformers 5 one: the global table from
   ``rope_parameters["full_attention"]`` (``default`` or ``linear`` -- what Gemma 3
   checkpoints use), the local table from the copy sglang makes for it (its
   ``rope_theta`` set to the local base, ``rope_scaling`` set to ``default``).  The
   arithmetic is transformers 4.55's ``_compute_default_rope_parameters`` (and
   ``linear`` divides by the factor), so the tables are the ones sglang built on
   transformers 4.  Any other RoPE type is refused with a clear error.  Configs
   without ``rope_parameters`` (transformers 4) take the stock path.
3. ``Gemma3ForCausalLM._tied_weights_keys``, a transformers 4 list, becomes the empty
   mapping transformers 5 expects (the model has no ``lm_head`` to tie), so that
   ``post_init`` no longer fails on ``list.keys()``.
"""

from __future__ import annotations

from typing import Any

from sglang_shims.patching import PatchContext, argument, tie_nothing

CLASS = "Gemma3RotaryEmbedding"
LOCAL = "rope_local_base_freq"
_OWN = "_sglang_shims_rope_local_base_freq"
SUPPORTED = ("default", "linear")


def _local_base(self: Any) -> Any:
    own = self.__dict__.get(_OWN)
    if own is not None:
        return own
    params = getattr(self, "rope_parameters", None)
    if isinstance(params, dict):
        sliding = params.get("sliding_attention")
        if isinstance(sliding, dict) and sliding.get("rope_theta") is not None:
            return sliding["rope_theta"]
        if "full_attention" not in params and params.get("rope_theta") is not None:
            # flattened: sglang's copy for the local layers, whose rope_theta it has just
            # set to the local base before setting rope_scaling (which flattens the dict)
            return params["rope_theta"]
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {LOCAL!r}")


def _set_local_base(self: Any, value: Any) -> None:
    """Set it where transformers 5 keeps it, when that place exists."""
    params = getattr(self, "rope_parameters", None)
    sliding = params.get("sliding_attention") if isinstance(params, dict) else None
    if isinstance(sliding, dict):
        sliding["rope_theta"] = value
        self.__dict__.pop(_OWN, None)
    else:
        self.__dict__[_OWN] = value


def rope_spec(config: Any) -> tuple[str, float, float] | None:
    """(rope type, base, linear factor) for a transformers 5 config; None for a v4 one."""
    params = getattr(config, "rope_parameters", None)
    if not isinstance(params, dict):
        return None
    if isinstance(params.get("full_attention"), dict):  # the model's own config: global
        chosen = params["full_attention"]
        theta = chosen.get("rope_theta")
    else:  # sglang's copy for the local table: rope_theta set, rope_scaling "default"
        chosen = params
        own = config.__dict__.get("rope_theta")
        theta = own if own is not None else chosen.get("rope_theta")
    kind = chosen.get("rope_type", chosen.get("type")) or "default"
    if theta is None:
        raise ValueError(f"Gemma 3 RoPE parameters without rope_theta: {params!r}")
    return str(kind), float(theta), float(chosen.get("factor", 1.0) or 1.0)


def inverse_frequencies(config: Any, kind: str, theta: float, factor: float,
                        device: Any = None) -> Any:
    import torch

    if kind not in SUPPORTED:
        raise ValueError(f"sglang-shims tf5-gemma3-rope: RoPE type {kind!r} is not supported "
                         f"(only {', '.join(SUPPORTED)}); upgrade sglang to >= 0.5.10 or "
                         "use transformers 4")
    head_dim = getattr(config, "head_dim", None) or \
        config.hidden_size // config.num_attention_heads
    dim = int(head_dim * (getattr(config, "partial_rotary_factor", None) or 1.0))
    exponents = torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float)
    inv_freq = 1.0 / (theta ** (exponents / dim))
    return inv_freq / factor if kind == "linear" else inv_freq


def apply(ctx: PatchContext) -> None:
    import torch

    config_cls = ctx.module.Gemma3TextConfig
    if LOCAL in vars(config_cls):
        ctx.retire(f"Gemma3TextConfig already defines {LOCAL} itself")
    probe = config_cls()
    if hasattr(probe, LOCAL):
        ctx.retire(f"Gemma3TextConfig instances still have {LOCAL} (transformers 4 layout)")
    ctx.setattr(config_cls, LOCAL, property(_local_base, _set_local_base))

    rotary = getattr(ctx.module, CLASS)
    config_of, device_of = (argument(rotary.__init__, name) for name in ("config", "device"))

    def init(wrapped: Any, instance: Any, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> None:
        config, device = config_of(instance, args, kwargs), device_of(instance, args, kwargs)
        spec = rope_spec(config)
        if spec is None:
            wrapped(*args, **kwargs)
            return
        kind, theta, factor = spec
        torch.nn.Module.__init__(instance)
        inv_freq = inverse_frequencies(config, kind, theta, factor, device)
        instance.rope_type = kind
        instance.max_seq_len_cached = config.max_position_embeddings
        instance.original_max_seq_len = config.max_position_embeddings
        instance.config = config
        instance.rope_init_fn = lambda cfg, dev=None, seq_len=None: (
            inverse_frequencies(cfg, kind, theta, factor, dev), 1.0)
        instance.attention_scaling = 1.0
        instance.register_buffer("inv_freq", inv_freq, persistent=False)
        # No ``original_inv_freq``: only the dynamic RoPE types (refused above) read it, and
        # transformers 5's init_weights recomputes the table of every "*RotaryEmbedding"
        # that has one -- through ROPE_INIT_FUNCTIONS, which cannot read these configs.

    ctx.wrap(rotary, "__init__", init)
    # sglang's Gemma3ForCausalLM declares the v4 list ["lm_head.weight"] for a module that
    # has no lm_head (logits come from embed_tokens): the faithful v5 value ties nothing.
    tie_nothing(ctx, getattr(ctx.module, "Gemma3ForCausalLM", None))
