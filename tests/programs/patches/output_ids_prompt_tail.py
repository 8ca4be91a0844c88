"""sglang's detokenizer driven as its scheduler drives it: the ``output_ids`` of each chunk
of a request's string batch, for the prompt argv[1] and the generated chunks argv[2]."""
import dataclasses
import json
import os
import sys

from sglang.srt.managers import detokenizer_manager as dm, io_struct
from sglang.srt.managers.schedule_batch import Req
from sglang.srt.sampling.sampling_params import SamplingParams
import sglang_shims

from patch_state import patch_entry

PROMPT, CHUNKS = json.loads(sys.argv[1]), json.loads(sys.argv[2])
MISSING = os.environ.get("DROP_OUTPUT_IDS") == "1"
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
    batch = batch_cls(**{f.name: values.get(f.name, []) for f in dataclasses.fields(batch_cls)
                         if f.init and f.name != "http_worker_ipcs"})
    # copied at once: the stock batch shares its lists with the detokenizer's state
    chunks.append(list(mgr.handle_batch_token_id_out(batch).output_ids[0]))
entry = patch_entry("output-ids-prompt-tail") or {}
print(json.dumps({"chunks": chunks, "state": entry.get("state"),
                  "notes": entry.get("notes", [])}))
