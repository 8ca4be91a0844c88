"""Give sglang < 0.5.10 back ``config.rope_theta`` and ``partial_rotary_factor`` (transformers 5).

transformers 5 keeps a config's RoPE settings only in ``config.rope_parameters``
(huggingface/transformers PR 42255: "users will no longer have access to
``config.rope_theta``"); ``partial_rotary_factor`` followed in 5.20.  sglang before
0.5.10 reads the old attributes in every model file:

* ``getattr(config, "rope_theta", 10000)`` (llama.py; 1000000 in qwen2/qwen3 ...) silently
  returns the default, so the rotary base is wrong and the logits drift;
* ``config.rope_theta`` (llama4, olmo, stablelm ...) raises AttributeError;
* ``getattr(config, "partial_rotary_factor", 1)`` silently rotates the whole head.

Both names are put back on ``PretrainedConfig`` as read-through properties.  An
attribute set on the instance wins (sglang's own configs assign ``self.rope_theta``);
otherwise the value comes from ``rope_parameters``.  For per-layer-type parameters
(``{"full_attention": {...}, "sliding_attention": {...}}``) ``rope_theta`` answers the
full-attention layers' value, which is what transformers 4 kept in ``config.rope_theta``
(Gemma 3: 1e6 global, 1e4 local in ``rope_local_base_freq``).  When the value is not
known the property raises AttributeError exactly as before, so ``getattr`` defaults and
transformers' own ``getattr(self, "rope_theta", default)`` during standardisation behave
as in stock transformers 5.  Assigning sets the instance attribute, as before.
"""

from __future__ import annotations

from typing import Any

from sglang_shims.patching import PatchContext

NAMES = ("rope_theta", "partial_rotary_factor")
# The layer type whose parameters transformers 4 exposed as config.rope_theta.
PRIMARY_LAYER_TYPE = "full_attention"


def _nested_value(params: dict[str, Any], name: str) -> Any:
    """``name`` from per-layer-type parameters, or AttributeError.

    Answered only when every layer type carries it: while transformers standardises a
    config it reads ``getattr(self, "rope_theta", default)`` to fill the layer types that
    lack one, and there the stock answer (no attribute) must stand.
    """
    nested = {k: v for k, v in params.items() if isinstance(v, dict)}
    if nested and all(name in v for v in nested.values()):
        primary = nested.get(PRIMARY_LAYER_TYPE) or next(iter(nested.values()))
        return primary[name]
    raise AttributeError(name)


def _read(config: Any, name: str) -> Any:
    namespace = vars(config)
    if name in namespace:
        return namespace[name]
    params = namespace.get("rope_parameters")
    if params is None and "rope_parameters" not in namespace:
        params = getattr(config, "rope_parameters", None)
    if isinstance(params, dict):
        if name in params:
            return params[name]
        return _nested_value(params, name)
    raise AttributeError(name)


def _make_property(name: str) -> property:
    def getter(self: Any) -> Any:
        try:
            return _read(self, name)
        except AttributeError:
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}") from None

    def setter(self: Any, value: Any) -> None:
        vars(self)[name] = value

    def deleter(self: Any) -> None:
        try:
            del vars(self)[name]
        except KeyError:
            raise AttributeError(name) from None

    getter.__name__ = setter.__name__ = deleter.__name__ = name
    doc = (f"sglang-shims: ``{name}`` read from ``rope_parameters`` (transformers 5 moved it"
           " there); an instance attribute wins.")
    return property(getter, setter, deleter, doc)


def apply(ctx: PatchContext) -> None:
    from transformers import configuration_utils

    base = getattr(configuration_utils, "PreTrainedConfig", None) \
        or configuration_utils.PretrainedConfig
    missing = [n for n in NAMES if not hasattr(base, n)]
    if "rope_theta" not in missing:
        ctx.retire("transformers' PretrainedConfig answers rope_theta itself")
    for name in missing:
        ctx.setattr(base, name, _make_property(name))
    ctx.note(f"PretrainedConfig.{', '.join(missing)} read through to rope_parameters")
