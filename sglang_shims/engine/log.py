"""The ``sglang_shims`` logger: its own stderr handler, level from ``SGLANG_SHIMS_LOG``.

sglang configures the root logger late (and differently per process), and a
warning about a drifted patch must not depend on that.  So our records go to
stderr through our own handler, prefixed with the pid, and do not propagate.
"""

from __future__ import annotations

import logging
import os
import sys

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR}


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at emit time (pytest and sglang redirect it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


def configure() -> tuple[logging.Logger, str | None]:
    """Set up the logger once; returns it and a problem text for a bad level value."""
    logger = logging.getLogger("sglang_shims")
    raw = (os.environ.get("SGLANG_SHIMS_LOG") or "").strip().lower()
    problem = None
    level = LEVELS.get(raw or "warning")
    if level is None:
        from .._toggles import _short  # the one way a value is echoed: cut, never whole

        problem = f"SGLANG_SHIMS_LOG={_short(raw)} is not one of {sorted(LEVELS)}; using warning"
        level = logging.WARNING
    logger.setLevel(level)
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter(
            f"[sglang-shims pid={os.getpid()}] %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    return logger, problem
