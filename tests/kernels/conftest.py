"""Wiring for the kernel tests: the path each op takes, and a seeded generator.

Each op runs on two backends: ``torch`` (the plain-PyTorch path,
``SGLANG_SHIMS_KERNEL_BACKEND=torch``; always run) and ``triton`` (our Triton kernels, on
CUDA when there is a GPU, else on CPU under Triton's interpreter; skipped with the reason
when ``import triton`` fails, a failure under ``SGLANG_SHIMS_CI=1``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ..support.kernels import has_cuda, select_backend, triton_skip

if TYPE_CHECKING:
    import torch


@pytest.fixture(params=["torch", "triton"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Selects the path; returns the device the tensors go to."""
    if request.param == "triton" and triton_skip():
        pytest.skip(triton_skip())
    return select_backend(request.param, monkeypatch, has_cuda())


@pytest.fixture
def gen(request: pytest.FixtureRequest) -> torch.Generator:
    """A generator seeded with the test module's ``SEED`` (else one for all): a module's
    inputs stay the ones its tolerances were set on."""
    import torch

    return torch.Generator().manual_seed(getattr(request.module, "SEED", 20251130))
