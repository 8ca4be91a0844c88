"""``sglang-shims`` with the arguments of argv[1:], in-process: its output, then a last JSON
line with its exit code and the heavy packages (torch, sglang, ...) it imported."""
import json
import sys

from sglang_shims.cli import main

HEAVY = ("torch", "sglang", "transformers", "sgl_kernel", "triton")
code = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
print(json.dumps({"exit": code, "heavy": heavy}))
