"""tf5-chat-template-return-dict: sglang 0.5.1's OpenAI chat path, transformers 5.24 tokenizer.

A tiny byte-level BPE tokenizer with a chat template is trained and saved offline, loaded
with sglang's own get_tokenizer, and a /v1/chat/completions request is turned into
sglang's internal request by the real OpenAIServingChat code (only the tokenizer manager
and template manager it reads are stand-ins).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ._transformers import run_json, sglang_paths_fixture

pytestmark = pytest.mark.wheels

PATCH = "tf5-chat-template-return-dict"

CODE = """
import json, sys, tempfile, types
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
import transformers
from transformers import PreTrainedTokenizerFast

sentences = ["hello world", "the quick brown fox jumps over the lazy dog",
             "sglang serves models", "what is the weather like today"] * 4
bpe = Tokenizer(models.BPE(unk_token="<unk>"))
bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
bpe.decoder = decoders.ByteLevel()
bpe.train_from_iterator(sentences, trainers.BpeTrainer(
    vocab_size=400, special_tokens=["<unk>", "<|user|>", "<|assistant|>", "<|end|>"],
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
folder = tempfile.mkdtemp()
built = PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token="<unk>", eos_token="<|end|>")
built.chat_template = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}"
    "{% if not loop.last or m['role'] != 'assistant' %}<|end|>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}")
built.save_pretrained(folder)

from sglang.srt.hf_transformers_utils import get_tokenizer
from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat

tokenizer = get_tokenizer(folder)
chat = OpenAIServingChat.__new__(OpenAIServingChat)
chat.tokenizer_manager = types.SimpleNamespace(
    tokenizer=tokenizer, model_config=types.SimpleNamespace(is_multimodal=False),
    server_args=types.SimpleNamespace(tool_call_parser=None, reasoning_parser=None))
chat.template_manager = types.SimpleNamespace(
    chat_template_name=None, jinja_template_content_format="string")

def ids_of(messages, prefix=""):
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tokenizer.encode(text, add_special_tokens=False)
    return ids + (tokenizer.encode(prefix) if prefix else [])

def serve(**fields):
    request = ChatCompletionRequest(model="tiny", **fields)
    try:
        adapted, _ = chat._convert_to_internal_request(request)
        adapted.normalize_batch_and_arguments()
        out = {"input_ids": adapted.input_ids}
    except Exception as exc:
        out = {"error": type(exc).__name__ + ": " + str(exc)}
    out["kwargs_after"] = request.chat_template_kwargs
    return out

user = [{"role": "user", "content": "hello world"}]
import sglang_shims
print(json.dumps({
    "transformers": transformers.__version__,
    "tokenizer": type(tokenizer).__name__,
    "direct": type(tokenizer.apply_chat_template(user, tokenize=True)).__name__,
    "plain": serve(messages=user),
    "plain_expected": ids_of(user),
    "with_kwargs": serve(messages=user, chat_template_kwargs={"enable_thinking": False}),
    "continued": serve(messages=user + [{"role": "assistant", "content": "the quick"}],
                       continue_final_message=True),
    "continued_expected": ids_of(user, "the quick"),
    "state": sglang_shims.status()[PATCH]["state"],
}))
""".replace("PATCH", repr(PATCH))


paths = sglang_paths_fixture()


def run(paths: tuple[Path, ...], **env: str) -> dict[str, Any]:
    data = run_json(CODE, paths, env)
    assert data["tokenizer"] == "TokenizersBackend"
    # the transformers 5 default the patch is about: tokenize=True gives a BatchEncoding
    assert data["direct"] == "BatchEncoding"
    return data


def test_stock_chat_requests_fail(paths: tuple[Path, ...]) -> None:
    data = run(paths, SGLANG_SHIMS_DISABLE=PATCH)
    assert data["state"] == "disabled"
    assert data["plain"]["error"] == \
        "ValueError: input_ids should be a list of lists for batch processing."
    assert data["continued"]["error"].startswith(
        "TypeError: unsupported operand type(s) for +=: 'BatchEncoding' and 'list'")


def test_patched_chat_requests_get_token_ids(paths: tuple[Path, ...]) -> None:
    data = run(paths)
    assert data["state"] == "applied"
    expected = data["plain_expected"]
    assert expected[0] == 1 and expected[-2:] == [3, 2]  # <|user|> ... <|end|><|assistant|>
    assert data["plain"]["input_ids"] == expected
    assert data["with_kwargs"]["input_ids"] == expected
    assert data["continued"]["input_ids"] == data["continued_expected"]
    # the request keeps what the client sent
    assert data["plain"]["kwargs_after"] is None
    assert data["with_kwargs"]["kwargs_after"] == {"enable_thinking": False}
