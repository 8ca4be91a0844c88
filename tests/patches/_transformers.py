"""Helpers for the transformers-skew patch tests: another transformers on the path, fake CUDA.

The test environment has sglang 0.5.1's pins (transformers 4.55.2).  A test that needs
transformers 5 puts the published wheels of transformers and of the huggingface_hub and
tokenizers releases it accepts (Requires-Dist) first on the subprocess's ``PYTHONPATH``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..conftest import FAKE_CUDA  # re-exported for the transformers-5 tests

__all__ = ["COMPANIONS", "FAKE_CUDA", "SINGLE_PROCESS_TP", "transformers_paths"]

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
