"""Compile the norm and activation kernels for sm_90 with PDL, released early and late, and
print how many of each grid-dependency instruction their PTX holds (no GPU needed)."""

import json

from sglang_shims.kernels.ops.activation.triton import act_and_mul_kernel
from sglang_shims.kernels.ops.norm.triton import rmsnorm_kernel
from sm90_ptx import sm90_ptx

NORM = {"x_ptr": "*bf16", "res_ptr": "*bf16", "w_ptr": "*bf16", "out_ptr": "*bf16",
        "n_rows": "i32", "n_cols_q": "i32", "stride_x_q": "i32", "stride_res_q": "i32",
        "stride_out_q": "i32", "eps": "fp32", "ALIGN": 8, "WEIGHT_OFFSET": 0.0,
        "HAS_RESIDUAL": True, "SINGLE_PASS": True, "BLOCK_M": 1, "BLOCK_N": 4096}
ACT = {"x_ptr": "*bf16", "out_ptr": "*bf16", "d_q": "i32", "stride_x_q": "i32",
       "stride_out_q": "i32", "ACT": 0, "BLOCK": 1024, "ALIGN": 8}


def counts(kernel, params, late):
    ptx = sm90_ptx(kernel, {**params, "USE_PDL": True, "PDL_LATE": late},
                   options={"launch_pdl": True})
    return [ptx.count("griddepcontrol.wait"), ptx.count("griddepcontrol.launch_dependents")]


print(json.dumps({f"{name} {'late' if late else 'early'}": counts(kernel, params, late)
                  for name, kernel, params in (("rmsnorm", rmsnorm_kernel, NORM),
                                               ("act_and_mul", act_and_mul_kernel, ACT))
                  for late in (False, True)}))
