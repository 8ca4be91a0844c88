"""Helpers for the transformers-skew patch tests: another transformers on the path, fake CUDA.

The test environment has sglang 0.5.1's pins (transformers 4.55.2).  A test that needs
transformers 5 puts the published wheels of transformers and of the huggingface_hub and
tokenizers releases it accepts (Requires-Dist) first on the subprocess's ``PYTHONPATH``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

# transformers release -> the hub and tokenizers wheels that satisfy its Requires-Dist
# (5.24.0: huggingface-hub>=1.31.0,<3.0, tokenizers>=0.23.1,<0.24.0).
COMPANIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "5.24.0": (("huggingface_hub", "1.33.0"), ("tokenizers", "0.23.3")),
}


def transformers_paths(pypi_release: Callable[[str, str], Path],
                       version: str) -> tuple[Path, ...]:
    """PYTHONPATH entries (first) that make ``import transformers`` give ``version``."""
    extra = COMPANIONS.get(version, ())
    return (pypi_release("transformers", version),
            *(pypi_release(dist, dist_version) for dist, dist_version in extra))


# Test harness only (as in tests/test_serving_graph.py): one H100 as far as sglang's
# import-time checks can tell, so the CUDA branches (and no vllm) are taken on CPU.
FAKE_CUDA = """
import types, torch
_props = types.SimpleNamespace(
    name="NVIDIA H100 80GB HBM3", major=9, minor=0, total_memory=80 << 30,
    multi_processor_count=132, warp_size=32, L2_cache_size=50 << 20,
    max_shared_memory_per_block_optin=232448, gcnArchName="")
torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 1
torch.cuda.current_device = lambda: 0
torch.cuda.get_device_properties = lambda *a, **k: _props
torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
torch.cuda.get_device_name = lambda *a, **k: _props.name
"""

# Test harness only: a one-process tensor-parallel group (gloo) so that sglang's
# parallel layers can be constructed on CPU.
SINGLE_PROCESS_TP = """
import tempfile, types
import sglang.srt.layers.quantization  # sglang 0.5.1 needs this first (own import cycle)
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
"""
