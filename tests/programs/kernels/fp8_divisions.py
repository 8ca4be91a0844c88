"""The fp32 division instructions in the FP8 quantisers' PTX, compiled for sm_90 as they launch
there (PDL on; no GPU needed); prints {kernel: sorted instructions}."""
import json
import re

from sglang_shims.kernels.ops.fp8_quant import triton as kernels
from sm90_ptx import sm90_ptx

GROUP = {"x_ptr": "*bf16", "q_ptr": "*fp8e4nv", "s_ptr": "*fp32", "n_groups": "i32",
         "groups_per_row": "i32", "group_size": "i32", "stride_s_row": "i32",
         "stride_s_group": "i32", "eps": "fp32", "fp8_min": "fp32", "fp8_max": "fp32",
         "BLOCK_G": 4, "BLOCK_K": 128, "UE8M0": False, "USE_PDL": True}
TOKEN = {"x_ptr": "*bf16", "q_ptr": "*fp8e4nv", "s_ptr": "*fp32", "n_rows": "i32",
         "n_cols_q": "i32", "stride_x_q": "i32", "stride_q_q": "i32", "fp8_max": "fp32",
         "BLOCK_M": 1, "BLOCK_N": 1024, "ALIGN": 8, "USE_PDL": True}
ABSMAX = {"x_ptr": "*bf16", "s_ptr": "*fp32", "n_q": "i32", "fp8_max": "fp32", "BLOCK": 1024,
          "ALIGN": 8, "USE_PDL": True}
TENSOR = {"x_ptr": "*bf16", "q_ptr": "*fp8e4nv", "s_ptr": "*fp32", "n_q": "i32",
          "fp8_max": "fp32", "BLOCK": 1024, "ALIGN": 8, "USE_PDL": True}
CASES = {"per_token_group_quant_kernel": GROUP,
         "per_token_group_quant_kernel ue8m0": {**GROUP, "UE8M0": True},
         "per_token_quant_kernel": TOKEN, "absmax_kernel": ABSMAX,
         "per_tensor_quant_kernel": TENSOR}


def divisions(kernel, params):
    ptx = sm90_ptx(kernel, params)
    return sorted(set(re.findall(r"\b(?:div|rcp)\.[a-z0-9.]*f32\b", ptx)))


print(json.dumps({case: divisions(getattr(kernels, case.split()[0]), params)
                  for case, params in CASES.items()}))
