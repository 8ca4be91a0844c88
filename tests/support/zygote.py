"""Programs run as forks of one process that has imported torch already.

The patch tests run hundreds of programs that import sglang, and each paid 1.5-2 s of CPU
for ``import torch`` before anything under test ran.  :func:`run` hands such a program to
a per-worker server (``tests/programs/zygote.py``) that imported torch once and forks a
child per program; the child is set up as ``python -S -c`` would be (environment,
``PYTHONPATH``, arguments, working folder, streams; see that file), and the result is
what :func:`~tests.support.run.run_python` would return.

Only where that holds: :func:`usable` refuses a stack that brings its own copy of a module
the server has loaded (torch, numpy, typing_extensions, ...: the child would get the
server's), and the callers opt in (programs that import torch anyway, none that looks at
which modules got imported).  ``SGLANG_SHIMS_TEST_FORK=0`` turns it off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1] / "programs" / "zygote.py"


class _Server:
    """One server process, started on first use, answering one request at a time."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-S", str(SERVER)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.send, self.answers = self.proc.stdin, self.proc.stdout
        self.lock = threading.Lock()
        first = self.answers.readline()
        if not first:
            raise RuntimeError("the fork server did not start (it imports torch)")
        self.loaded = frozenset(json.loads(first)["loaded"])

    def run(self, code: str, env: dict[str, str], args: tuple[str, ...], cwd: Path,
            timeout: float) -> tuple[int, str, str]:
        with self.lock, tempfile.TemporaryDirectory(prefix="zygote-") as tmp:
            out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
            self.send.write(json.dumps({"code": code, "env": env, "args": list(args),
                                        "cwd": str(cwd), "stdout": str(out),
                                        "stderr": str(err)}) + "\n")
            self.send.flush()
            pid = json.loads(self.answers.readline())["pid"]
            killed = threading.Event()
            timer = threading.Timer(timeout, _kill, (pid, killed))
            timer.start()
            try:
                line = self.answers.readline()
            finally:
                timer.cancel()
            if not line:
                raise RuntimeError("the fork server ended")
            if killed.is_set():
                raise subprocess.TimeoutExpired(["<fork>", "-c", code[:200]], timeout)
            code_ = int(json.loads(line)["returncode"])
            return (code_, out.read_text(encoding="utf-8", errors="replace"),
                    err.read_text(encoding="utf-8", errors="replace"))


def _kill(pid: int, killed: threading.Event) -> None:
    """A program past its time: ended as ``subprocess.run`` ends one (SIGKILL)."""
    killed.set()
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


_servers: dict[str, _Server] = {}


def enabled() -> bool:
    return os.environ.get("SGLANG_SHIMS_TEST_FORK", "1") != "0" and hasattr(os, "fork")


START_VARIABLES = frozenset({"PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"})
"""``PYTHON*`` variables a fork honours as a fresh interpreter would; any other (warnings,
hash seed, I/O encoding, ...) is read once at start, so the server's would hold."""

IMPORT_TIME = ("TRITON_INTERPRET",)
"""Variables that a module the server preloads reads once, when it is imported: Triton
(torchvision and torch's compiler import it) makes its own jit'd helpers interpreted or
compiled by ``TRITON_INTERPRET`` then, so a program that sets it gets a server started
with the same value (one server per base and value)."""


def usable(paths: tuple[Path | str, ...], base: list[str],
           extra_env: dict[str, str] | None = None) -> bool:
    """Whether a program on ``paths`` may run as a fork: forking is on, ``extra_env`` sets
    no start-up variable but :data:`START_VARIABLES`, and none of ``paths`` holds a
    top-level module the server loaded from ``base`` (its own ``PYTHONPATH``)."""
    if not enabled() or any(k.startswith("PYTHON") and k not in START_VARIABLES
                            for k in extra_env or {}):
        return False
    server = _server(base, {**os.environ, **(extra_env or {})})
    for entry in map(Path, paths):
        for name in server.loaded:
            if (entry / name).exists() or (entry / f"{name}.py").exists():
                return False
    return True


def _server(base: list[str], env: dict[str, str]) -> _Server:
    """The server for ``base`` whose :data:`IMPORT_TIME` variables are ``env``'s."""
    fixed = {name: env[name] for name in IMPORT_TIME if name in env}
    path = os.pathsep.join(base)
    key = json.dumps([path, sorted(fixed.items())])
    if key not in _servers:
        from .run import clean_env  # that module imports this one

        started = {k: v for k, v in clean_env(PYTHONPATH=path).items() if k not in IMPORT_TIME}
        _servers[key] = _Server({**started, **fixed})
    return _servers[key]


def run(code: str, env: dict[str, str], base: list[str], args: tuple[str, ...], cwd: Path,
        timeout: float) -> tuple[int, str, str]:
    """(returncode, stdout, stderr) of ``code`` as a fork of the server for ``base``;
    ``env`` is the child's whole environment (its ``PYTHONPATH`` included)."""
    return _server(base, env).run(code, env, args, cwd, timeout)
