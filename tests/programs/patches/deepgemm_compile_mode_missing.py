"""sglang's DeepGEMM warm-up (``_compile_deep_gemm_one_type_all``) on CPU, with what a Hopper
GPU would provide set up here and the ``deep_gemm`` stand-in of argv[1] first on the path."""
import json
import sys
import types

from patch_state import print_result

sys.path.insert(0, sys.argv[1])
import torch

result = {}
import sglang.srt.utils
sglang.srt.utils.get_device_sm = lambda: 90  # an sm_90 GPU: sglang turns DeepGEMM JIT on
torch.cuda.current_stream = lambda: types.SimpleNamespace(synchronize=lambda: None)
torch.cuda.empty_cache = lambda: None
import sglang.srt.layers.deep_gemm_wrapper.compile_utils as cu
result["jit"] = cu.ENABLE_JIT_DEEPGEMM
cu.get_available_gpu_memory = lambda **kwargs: 80.0
cu.disable_symmetric_memory_context = lambda: None
cu.restore_symmetric_memory_context = lambda saved: None
ran = []


class Executor:
    def execute(self, m):
        ran.append(m)


cu._BaseWarmupExecutor.create = staticmethod(lambda *args, **kwargs: Executor())
import deep_gemm
try:
    cu._compile_deep_gemm_one_type_all(kernel_type=cu.DeepGemmKernelType.GEMM_NT_F8F8BF16,
                                       n=256, k=256, num_groups=1, m_list=[1, 2, 64])
    result["ran"] = ran
except Exception as exc:
    result["error"] = f"{type(exc).__name__}: {exc}"
result["calls"] = deep_gemm.CALLS
result["same_module_elsewhere"] = sys.modules["deep_gemm"] is deep_gemm

print_result(result, "deepgemm-compile-mode-missing")
