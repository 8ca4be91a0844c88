"""tf5-chat-template-return-dict: sglang 0.5.1's OpenAI chat path, transformers 5.24 tokenizer.

A tiny byte-level BPE tokenizer with a chat template is trained and saved offline, loaded
with sglang's own get_tokenizer, and a /v1/chat/completions request is turned into
sglang's internal request by the real OpenAIServingChat code (only the tokenizer manager
and template manager it reads are stand-ins).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.patch_runs import run_applied, run_stock
from ..support.programs import program
from ..support.transformers5 import TRANSFORMERS5, sglang_paths_fixture

pytestmark = pytest.mark.wheels

PATCH = "tf5-chat-template-return-dict"

CODE = program("patches/tf5_chat_template_return_dict")

# In every run, stock and patched: transformers 5's tokenizer, and the transformers 5
# default the patch is about (apply_chat_template's tokenize=True gives a BatchEncoding).
TRANSFORMERS5_TOKENIZER = {"tokenizer": "TokenizersBackend", "direct": "BatchEncoding"}

paths = sglang_paths_fixture()


def test_stock_chat_requests_fail(paths: tuple[Path, ...]) -> None:
    data = run_stock(CODE, paths, PATCH, transformers=TRANSFORMERS5,
                     expect=TRANSFORMERS5_TOKENIZER)
    assert data["plain"]["error"] == \
        "ValueError: input_ids should be a list of lists for batch processing."
    assert data["continued"]["error"].startswith(
        "TypeError: unsupported operand type(s) for +=: 'BatchEncoding' and 'list'")


def test_patched_chat_requests_get_token_ids(paths: tuple[Path, ...]) -> None:
    data = run_applied(CODE, paths, PATCH, transformers=TRANSFORMERS5,
                       expect=TRANSFORMERS5_TOKENIZER)
    expected = data["plain_expected"]
    assert expected[0] == 1 and expected[-2:] == [3, 2]  # <|user|> ... <|end|><|assistant|>
    assert data["plain"]["input_ids"] == expected
    assert data["with_kwargs"]["input_ids"] == expected
    assert data["continued"]["input_ids"] == data["continued_expected"]
    # the request keeps what the client sent
    assert data["plain"]["kwargs_after"] is None
    assert data["with_kwargs"]["kwargs_after"] == {"enable_thinking": False}
