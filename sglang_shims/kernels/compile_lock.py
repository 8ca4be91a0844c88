"""One Triton compile at a time across the processes of a server.

Why: tensor-parallel ranks start together and run the same ops on the same shapes, so
without coordination every rank JIT-compiles every kernel at the same moment -- N
copies of the same work, all competing for the host's CPUs while the server starts.
Triton's on-disk cache already turns a second compile of a kernel into a file read;
what is missing is making the other ranks wait for the first one.

So the first launch of each kernel specialisation in a process runs under an
exclusive ``flock`` on one file next to Triton's cache (``$TRITON_CACHE_DIR``, else
``~/.triton/cache``; when others may write in that folder, this user's private
``<tmp>/sglang-shims-<uid>`` instead).  The first rank to get it compiles and fills the cache; the
others get the lock in turn and load what it wrote.  Every later launch of that
specialisation in the process is a set lookup, no lock.

The key is ours, not Triton's, and deliberately cheap (it is built on every call):
the op, its compile-time constants and the dtypes.  The one size that changes from call
to call, the token count (and what is derived from it: routed tokens, groups, padded
slots), is marked ``do_not_specialize`` in every kernel that takes it: Triton would
otherwise compile a kernel up to three times for it (equal to 1, a multiple of 16,
neither), and a prefill whose length falls into a class not seen during warm-up would
compile in the middle of serving -- the one compilation the H200 caught inside timed
work on 2026-12-02.  Where a model size does reach the key (``sizes``: whether it is 1
or a multiple of 16, as Triton specialises integers) it is one that differs between
models, not between steps.  Strides and other model sizes are left out: they rarely change
within a server, and a key that misses one of Triton's specialisations only means
that compile runs unlocked -- never a wrong result.  Where no lock file can be made
(read-only home, no ``fcntl``) kernels compile unlocked and one warning says so.
Under ``TRITON_INTERPRET`` nothing is compiled, so nothing is locked.

Every wrapper launches its kernels through :func:`launch_kernel`, which is also the seam
that ``benchmarks/sweep.py`` reads a wrapper's launch through: inside :func:`recording`
the launches are recorded, not run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .device import Device, assume
from .runtime import interpret_mode

LOCK_NAME = "sglang_shims-compile.lock"

_seen: set[Hashable] = set()
_in_process = threading.Lock()  # threads of one process: one first launch at a time
broken: str | None = None
"""Why the file lock is unavailable, once known (None while it works or is untried)."""
waits: list[float] = []  # seconds each locked first launch waited (for tests, diagnostics)


@dataclass
class Launch:
    """One kernel launch as a wrapper asked for it: ``kernel[grid](*args, **kwargs)``."""

    kernel: Any
    grid: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    key: Hashable = None


_recorder: ContextVar[list[Launch] | None] = ContextVar("sglang_shims_launches", default=None)


def lock_path() -> Path:
    """The lock file's folder: Triton's on-disk cache, which is what it protects."""
    base = os.environ.get("TRITON_CACHE_DIR", "").strip()
    return Path(base) if base else Path.home() / ".triton" / "cache"


def _open_lock() -> int:
    """The lock file, in Triton's cache folder when that folder is ours alone.

    A cache folder others may write in (one shared by several users) could hold a link
    planted where the lock file goes, so there the lock lives in this user's private
    folder instead (:func:`sglang_shims._trust.user_folder`): the ranks of one server
    are one user's processes, so they still meet on it.
    """
    from .. import _trust

    try:
        return _trust.open_lock(lock_path(), LOCK_NAME)
    except _trust.NotPrivate:
        return _trust.open_lock(_trust.user_folder(), LOCK_NAME)


def sizes(*values: int) -> tuple[tuple[bool, bool], ...]:
    """How Triton specialises integer arguments: equal to 1, divisible by 16."""
    return tuple((v == 1, v % 16 == 0) for v in values)


def launch_kernel(key: Hashable, kernel: Any, grid: Any, *args: Any, **kwargs: Any) -> None:
    """``kernel[grid](*args, **kwargs)`` under :func:`launch`; only recorded inside
    :func:`recording`."""
    recorder = _recorder.get()
    if recorder is not None:
        recorder.append(Launch(kernel, grid, args, kwargs, key))
        return
    launch(key, lambda: kernel[grid](*args, **kwargs))


@contextmanager
def recording(device: Device | None = None) -> Iterator[list[Launch]]:
    """Within the block, :func:`launch_kernel` records each launch in the list it yields and
    runs nothing: what a wrapper launches (kernel, grid, arguments, options) can be read
    without a compile and without replacing any of its names.  With ``device``, the
    wrappers launch for that GPU whatever their tensors are on (CPU tensors will do): the
    compile check records every architecture's launches this way."""
    launches: list[Launch] = []
    token = _recorder.set(launches)
    try:
        if device is None:
            yield launches
        else:
            with assume(device):
                yield launches
    finally:
        _recorder.reset(token)


def launch(key: Hashable, run: Callable[[], object]) -> None:
    """``run()`` (a kernel launch); under the cross-process lock the first time per key."""
    if key in _seen or interpret_mode():
        run()
        return
    with _in_process:
        if key in _seen:
            run()
            return
        _locked(run)
        _seen.add(key)


def _locked(run: Callable[[], object]) -> None:
    if broken is not None:
        run()
        return
    try:
        import fcntl
        import time

        fd = _open_lock()
    except (ImportError, OSError) as exc:
        _give_up(f"{type(exc).__name__}: {exc}")
        run()
        return
    try:
        start = time.monotonic()
        fcntl.flock(fd, fcntl.LOCK_EX)
        waits.append(time.monotonic() - start)
        try:
            run()
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _give_up(reason: str) -> None:
    import logging

    global broken
    broken = reason
    logging.getLogger("sglang_shims").warning(
        "fallback kernels compile without the cross-process lock (%s); tensor-parallel "
        "ranks may compile the same kernels at once (set TRITON_CACHE_DIR to a writable "
        "folder)", reason)
