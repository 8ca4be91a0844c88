"""The compile check with an FP8 matmul launch rule planted that fits sm_90's 227 KiB a
block and not sm_120's 99 KiB (5 stages of 128 x 128 x 128 fp8 tiles); argv: Triton's
cache folder, the JSON report's path.  Prints the command's exit status."""
import json
import sys

from sglang_shims.kernels.ops.fp8_gemm import launch
from tools.gpus import compile_check


def planted(m, n, *, decode_tiles, dev):
    return {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 8,
            "num_stages": 5}


launch.config = planted
code = compile_check.main(["--arch", "sm_90", "--arch", "sm_120", "--sample", "ci",
                           "--jobs", "2", "--cache", sys.argv[1], "--json", sys.argv[2],
                           "--only", "fp8_blockwise_scaled_mm out=torch.bfloat16 m=4096"])
print(json.dumps(code))
