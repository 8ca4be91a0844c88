"""Is sglang-shims active at all, here and in a fresh interpreter of this environment?

"Nothing got patched" has one cause before all others: the ``.pth`` line never ran
(a ``pip install --target`` folder on ``PYTHONPATH``, a site-packages folder that is
not a site directory, ``python -S``) or ``SGLANG_SHIMS=0`` turned it off.  Both are
told apart here, for this interpreter and for a child started as sglang would start
one (``sys.executable``, this environment), each with the remedy that fits.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import jsonfile
from ..facts import Facts
from ..finding import Finding, Level

PTH = "sglang_shims.pth"
CHILD_TIMEOUT = 30.0

# Run in the child: asks the bootstrap who activated it (importing it activates nothing).
CHILD_CODE = """\
import json, sys
from sglang_shims import _bootstrap
print(json.dumps({"origin": _bootstrap.active(), "no_site": bool(sys.flags.no_site)}))
"""


@dataclass(frozen=True)
class HookState:
    active: bool
    origin: str | None
    """``pth``, ``start``, ``launch``, ``launch-site``, ``plugin``, ``install``; None when
    nothing activated sglang-shims in that process (nor will the ``.pth``)."""
    no_site: bool = False


def this_interpreter() -> HookState:
    """The hook's state in the running process (the CLI is a process like any other)."""
    from .... import _bootstrap

    origin = _bootstrap.active()
    return HookState(origin is not None, origin, bool(sys.flags.no_site))


def child_interpreter(environ: Mapping[str, str]) -> HookState | str:
    """The hook's state in ``sys.executable -c ...``; a string says why it could not be told."""
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD_CODE], capture_output=True,
                              text=True, timeout=CHILD_TIMEOUT, env=dict(environ), check=False)
        # the last line is ours, unless something the child ran at exit printed after it
        last = (proc.stdout.strip().splitlines() or ["{}"])[-1]
        data: dict[str, Any] = jsonfile.loads(last, max_bytes=1 << 16)
        if not isinstance(data, dict):
            raise ValueError(f"its last line is not the answer: {last[:80]!r}")
    except subprocess.TimeoutExpired:
        return f"no answer within {CHILD_TIMEOUT:.0f} s"
    except (OSError, ValueError, IndexError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    origin = data.get("origin") or None
    return HookState(origin is not None, origin, bool(data.get("no_site")))


def site_dirs() -> list[Path]:
    import site

    dirs = [*site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [Path(d) for d in dict.fromkeys(dirs)]


def describe(check: str, where: str, state: HookState, environ: Mapping[str, str],
             pth_dirs: Iterable[Path]) -> Finding:
    """The finding ``check`` makes of one interpreter's hook state.

    ``pth_dirs`` are the site directories that hold ``sglang_shims.pth``.
    """
    if state.active:
        how = {"pth": "the .pth hook", "start": "the PEP 829 .start entry",
               "launch": "sglang-shims launch", "launch-site": "the launcher's sitecustomize",
               }.get(state.origin or "", state.origin or "an explicit install()")
        return Finding(check, Level.OK, f"active in {where} (installed by {how})")
    value = environ.get("SGLANG_SHIMS", "").strip()
    if value.lower() in ("0", "false", "off", "no"):
        return Finding(check, Level.WARN, f"off in {where}: SGLANG_SHIMS={value} turns "
                       "sglang-shims off, so no patch acts",
                       "unset SGLANG_SHIMS (or set it to 1) to turn the patches on")
    if state.no_site:
        return Finding(check, Level.WARN, f"inactive in {where}: it runs with python -S, so no "
                       ".pth file is processed",
                       "run without -S (nothing can activate sglang-shims under -S)")
    found = [str(d) for d in pth_dirs]
    if found:
        return Finding(check, Level.FAIL, f"inactive in {where}: {PTH} is in "
                       f"{', '.join(found)} but did not install the import hook",
                       "reinstall: pip install --force-reinstall sglang-shims (and check that "
                       "the folder is a site directory of this Python)")
    return Finding(check, Level.FAIL, f"inactive in {where}: no site-packages folder of "
                   f"{sys.executable} holds {PTH} (a pip install --target folder on PYTHONPATH, "
                   "or a checkout on sys.path?)",
                   "pip install sglang-shims into this environment, or start sglang through "
                   "`sglang-shims launch ...`, which activates it in every child")


def check_hook(facts: Facts) -> list[Finding]:
    if facts.env.hermetic:
        return []
    environ = facts.environ or dict(os.environ)
    pth_dirs = [d for d in site_dirs() if (d / PTH).is_file()]
    out = [describe("hook", "this interpreter", this_interpreter(), environ, pth_dirs)]
    child = child_interpreter(environ)
    if isinstance(child, str):
        out.append(Finding("hook-child", Level.WARN, f"could not start {sys.executable} to "
                           f"check a child interpreter: {child}", ""))
        return out
    out.append(describe("hook-child", f"a new {Path(sys.executable).name} process", child,
                        environ, pth_dirs))
    return out
