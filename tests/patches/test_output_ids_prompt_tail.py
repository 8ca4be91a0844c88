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

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.run import need
from ._transformers import run_json

pytestmark = pytest.mark.wheels

PATCH = "output-ids-prompt-tail"
PROMPT = list(range(11, 31))
CHUNKS = [[101, 102, 103], [104, 105]]

CODE = f"""
import dataclasses, json
from sglang.srt.managers import detokenizer_manager as dm, io_struct
from sglang.srt.managers.schedule_batch import Req
from sglang.srt.sampling.sampling_params import SamplingParams
import sglang_shims

PROMPT, CHUNKS = {PROMPT!r}, {CHUNKS!r}
MISSING = __import__("os").environ.get("DROP_OUTPUT_IDS") == "1"
batch_cls = getattr(io_struct, "BatchTokenIDOutput", None) or io_struct.BatchTokenIDOut

class Tokenizer:
    def batch_decode(self, seqs, **kwargs):
        return [" ".join(map(str, s)) for s in seqs]

mgr = dm.DetokenizerManager.__new__(dm.DetokenizerManager)
mgr.tokenizer = Tokenizer()
mgr.decode_status = dm.LimitedCapacityDict(capacity=8)
mgr.is_dummy = mgr.is_tool_call_parser_gpt_oss = mgr.disable_tokenizer_batch_decode = False
req = Req("r0", "", list(PROMPT), SamplingParams(max_new_tokens=16))
chunks = []
for new in CHUNKS:
    req.output_ids.extend(new)
    window, read_offset = req.init_incremental_detokenize()
    sent_window = getattr(req, "send_decode_id_offset", 0)
    sent_tokens = getattr(req, "send_token_offset", 0)
    values = dict(rids=["r0"], finished_reasons=[None], decoded_texts=[req.decoded_text],
                  decode_ids=[list(window[sent_window:])], read_offsets=[read_offset],
                  output_ids=None if MISSING else [req.output_ids[sent_tokens:]],
                  skip_special_tokens=[True], spaces_between_special_tokens=[True],
                  no_stop_trim=[False], prompt_tokens=[len(PROMPT)],
                  completion_tokens=[len(req.output_ids)], cached_tokens=[0],
                  spec_verify_ct=[0])
    req.send_decode_id_offset = len(window)
    req.send_token_offset = len(req.output_ids)
    batch = batch_cls(**{{f.name: values.get(f.name, []) for f in dataclasses.fields(batch_cls)
                         if f.init and f.name != "http_worker_ipcs"}})
    # copied at once: the stock batch shares its lists with the detokenizer's state
    chunks.append(list(mgr.handle_batch_token_id_out(batch).output_ids[0]))
entry = sglang_shims.status().get("{PATCH}", {{}})
print(json.dumps({{"chunks": chunks, "state": entry.get("state"),
                  "notes": entry.get("notes", [])}}))
"""

# the two ends of the range (its middle releases are checked statically by the matrix)
VERSIONS = ["0.5.1", "0.5.4.post2"]


@pytest.fixture(scope="module")
def kernel(standin_kernel: Callable[..., Path]) -> Path:
    for module in ("torch", "transformers", "zmq"):
        need(module)
    return standin_kernel("0.3.21")


def run(paths: tuple[Path, ...], **env: str) -> dict[str, Any]:
    return run_json(CODE, paths, env, timeout=300, transformers=None)


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
