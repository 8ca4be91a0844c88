"""The GPU a launch rule chooses for: compute capability, shared memory per block, SM count.

Why: a launch configuration measured on the H200 (sm_90, 227 KiB of shared memory a block)
can ask for more than another GPU has -- an RTX 5060 Ti (sm_120) or an RTX 4090 (sm_89)
gives a block 99 KiB, a T4 (sm_75) 64 KiB -- and Triton then refuses the launch with
``OutOfResources`` on the user's first request.  So a rule whose choice depends on the GPU
takes a :class:`Device` and decides from its numbers, never from a list of architectures:
a GPU that did not exist when the rule was written is judged by what it has.

The wrappers build the value once per CUDA device from torch's device properties
(:func:`cuda_device`, through :func:`sglang_shims.kernels.runtime.device_of`).
``tools/gpus/compile_check.py`` builds one per architecture from
``benchmarks/arch_limits.toml`` and records what the wrappers launch for it (:func:`assume`,
through :func:`sglang_shims.kernels.compile_lock.recording`), so every architecture's choice
is compiled and checked without its GPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache

#: Shared memory every CUDA GPU gives a block without opting in (the fallback when torch
#: reports neither figure).
DEFAULT_SMEM = 48 * 1024


@dataclass(frozen=True)
class Device:
    """What a launch rule may depend on."""

    capability: tuple[int, int]
    smem_per_block: int
    """Bytes of shared memory one block may use (the opt-in maximum)."""
    sm_count: int

    @property
    def pdl(self) -> bool:
        """Whether programmatic dependent launch exists here (compute capability 9.0+)."""
        return self.capability >= (9, 0)

    @property
    def fp8(self) -> bool:
        """Whether Triton compiles kernels on e4m3 values (``fp8e4nv``) here: from compute
        capability 8.9.  Below it Triton refuses them ("type fp8e4nv not supported in this
        architecture"; Triton 3.8 on sm_70-sm_87, found by tools/gpus/compile_check.py),
        so the FP8 ops take their plain-PyTorch path there."""
        return self.capability >= (8, 9)

    @property
    def atomics(self) -> bool:
        """Whether Triton's atomics compile here: it emits them with a memory order
        (``atom.global.gpu.acq_rel`` and the like), which PTX has from compute capability
        7.0 (ptxas for sm_61: "Feature '.acq_rel' requires .target sm_70 or higher"; found
        by ``python -m tools.refresh gpu-compile``, 2026-12-06)."""
        return self.capability >= (7, 0)


MEASURED = Device((9, 0), 232448, 132)
"""The H200 the launch rules were measured on: what a tensor on no GPU (the interpreter)
is launched for, so that the interpreter runs the configurations the H200 runs."""

_assumed: ContextVar[Device | None] = ContextVar("sglang_shims_device", default=None)


def assumed() -> Device | None:
    """The device :func:`assume` set for this context, if any."""
    return _assumed.get()


@contextmanager
def assume(dev: Device) -> Iterator[Device]:
    """Within the block every tensor is taken to live on ``dev``: the Triton path is taken
    and the launch rules choose for ``dev``.  Only meaningful where launches are recorded,
    not run (:func:`sglang_shims.kernels.compile_lock.recording`)."""
    token = _assumed.set(dev)
    try:
        yield dev
    finally:
        _assumed.reset(token)


@cache
def cuda_device(index: int) -> Device:
    """CUDA device ``index`` as torch reports it, read once per process."""
    import torch

    props = torch.cuda.get_device_properties(index)
    smem = (getattr(props, "shared_memory_per_block_optin", 0)
            or getattr(props, "shared_memory_per_block", 0) or DEFAULT_SMEM)
    return Device((int(props.major), int(props.minor)), int(smem),
                  int(props.multi_processor_count))
