"""sglang's DeepSeek sparse-attention kernel module on the tilelang beside it: whether it
imports, and the pass options each of its kernels is declared with."""
from importlib import metadata

from import_attempt import import_attempt
from patch_state import print_result

import tilelang

result = {"tilelang": metadata.version("tilelang")}
module = import_attempt(result, "sglang.srt.layers.attention.nsa.tilelang_kernel")
if module is not None:
    result["configs"] = [None if c is None else sorted([getattr(k, "value", k), v]
                                                       for k, v in c.items())
                         for c in tilelang.JIT_CONFIGS]
print_result(result, "tilelang-fast-math-key-removed")
