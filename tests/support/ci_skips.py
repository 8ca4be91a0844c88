"""In CI (``SGLANG_SHIMS_CI=1``) a skip is a failure unless its reason is on a short list.

A skip is only honest when it names something outside this repository that the machine
lacks (a GPU, a compiler).  Anything else -- a missing test dependency that ``.ci/run``
installs, an ImportError from our own modules caught by a test's set-up, a cache another
test was meant to fill -- would let a broken build pass as "skipped", so CI turns it into
a failure.  The list is checked by ``tests/unit/test_ci_skips.py``; add to it only an absence
that the CI machine really has, with the reason.

Loaded as a plugin by ``tests/conftest.py``; no test collects this module.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

# (reason prefix, why CI may lack it).  The CI machine: 2 CPU cores, no GPU, no CUDA
# toolkit, a Python venv with .ci/run's requirements installed.
CI_ALLOWED_SKIPS: tuple[tuple[str, str], ...] = (
    ("no CUDA GPU", "the CI machine has no GPU; compiled-kernel tests run on the GPU host"),
    ("nvcc is not installed", "the CUDA toolkit is not a Python package; CI has none"),
    ("c++filt is not installed", "binutils is a system package, absent from slim images"),
    ("the package index could not serve", "a pinned file the index lists but did not serve"
     " that hour (an HTTP error, a file still reaching the mirrors): a fact about the index,"
     " not the code; every environment a test builds is pinned, so the next run gets it"),
)


def in_ci() -> bool:
    return bool(os.environ.get("SGLANG_SHIMS_CI"))


def allowed(reason: str) -> bool:
    """Is a skip with this reason acceptable in CI?"""
    text = reason.removeprefix("Skipped: ").strip()
    return any(text.startswith(prefix) for prefix, _ in CI_ALLOWED_SKIPS)


def _reason(longrepr: object) -> str:
    # a skip's longrepr is (path, line, "Skipped: reason"); anything else, as text
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _fail_unlisted(report: pytest.TestReport | pytest.CollectReport) -> None:
    if not (in_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = _reason(report.longrepr)
    if allowed(reason):
        return
    report.outcome = "failed"
    report.longrepr = (f"skipped in CI (SGLANG_SHIMS_CI=1) for a reason not on "
                       f"CI_ALLOWED_SKIPS in tests/support/ci_skips.py: {reason}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    _fail_unlisted(outcome.get_result())  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector
                               ) -> Generator[None, pytest.CollectReport, None]:
    """A whole module skipped at import (``importorskip`` at module level) counts too."""
    outcome = yield
    _fail_unlisted(outcome.get_result())  # type: ignore[attr-defined]
