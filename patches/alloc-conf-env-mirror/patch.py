"""torch 2.9: make PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF say the same thing.

torch 2.9 introduced ``PYTORCH_ALLOC_CONF`` (read by the device-generic
``AcceleratorAllocatorConfig``, which falls back to ``PYTORCH_CUDA_ALLOC_CONF`` with a
"PYTORCH_CUDA_ALLOC_CONF is deprecated, use PYTORCH_ALLOC_CONF instead" warning), but
its ``CUDAAllocatorConfig`` -- which still holds every setting of the CUDA caching
allocator: ``expandable_segments``, ``max_split_size_mb``, ``backend``, ... -- reads only
``PYTORCH_CUDA_ALLOC_CONF`` (and, on ROCm, ``PYTORCH_HIP_ALLOC_CONF``).  So the name the
warning recommends is silently ignored by the CUDA allocator (pytorch issue 183387).
torch 2.10 made the CUDA config fall back to ``PYTORCH_ALLOC_CONF``, so that a single
variable is read by both.

Before sglang's body runs -- torch reads the variables when the allocator first
initialises, later than that -- the one that is set is copied to the other, which is
what torch >= 2.10 does with a single variable.  Children started by sglang inherit
both.  When both are set and differ nothing is changed: which one wins depends on the
setting, so the conflict is reported instead.
"""

from __future__ import annotations

import os

from sglang_shims.patching import PatchContext

NEW = "PYTORCH_ALLOC_CONF"
OLD = "PYTORCH_CUDA_ALLOC_CONF"


def _value(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value is not None and value.strip() else None  # empty means unset


def apply(ctx: PatchContext) -> None:
    new, old = _value(NEW), _value(OLD)
    if new is None and old is None:
        ctx.note(f"neither {NEW} nor {OLD} is set; nothing to mirror")
    elif new is None:
        assert old is not None
        ctx.setenv(NEW, old)
        ctx.note(f"{NEW} set from {OLD}={old!r}: torch 2.9 reads its device-generic allocator"
                 f" config from {NEW} (and warns that {OLD} is deprecated)")
    elif old is None:
        ctx.setenv(OLD, new)
        ctx.note(f"{OLD} set from {NEW}={new!r}: torch 2.9's CUDA caching allocator"
                 f" (expandable_segments, max_split_size_mb, ...) reads only {OLD}")
    elif new.strip() == old.strip():
        ctx.note(f"{NEW} and {OLD} are both set to {new!r}; nothing to do")
    else:
        warning = (f"WARNING: {NEW}={new!r} and {OLD}={old!r} differ. torch 2.9's CUDA"
                   f" caching allocator uses only {OLD}; {NEW} reaches only the"
                   f" device-generic allocator config, and torch >= 2.10 takes some settings"
                   f" from each. Set only one of them, or both to the same value; left"
                   f" unchanged")
        ctx.log.warning("%s", warning)
        ctx.note(warning)
