"""The remote tokenizer module of argv[1], imported as transformers' dynamic module loader
imports remote code: the byte table it builds, and whether it round-trips."""
import json
import sys

from patch_state import print_result

sys.path.insert(0, sys.argv[1])
import transformers

result = {"transformers": transformers.__version__}
try:
    import tokenization_remote
    table = tokenization_remote.ByteLevelTable()
    result["table"] = {str(k): v for k, v in table.byte_encoder.items()}
    result["roundtrip"] = all(table.byte_decoder[table.byte_encoder[b]] == b
                              for b in range(256))
except Exception as exc:
    result["error"] = f"{type(exc).__name__}: {exc}"
print_result(result, "tf5-gpt2-bytes-to-unicode")
