"""The built-in patches folder found with ``importlib.resources.files`` broken (argv[1], if
given: a folder put first on the path): the folder and the warnings."""
import importlib.resources
import json
import sys

if len(sys.argv) > 1:
    sys.path.insert(0, sys.argv[1])


def broken(*args, **kwargs):
    raise RuntimeError("resources broken")


importlib.resources.files = broken
from sglang_shims.catalog import load

warnings = []
root = load.builtin_root(warnings)
print(json.dumps([str(root), warnings]))
