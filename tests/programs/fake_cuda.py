"""One H100, as far as sglang's import-time checks can tell: a test harness, never a fix.

Imported first by the programs that take sglang's CUDA branches on CPU; every real version
skew is left for the patches to fix.
"""
import types

import torch

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
