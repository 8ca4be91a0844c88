"""output-ids-prompt-tail: sglang's detokenizer returns the prompt's tail in output_ids.

Driven through sglang's own objects from the real wheels: a ``Req`` from
``schedule_batch`` produces the detokenization window (``init_incremental_detokenize``),
the batch is built as the scheduler's output mixin builds it (the window sliced from
``send_decode_id_offset``, the generated ids from ``send_token_offset``), and the real
``DetokenizerManager.handle_batch_token_id_out`` turns it into the string batch whose
``output_ids`` the tokenizer manager returns to clients.  Only the tokenizer is a
stand-in (the method needs ``batch_decode`` and nothing else of it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.run import need

pytestmark = pytest.mark.wheels

PATCH = "output-ids-prompt-tail"
PROMPT = list(range(11, 31))
CHUNKS = [[101, 102, 103], [104, 105]]

CODE = program("patches/output_ids_prompt_tail")

# the two ends of the range (its middle releases are checked statically by the matrix)
VERSIONS = ["0.5.1", "0.5.4.post2"]


@pytest.fixture(scope="module")
def kernel(standin_kernel: Callable[..., Path]) -> Path:
    for module in ("torch", "transformers", "zmq"):
        need(module)
    return standin_kernel("0.3.21")


def run(paths: tuple[Path, ...], **env: str) -> dict[str, Any]:
    return run_json(CODE, paths, env, args=(json.dumps(PROMPT), json.dumps(CHUNKS)),
                    timeout=300)


@pytest.mark.parametrize("version", VERSIONS)
def test_output_ids_are_the_generated_tokens(version: str, kernel: Path,
                                             sglang_release: Callable[[str], Path]) -> None:
    paths = (sglang_release(version), kernel)
    stock = run(paths, SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["state"] == "disabled"
    # the bug, as clients see it: the first chunk starts with the prompt's last 5 ids
    assert stock["chunks"] == [PROMPT[-5:] + CHUNKS[0], CHUNKS[1]]

    patched = run(paths)
    assert patched["state"] == "applied"
    assert patched["chunks"] == CHUNKS
    assert patched["notes"] == []


def test_batch_without_output_ids_is_left_stock_and_noted(
        kernel: Path, sglang_release: Callable[[str], Path]) -> None:
    data = run((sglang_release("0.5.1"), kernel), DROP_OUTPUT_IDS="1")
    assert data["state"] == "applied"
    assert data["chunks"] == [PROMPT[-5:] + CHUNKS[0], CHUNKS[1]]
    notes = data["notes"]
    assert isinstance(notes, list) and len(notes) == 1
    assert "passed through stock" in notes[0]
