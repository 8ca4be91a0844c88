"""The table from sglang's outlines backend, which imports on outlines 0.1.11 only patched."""
from cases import table
from import_attempt import import_attempt
from patch_state import print_result

result = {}
outlines_backend = import_attempt(result, "sglang.srt.constrained.outlines_backend")
if outlines_backend is not None:
    result["table"] = table(outlines_backend.build_regex_from_object)
    import outlines.fsm.json_schema as ofj
    import outlines_core.fsm.json_schema as ocj
    result["same_function"] = ofj.build_regex_from_schema is ocj.build_regex_from_schema
print_result(result, "outlines-json-schema-moved")
