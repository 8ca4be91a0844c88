"""Running our Triton kernels in tests: compiled on a GPU, under Triton's interpreter on CPU.

Why a module of its own: Triton picks its interpreter when a ``@triton.jit`` function is
defined, so ``TRITON_INTERPRET=1`` must be set before any kernel module of ours (or Triton
itself) is imported in the test process.  Every kernel test module calls
:func:`triton_skip` while it is imported (at collection), which loads every family's
kernels once, the right way for this machine.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence
from functools import cache
from typing import Any

import pytest

NO_CUDA = "no CUDA GPU: compiled-kernel tests need one"
"""The skip reason of a test that needs compiled kernels (on CI_ALLOWED_SKIPS)."""


def load_triton(modules: Sequence[str], has_cuda: bool) -> str:
    """Import Triton and our kernel modules so that this machine can run them.

    Returns "" when that worked, else why the Triton tests are skipped (triton missing or
    broken: a failure in CI, see tests/support/ci_skips.py).  An error in our kernel modules is
    raised, so it fails the run instead of skipping 123 tests.  Without a GPU
    the kernels must run under Triton's interpreter, which Triton picks when a
    ``@triton.jit`` function is defined, its own library included: so on CPU,
    ``TRITON_INTERPRET=1`` is set while importing, then restored (the tests that run
    the kernels set it again, and the ops read it at each call to pick the path).
    """
    old = os.environ.get("TRITON_INTERPRET")
    if not has_cuda:
        if "triton" in sys.modules and old != "1":
            import triton.language as tl

            if type(tl.sum).__name__ != "InterpretedFunction":
                return ("triton was imported in this process before TRITON_INTERPRET=1 could be "
                        "set, so its kernels cannot run on CPU here; run this module alone")
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        try:
            importlib.import_module("triton")
        except Exception as e:  # a third-party absence: a skip (a failure in CI)
            return (f"triton is not importable here ({type(e).__name__}: {e}): the Triton "
                    "kernels cannot run (the torch path is still tested)")
        # Our own code: any error importing it is a bug and fails collection, never a skip.
        for name in modules:
            importlib.import_module(f"sglang_shims.kernels.{name}")
    finally:
        if old is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = old
    return ""


def select_backend(backend: str, monkeypatch: Any, has_cuda: bool) -> str:
    """Put this test on ``backend`` ("torch": the eager path; "triton": our kernels, through
    the interpreter without a GPU) and return the device its tensors go to."""
    if backend == "torch":
        monkeypatch.setenv("SGLANG_SHIMS_KERNEL_BACKEND", "torch")
    else:
        monkeypatch.delenv("SGLANG_SHIMS_KERNEL_BACKEND", raising=False)
        if not has_cuda:
            monkeypatch.setenv("TRITON_INTERPRET", "1")
    return "cuda" if has_cuda else "cpu"


def kernel_modules() -> tuple[str, ...]:
    """Every family's kernel module, as :func:`load_triton` names them (``ops.<family>.triton``)."""
    ops = importlib.import_module("sglang_shims.kernels.ops")
    return tuple(sorted(f"ops.{m.name}.triton" for m in pkgutil.iter_modules(ops.__path__)
                        if m.ispkg))


@cache
def has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


@cache
def triton_skip() -> str:
    """:func:`load_triton` for every family's kernels, once a process: "" when they can
    run here, else why the Triton tests are skipped."""
    return load_triton(kernel_modules(), has_cuda())


def gpu_only(test: Any) -> Any:
    """Marks a test that needs compiled kernels (``gpu``): skipped with the reason without a
    GPU, or where Triton cannot run."""
    for mark in (pytest.mark.gpu, pytest.mark.skipif(not has_cuda(), reason=NO_CUDA),
                 pytest.mark.skipif(bool(triton_skip()), reason=triton_skip() or "-")):
        test = mark(test)
    return test
