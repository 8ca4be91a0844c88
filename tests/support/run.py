"""Fresh interpreters: what a test runs in a subprocess, and what it gets back.

Anything that touches interpreter start-up or the per-process engine runs in a
subprocess: the engine is a per-process singleton, and the tests must see what a
real process sees.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import zygote

REPO = Path(__file__).resolve().parents[2]
SITE_PACKAGES = [p for p in site.getsitepackages() if Path(p).is_dir()]
ACTIVATE = "import sglang_shims._bootstrap as _b; _b.activate('test')\n"


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment without any SGLANG_SHIMS_* setting or PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SGLANG_SHIMS") and k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> object:
        """The last stdout line, parsed (programs print one JSON document last)."""
        return json.loads(self.stdout.strip().splitlines()[-1])

    @classmethod
    def of(cls, proc: subprocess.CompletedProcess[str]) -> Result:
        """The result of a process started some other way than :func:`run_python`."""
        return cls(proc.returncode, proc.stdout, proc.stderr)


def run_python(code: str, *, paths: tuple[Path | str, ...] = (), env: dict[str, str] | None = None,
               activate: bool = True, python: str = sys.executable, timeout: float = 120,
               cwd: Path | None = None, args: tuple[str, ...] = (), fork: bool = False
               ) -> Result:
    """Run ``code`` in a fresh interpreter with the repo and ``paths`` importable.

    The interpreter runs with ``-S`` and this environment's site-packages appended to
    ``PYTHONPATH``: its dependencies import, but no ``.pth`` file runs, so the result is
    the same whether or not sglang-shims is installed here.  ``activate`` prepends what
    the ``.pth`` line does.  ``fork``: a program that imports torch anyway may run as a
    fork of a process that has (:mod:`.zygote`), where ``paths`` allow it.
    """
    full_env = clean_env(**(env or {}))
    full_env["PYTHONPATH"] = os.pathsep.join([str(REPO), *map(str, paths), *SITE_PACKAGES])
    source = (ACTIVATE if activate else "") + textwrap.dedent(code)
    if fork and python == sys.executable and zygote.usable(paths, SITE_PACKAGES, env):
        return Result(*zygote.run(source, full_env, SITE_PACKAGES, args, cwd or REPO,
                                  timeout))
    proc = subprocess.run([python, "-S", "-c", source, *args], env=full_env, capture_output=True,
                          text=True, timeout=timeout, cwd=cwd or REPO, check=False)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def run_cli(*args: str, paths: tuple[Path, ...] = (), **env: str) -> Result:
    """``sglang-shims ARGS`` in a fresh interpreter where the shims are not active; its last
    stdout line is ``{"exit": code, "heavy": [the heavy packages it imported]}``."""
    from .programs import program

    return run_python(program("cli/main"), paths=paths, env=env, activate=False, args=args)


def need(module: str) -> None:
    """Skip (with the reason) when the third-party ``module`` is missing -- except in CI,
    where ``.ci/run`` installs it and its absence is a failure.

    Never for our own modules: an ImportError of ``sglang_shims.*`` is a bug, not an
    absence, and must fail wherever it happens.
    """
    import importlib.util

    assert module.partition(".")[0] != "sglang_shims", "need() is for third-party modules"
    if importlib.util.find_spec(module) is None:
        message = f"{module} is not installed (pip install -r tests/requirements/serving.txt)"
        if os.environ.get("SGLANG_SHIMS_CI"):
            pytest.fail(message)
        pytest.skip(message)


def imported_by_running(source: Path) -> list[str]:
    """The modules that running ``source``'s text (as another module) adds to a bare
    ``python -S -I`` that has imported ``os`` (as every start does), where ``typing`` and
    ``collections.abc`` are not loaded yet: what a module that start-up or wake-up runs
    costs beyond itself."""
    program = ("import os, sys\nbefore = set(sys.modules)\n"
               f"text = open({str(source)!r}, encoding='utf-8').read()\n"
               "exec(compile(text, 'source', 'exec'), {'__name__': 'another_name'})\n"
               "print(sorted(set(sys.modules) - before))\n")
    out = subprocess.run([sys.executable, "-S", "-I", "-c", program], capture_output=True,
                         text=True, check=True).stdout
    added: list[str] = json.loads(out.replace("'", '"'))
    return added
