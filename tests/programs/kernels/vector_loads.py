"""The global loads of the kernels that take their counts divided by ``ALIGN`` (norm, gated
activation, per-token FP8 quantiser, MoE sum), compiled for sm_90 (no GPU needed) on bf16
rows at ``ALIGN`` 1 and 8; prints {"kernel ALIGN": sorted load instructions}."""
import json
import re

from sglang_shims.kernels.ops.activation.triton import act_and_mul_kernel
from sglang_shims.kernels.ops.fp8_quant.triton import per_token_quant_kernel
from sglang_shims.kernels.ops.moe_align.triton import moe_sum_kernel
from sglang_shims.kernels.ops.norm.triton import rmsnorm_kernel
from sm90_ptx import sm90_ptx


def norm(align):
    return {"x_ptr": "*bf16", "res_ptr": "*bf16", "w_ptr": "*bf16", "out_ptr": "*bf16",
            "n_rows": "i32", "n_cols_q": "i32", "stride_x_q": "i32", "stride_res_q": "i32",
            "stride_out_q": "i32", "eps": "fp32", "ALIGN": align, "WEIGHT_OFFSET": 0.0,
            "HAS_RESIDUAL": True, "SINGLE_PASS": True, "BLOCK_M": 1, "BLOCK_N": 8192,
            "USE_PDL": False, "PDL_LATE": False}


def act(align):
    return {"x_ptr": "*bf16", "out_ptr": "*bf16", "d_q": "i32", "stride_x_q": "i32",
            "stride_out_q": "i32", "ACT": 0, "BLOCK": 1024, "ALIGN": align, "USE_PDL": False,
            "PDL_LATE": False}


def token(align):
    return {"x_ptr": "*bf16", "q_ptr": "*fp8e4nv", "s_ptr": "*fp32", "n_rows": "i32",
            "n_cols_q": "i32", "stride_x_q": "i32", "stride_q_q": "i32", "fp8_max": "fp32",
            "BLOCK_M": 1, "BLOCK_N": 1024, "ALIGN": align, "USE_PDL": False}


def moe_sum(align):
    return {"x_ptr": "*bf16", "out_ptr": "*bf16", "hidden_q": "i32", "topk": "i32",
            "stride_xt_q": "i32", "stride_xk_q": "i32", "stride_o_q": "i32", "scale": "fp32",
            "BLOCK_H": 1024, "SCALE": False, "ALIGN": align, "USE_PDL": False}


def loads(kernel, params):
    ptx = sm90_ptx(kernel, params, aligned_pointers=True)
    return sorted(set(re.findall(r"\bld\.global[a-z0-9.]*", ptx)))


print(json.dumps({f"{name} {align}": loads(kernel, params(align))
                  for name, kernel, params in (("rmsnorm", rmsnorm_kernel, norm),
                                               ("act_and_mul", act_and_mul_kernel, act),
                                               ("per_token_quant", per_token_quant_kernel,
                                                token),
                                               ("moe_sum", moe_sum_kernel, moe_sum))
                  for align in (1, 8)}))
