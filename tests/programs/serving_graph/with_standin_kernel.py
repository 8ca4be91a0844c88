"""sglang's serving graph with a stand-in kernel: which modules import (argv[1:], in
order), whether sglang takes its CUDA branches, every patch's state and the transformers
in use, as one JSON line."""
import fake_cuda
import json
import sys

from import_each import import_each

results = import_each(sys.argv[1:])
import sglang_shims
from sglang.srt import utils
states = {k: v["state"] for k, v in sglang_shims.status().items()}
import transformers
print(json.dumps({"results": results, "is_cuda": bool(utils.is_cuda()), "states": states,
                  "transformers": transformers.__version__}))
