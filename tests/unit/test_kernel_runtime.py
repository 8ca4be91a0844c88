"""The kernels' shared plumbing (``kernels.runtime``): which backend a call takes, whether it
launches with PDL, and the arithmetic of shapes and launch sizes that the launch rules use.
``tests/test_kernels_layout.py`` pins the PDL decision table; the rest is pinned here,
in this process and without a GPU (torch's CUDA queries are answered by the test)."""

from __future__ import annotations

import json
import sys

import pytest
import torch

from sglang_shims.kernels import runtime
from sglang_shims.kernels.device import Device

from ..support.run import REPO


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("SGLANG_SHIMS_KERNEL_BACKEND", raising=False)
    return monkeypatch


def test_triton_is_tried_once(monkeypatch: pytest.MonkeyPatch) -> None:
    runtime.triton_available.cache_clear()
    try:
        assert runtime.triton_available() is True  # a test dependency
        monkeypatch.setitem(sys.modules, "triton", None)  # now `import triton` fails
        assert runtime.triton_available() is True  # the first answer stays
        runtime.triton_available.cache_clear()
        assert runtime.triton_available() is False
    finally:
        runtime.triton_available.cache_clear()


@pytest.mark.parametrize(("value", "on"), [(None, False), ("", False), ("0", False),
                                           (" 1 ", True), ("True", True)])
def test_the_interpreter_is_tritons_own_switch(clean_env: pytest.MonkeyPatch, value: str | None,
                                              on: bool) -> None:
    if value is not None:
        clean_env.setenv("TRITON_INTERPRET", value)
    assert runtime.interpret_mode() is on


def test_the_backend_of_a_call(clean_env: pytest.MonkeyPatch) -> None:
    cpu = torch.zeros(2)
    assert runtime.use_triton(cpu) is False  # a CPU tensor: plain torch
    clean_env.setenv("TRITON_INTERPRET", "1")
    assert runtime.use_triton(cpu) is True  # the interpreter runs the Triton kernels
    clean_env.setenv("SGLANG_SHIMS_KERNEL_BACKEND", " Torch ")
    assert runtime.use_triton(cpu) is False  # asked for torch: torch
    clean_env.setenv("SGLANG_SHIMS_KERNEL_BACKEND", "triton")
    clean_env.setattr(runtime, "triton_available", lambda: False)
    assert runtime.use_triton(cpu) is False  # no usable triton


def test_pdl_under_the_interpreter_is_off(clean_env: pytest.MonkeyPatch) -> None:
    class Cuda:
        is_cuda = True
        device = torch.device("cuda", 0)

    clean_env.setattr(runtime, "PDL_SHIPPED", True)
    clean_env.setattr(runtime, "cuda_device", lambda index: Device((9, 0), 1 << 17, 132))
    assert runtime.use_pdl(Cuda()) is True  # type: ignore[arg-type]
    assert runtime.use_pdl(Cuda(), enable_pdl=False) is False  # type: ignore[arg-type]
    clean_env.setenv("TRITON_INTERPRET", "1")
    assert runtime.use_pdl(Cuda()) is False  # type: ignore[arg-type]


@pytest.mark.parametrize(("capability", "pdl"), [((9, 0), True), ((8, 9), False),
                                                 ((10, 0), True), ((12, 0), True)])
def test_pdl_is_compute_capability_9_and_newer(capability: tuple[int, int], pdl: bool) -> None:
    assert Device(capability, 1 << 16, 1).pdl is pdl


def test_the_device_index_of_a_tensor_without_one_is_the_current_device(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Cuda:
        is_cuda = True

        def __init__(self, index: int | None) -> None:
            self.device = torch.device("cuda", index) if index is not None else torch.device(
                "cuda")

    seen: list[int] = []
    monkeypatch.setattr(runtime, "PDL_SHIPPED", True)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(runtime, "_current_index", lambda: 7)
    monkeypatch.setattr(runtime, "cuda_device",
                        lambda index: seen.append(index) or Device((9, 0), 1 << 17, 132))
    runtime.use_pdl(Cuda(None))  # type: ignore[arg-type]
    runtime.use_pdl(Cuda(3))  # type: ignore[arg-type]
    assert seen == [7, 3]


def test_the_current_device_is_torchs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 5)
    assert runtime._current_index() == 5


def test_launch_arithmetic() -> None:
    assert [runtime.cdiv(a, 4) for a in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
    assert [runtime.next_pow2(n) for n in (-3, 0, 1, 2, 3, 4, 5, 1025)] == [
        1, 1, 1, 2, 4, 4, 8, 2048]
    assert [runtime.prev_pow2(n) for n in (-3, 0, 1, 2, 3, 4, 5, 1023, 1024, 1025)] == [
        1, 1, 1, 2, 2, 4, 4, 512, 1024, 1024]
    assert runtime.num_warps_for(1) == 1
    assert runtime.num_warps_for(32 * 8 * 4) == 4
    assert runtime.num_warps_for(32 * 8 * 5) == 8  # a power of two, rounded up
    assert runtime.num_warps_for(1 << 30) == 16  # capped
    assert runtime.num_warps_for(32 * 4 * 4, per_thread=4) == 4
    assert runtime.num_warps_for(1 << 30, cap=8) == 8


def test_rows_2d_views_without_copying() -> None:
    plain = torch.zeros(3, 4)
    assert runtime.rows_2d(plain, 4) is plain
    assert runtime.rows_2d(torch.tensor(1.0), 1) is None  # a scalar
    assert runtime.rows_2d(plain, 3) is None  # another width
    column = torch.zeros(1, 3).t()  # [3, 1], column stride 3: one value per row is fine
    assert runtime.rows_2d(column, 1) is column
    assert runtime.rows_2d(torch.zeros(4, 3).t(), 4) is None  # [3, 4] with column stride 3
    deep = torch.zeros(2, 3, 4)
    flat = runtime.rows_2d(deep, 4)
    assert flat is not None and flat.shape == (6, 4) and flat.data_ptr() == deep.data_ptr()
    assert runtime.rows_2d(torch.zeros(2, 4, 3).transpose(0, 1), 3) is None  # no such view
    strided = torch.zeros(2, 3, 8)[..., ::2]  # [2, 3, 4], column stride 2
    assert runtime.rows_2d(strided, 4) is None
    single = torch.zeros(2, 3, 2)[..., :1]  # [2, 3, 1], width 1 with a row stride of 2
    view = runtime.rows_2d(single, 1)
    assert view is not None and view.shape == (6, 1)


def test_same_memory_is_the_same_view() -> None:
    a = torch.zeros(2, 2)
    assert runtime.same_memory(a, a) and runtime.same_memory(a, a.view(2, 2))
    assert not runtime.same_memory(a, a.clone())
    assert not runtime.same_memory(a, a.t())  # same start and shape, other strides
    assert not runtime.same_memory(a, a.view(4))
    assert not runtime.same_memory(a[1], a[0])


def test_decode_launches_reach_as_far_as_the_sweep_that_measured_them() -> None:
    """``DECODE_ROWS`` is the most rows the decode sweep timed (rows beyond it keep the
    prefill launches, which were measured there)."""
    sweep = REPO / "benchmarks" / "results" / "sweep-decode-h200-2026-12-02.json"
    rows = {row["tokens"] for row in json.loads(sweep.read_text(encoding="utf-8"))["rows"]}
    assert max(rows) == runtime.DECODE_ROWS
