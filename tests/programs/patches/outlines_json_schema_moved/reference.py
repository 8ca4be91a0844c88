"""The table from outlines 0.1.8's own ``json_schema.py`` (argv[1]), loaded from its file."""
import importlib.util
import json
import sys

from cases import table

spec = importlib.util.spec_from_file_location("old_json_schema", sys.argv[1])
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
print(json.dumps(table(old.build_regex_from_schema)))
