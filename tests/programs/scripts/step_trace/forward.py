"""Three forward calls through the (stand-in) ``ModelRunner`` under the step trace's
``sitecustomize``; prints whether the trace wrapped ``forward``, what the calls returned,
whether the shadowed ``sitecustomize`` ran, and the trace's rows."""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

from sglang.srt.model_executor.model_runner import ModelRunner


class Mode:
    def __init__(self, decode: bool) -> None:
        self.decode = decode

    def is_decode(self) -> bool:
        return self.decode


class Batch:
    def __init__(self, size: int, decode: bool) -> None:
        self.batch_size = size
        self.forward_mode = Mode(decode)


runner = ModelRunner()
got = [runner.forward(Batch(4, False), 1, flag=True)]
gc.collect()
got += [runner.forward(Batch(8, True)), runner.forward(Batch(8, True))]
folder = Path(sys.argv[1])
rows = [json.loads(line) for path in sorted(folder.glob("steps-*.jsonl"))
        for line in path.read_text().splitlines()]
print(json.dumps({"wrapped": hasattr(ModelRunner.forward, "__wrapped__"),
                  "returned": got, "chained": os.environ.get("STEP_TRACE_CHAINED"),
                  "rows": rows}))
