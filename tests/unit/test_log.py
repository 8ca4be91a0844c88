"""The ``sglang_shims`` logger (``engine.log``): its level from ``SGLANG_SHIMS_LOG``, one
stderr handler of its own whatever sglang does to the root logger, records prefixed with
the pid and kept from the root's handlers."""

from __future__ import annotations

import io
import logging
import os
import sys
from collections.abc import Iterator

import pytest

from sglang_shims.engine import log


@pytest.fixture
def logger(monkeypatch: pytest.MonkeyPatch) -> Iterator[logging.Logger]:
    """The real logger, bare, given back as it was after the test."""
    real = logging.getLogger("sglang_shims")
    saved = (real.level, real.propagate, list(real.handlers))
    real.handlers.clear()
    monkeypatch.delenv("SGLANG_SHIMS_LOG", raising=False)
    yield real
    real.level, real.propagate, real.handlers[:] = saved[0], saved[1], saved[2]


@pytest.mark.parametrize(("value", "level"), [(None, logging.WARNING), ("", logging.WARNING),
                                              (" Debug ", logging.DEBUG),
                                              ("info", logging.INFO),
                                              ("ERROR", logging.ERROR)])
def test_the_level_comes_from_the_variable(logger: logging.Logger, value: str | None, level: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    if value is not None:
        monkeypatch.setenv("SGLANG_SHIMS_LOG", value)
    assert log.configure() == (logger, None)
    assert logger.level == level


def test_a_bad_level_is_a_problem_and_warning(logger: logging.Logger,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_SHIMS_LOG", "Loud")
    assert log.configure() == (logger, "SGLANG_SHIMS_LOG='loud' is not one of "
                               "['debug', 'error', 'info', 'warning']; using warning")
    assert logger.level == logging.WARNING


def test_one_handler_of_its_own_writing_to_stderr_as_it_is_now(
        logger: logging.Logger, monkeypatch: pytest.MonkeyPatch) -> None:
    log.configure()
    log.configure()
    assert len(logger.handlers) == 1 and not logger.propagate
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    logger.warning("drifted: %s", "x")
    logger.info("not shown at warning")
    assert stderr.getvalue() == f"[sglang-shims pid={os.getpid()}] WARNING drifted: x\n"


def test_a_stderr_that_fails_is_logging_s_own_error(logger: logging.Logger,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(io.StringIO):
        calls = 0

        def write(self, text: str) -> int:
            Broken.calls += 1
            if Broken.calls == 1:
                raise OSError("pipe closed")
            return super().write(text)

    log.configure()
    stderr = Broken()
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(logging, "raiseExceptions", True)
    logger.warning("lost")
    assert "--- Logging error ---" in stderr.getvalue()
