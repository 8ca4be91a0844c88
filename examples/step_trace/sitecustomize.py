"""Per-step trace of an sglang server, for ``examples/e2e_serve.py --step-trace`` only.

Not part of the package and never installed: ``e2e_serve.py`` puts this folder first on
the server's ``PYTHONPATH`` and names an output folder in ``SGLANG_STEP_TRACE``.  Every
Python process of the server then runs this file at start-up; the one that imports
``sglang.srt.model_executor.model_runner`` (the scheduler) gets ``ModelRunner.forward``
wrapped, the others only carry an idle import hook.

Why: the decode step series of issue 27 has stretches of 16-60 steps that run 1.3-1.9x
slower, on servers of either stack, and the scheduler's log line cannot say whether the
GPU took longer (clocks, a slower kernel) or the host did (Python work, the thread not
running).  Per forward call, one line of ``steps-<pid>.jsonl``:

``[t0, host_ms, cpu_s, gc_s, batch, decode, gpu_ms, gap_ms, core]``

* ``t0``: wall time (``time.time()``) at the call; ``host_ms``: how long the call took on
  the host (a graph replay is only enqueued);
* ``cpu_s`` / ``gc_s``: the calling thread's CPU time and the process's time in the
  garbage collector so far (their differences between calls are per step);
* ``batch``, ``decode`` (1 or 0): the forward batch;
* ``gpu_ms``: CUDA events before and after the call on the current stream: the GPU time
  of the step's work; ``gap_ms``: from the previous call's end event to this one's start
  (the GPU waiting for the host).  ``null`` without CUDA;
* ``core``: the CPU the scheduler thread ran on at the call (``sched_getcpu``; -1 where libc
  has none): whether a slow host stretch follows a core.

Cost: two event records, a query and one short write per step, the same on both stacks.
A line is written once its end event has completed, checked at the next call: the last
step of a burst lands with the next request's first step.
"""

from __future__ import annotations

import gc
import importlib.machinery
import importlib.util
import json
import os
import sys
import time
from collections import deque
from typing import Any

TARGET = "sglang.srt.model_executor.model_runner"


class _State:
    gc_s = 0.0
    gc_began = 0.0


def _on_gc(phase: str, _info: dict[str, Any]) -> None:
    if phase == "start":
        _State.gc_began = time.perf_counter()
    elif _State.gc_began:
        _State.gc_s += time.perf_counter() - _State.gc_began
        _State.gc_began = 0.0


def _core_reader() -> Any:
    """``sched_getcpu`` from libc (a vDSO call, well under a microsecond), or a stand-in."""
    try:
        import ctypes

        return ctypes.CDLL(None).sched_getcpu
    except (OSError, AttributeError):
        return lambda: -1


def _wrap(module: Any, folder: str) -> None:
    cls = getattr(module, "ModelRunner", None)
    inner = getattr(cls, "forward", None)
    # the loader may be shared with other modules (whoever else wraps imports): only the
    # target's own class, and only once
    if module.__name__ != TARGET or cls is None or inner is None or hasattr(inner, "__wrapped__"):
        return
    import torch

    cuda = torch.cuda.is_available()
    core = _core_reader()
    path = os.path.join(folder, f"steps-{os.getpid()}.jsonl")
    pending: deque[tuple[Any, Any, list[Any]]] = deque()
    last_end: list[Any] = [None]
    gc.callbacks.append(_on_gc)

    def drain(sink: Any) -> None:
        while pending and (pending[0][1] is None or pending[0][1].query()):
            start, end, row = pending.popleft()
            if end is not None:
                prev = last_end[0]
                row[6:6] = [round(start.elapsed_time(end), 4),
                            round(prev.elapsed_time(start), 4) if prev is not None else None]
                last_end[0] = end
            else:
                row[6:6] = [None, None]
            sink.write(json.dumps(row) + "\n")
        sink.flush()

    sink = open(path, "a", encoding="utf-8")  # noqa: SIM115 -- lives as long as the process

    def forward(self: Any, forward_batch: Any, *args: Any, **kwargs: Any) -> Any:
        t0, cpu, collected = time.time(), time.thread_time(), _State.gc_s
        start = end = None
        if cuda and not torch.cuda.is_current_stream_capturing():
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            start.record()
        out = inner(self, forward_batch, *args, **kwargs)
        if end is not None:
            end.record()
        mode = getattr(forward_batch, "forward_mode", None)
        decode = int(bool(mode is not None and mode.is_decode()))
        pending.append((start, end, [round(t0, 6), round(1e3 * (time.time() - t0), 4),
                                     round(cpu, 6), round(collected, 6),
                                     int(getattr(forward_batch, "batch_size", 0) or 0),
                                     decode, int(core())]))
        drain(sink)
        return out

    forward.__wrapped__ = inner  # type: ignore[attr-defined]
    cls.forward = forward


class _Finder:
    """Waits for :data:`TARGET`, then takes itself off ``sys.meta_path`` and wraps the
    real loader's ``exec_module``."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module: Any) -> None:
            run(module)
            _wrap(module, self.folder)

        loader.exec_module = exec_module  # type: ignore[union-attr]
        return spec


def _chain() -> None:
    """Run the ``sitecustomize`` this file shadows, if there is one further down the path."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_folder = os.environ.get("SGLANG_STEP_TRACE", "")
if _folder and os.path.isdir(_folder):
    sys.meta_path.insert(0, _Finder(_folder))
_chain()
