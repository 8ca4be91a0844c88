"""``sgl_kernel.utils.is_arch_support_pdl`` as the stand-in answers it: from the GPU, as
sgl-kernel does (compute capability 9.0 and newer), whatever kernel serves the process."""

from __future__ import annotations

import pytest

from sglang_shims.kernels.standin import device


@pytest.mark.parametrize(("cuda", "capability", "pdl"), [
    (False, (9, 0), False), (True, (8, 9), False), (True, (9, 0), True), (True, (12, 0), True)])
def test_pdl_is_hopper_and_newer(monkeypatch: pytest.MonkeyPatch, cuda: bool,
                                 capability: tuple[int, int], pdl: bool) -> None:
    import torch

    asked: list[int] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    monkeypatch.setattr(torch.cuda, "get_device_capability",
                        lambda index: asked.append(index) or capability)
    device.is_arch_support_pdl.cache_clear()
    try:
        assert device.is_arch_support_pdl() is pdl
        assert asked == ([3] if cuda else [])
    finally:
        device.is_arch_support_pdl.cache_clear()
