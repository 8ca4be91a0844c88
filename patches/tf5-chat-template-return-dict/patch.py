"""Make sglang's OpenAI chat path ask transformers 5 for token ids, as it did on transformers 4.

``OpenAIServingChat._apply_jinja_template`` (sglang 0.4.8 - 0.5.7) tokenizes the prompt
with ``tokenizer.apply_chat_template(messages, tokenize=True, ...,
**(request.chat_template_kwargs or {}))`` and uses the result as ``list[int]``
(``prompt_ids += encoded``, ``GenerateReqInput(input_ids=prompt_ids)``).  transformers
5.0.0rc1 changed the default of ``return_dict`` to True (PRs 41626 / 42567), so the call
now returns a ``BatchEncoding`` and every ``/v1/chat/completions`` request fails.

sglang 0.5.8 fixed it by passing ``return_dict=False``.  This patch does exactly that for
the releases before, through the door sglang itself opens: for the duration of one
``_apply_jinja_template`` call, ``return_dict=False`` is added to the request's
``chat_template_kwargs``, which sglang splices into both of its ``apply_chat_template``
calls.  The request's own value is restored afterwards.  Nothing in transformers is
touched, no other caller of ``apply_chat_template`` is affected, a ``return_dict`` the
client sent is respected, and tokenizers whose ``apply_chat_template`` has no
``return_dict`` parameter (sglang's TikTokenTokenizer) get nothing extra.
"""

from __future__ import annotations

import inspect
from typing import Any

from sglang_shims.patching import PatchContext

CLASS = "OpenAIServingChat"
METHOD = "_apply_jinja_template"

_ACCEPTS: dict[type, bool] = {}


def _accepts_return_dict(tokenizer: Any) -> bool:
    """Does this tokenizer's ``apply_chat_template`` take ``return_dict`` (by name)?"""
    kind = type(tokenizer)
    if kind not in _ACCEPTS:
        method = getattr(kind, "apply_chat_template", None)
        try:
            params = inspect.signature(method).parameters if method is not None else {}
        except (TypeError, ValueError):
            params = {}
        _ACCEPTS[kind] = "return_dict" in params
    return _ACCEPTS[kind]


def _request_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args[0] if args else kwargs.get("request")


def apply(ctx: PatchContext) -> None:
    cls = getattr(ctx.module, CLASS)
    original = vars(cls)[METHOD]
    try:
        source = inspect.getsource(original)
    except (OSError, TypeError):
        source = ""
    if "return_dict" in source:
        ctx.retire(f"{CLASS}.{METHOD} passes return_dict to apply_chat_template itself")
    if "chat_template_kwargs" not in source or "apply_chat_template(" not in source:
        raise RuntimeError(f"{CLASS}.{METHOD} does not splice request.chat_template_kwargs"
                           " into apply_chat_template; nothing safe to do")

    def apply_jinja_template(wrapped: Any, instance: Any, args: tuple[Any, ...],
                             kwargs: dict[str, Any]) -> Any:
        request = _request_of(args, kwargs)
        manager = getattr(instance, "tokenizer_manager", None)
        tokenizer = getattr(manager, "tokenizer", None)
        if request is None or tokenizer is None or not _accepts_return_dict(tokenizer):
            return wrapped(*args, **kwargs)
        sent = getattr(request, "chat_template_kwargs", None)
        if sent and "return_dict" in sent:
            return wrapped(*args, **kwargs)  # the client chose; as on transformers 4
        request.chat_template_kwargs = {**(sent or {}), "return_dict": False}
        try:
            return wrapped(*args, **kwargs)
        finally:
            request.chat_template_kwargs = sent

    ctx.wrap(cls, METHOD, apply_jinja_template)
