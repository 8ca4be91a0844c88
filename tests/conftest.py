"""Wiring only: plugins, the hypothesis profile and the fixtures every layer may use.

The helpers themselves live in ``tests/support`` (the only modules of ``tests/`` a test
module may import) and the subprocess programs in ``tests/programs``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .support.venvs import Venv, build_wheel, new_venv

pytest_plugins = [
    "sglang_shims.testing.pytest_plugin",  # real wheels: sglang_release, pypi_release, ...
    "tests.support.ci_skips",  # under SGLANG_SHIMS_CI=1 an unlisted skip is a failure
    "tests.support.engine",  # seam: a real engine in the test's own process
    "tests.support.stacks",  # sglang051, sglang0513, sglang0517
    "tests.support.fetch_log",  # SGLANG_SHIMS_FETCH_LOG=FILE: what the suite downloads
    "tests.support.hermetic",  # a test not marked wheels reads no published wheel
]

# Property tests check behaviour, never speed (speed lives in benchmarks/): no deadline,
# and no failure because a loaded CI machine generated examples slowly.  Same number of
# examples as hypothesis' default.
try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("sglang-shims", deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("sglang-shims")
except ImportError:  # hypothesis is a test extra; its tests skip without it
    pass


@pytest.fixture(scope="session", autouse=True)
def _private_tmpdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every subprocess of the suite gets this session's temp dir (TMPDIR), so what it puts
    under the temp dir -- the launcher's default report folder, say -- never lands in the
    shared /tmp, where a user's ``sglang-shims status`` would find it."""
    path = tmp_path_factory.mktemp("tmpdir")
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = old


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's wheel, built once per session."""
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture
def make_venv(tmp_path: Path) -> Callable[[], Venv]:
    """Makes fresh virtual environments (without pip) under the test's tmp_path."""
    return lambda: new_venv(tmp_path)
