"""sglang's FP4 quantize function as the flashinfer TRT-LLM MoE runner (unguarded import) and
modelopt_quant (guarded import) got it, with the patch's state and proxies."""
import fake_cuda
import json

import sglang.srt.layers.quantization.modelopt_quant as modelopt
import sglang.srt.layers.moe.moe_runner.flashinfer_trtllm as runner

from patch_state import patch_entry

entry = patch_entry("sgl-kernel-missing-symbols")
print(json.dumps({"runner": type(runner.fp4_quantize).__name__,
                  "modelopt": repr(modelopt.fp4_quantize), "state": entry["state"],
                  "proxies": sorted(entry["proxies"])}))
