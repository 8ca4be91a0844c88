"""A one-process tensor-parallel group (gloo), so that sglang's parallel layers can be built
on CPU: a test harness, never a fix."""
import tempfile
import types

import sglang.srt.layers.quantization  # sglang 0.5.1 needs this first (own import cycle)
import torch
from sglang.srt.distributed import parallel_state as _ps
from sglang.srt.layers import dp_attention as _dp

_ps.init_distributed_environment(
    world_size=1, rank=0, local_rank=0, backend="gloo",
    distributed_init_method="file://" + tempfile.mkdtemp() + "/store")
_ps.initialize_model_parallel(tensor_model_parallel_size=1)
_dp.initialize_dp_attention(
    server_args=types.SimpleNamespace(enable_dp_attention=False, tp_size=1, dp_size=1,
                                      moe_dense_tp_size=None, pp_size=1, device="cpu"),
    model_config=types.SimpleNamespace(hidden_size=256, dtype=torch.float32))
