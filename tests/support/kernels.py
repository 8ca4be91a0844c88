"""Importing Triton and our kernel modules for the kernel tests, on a GPU or on CPU."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any


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
