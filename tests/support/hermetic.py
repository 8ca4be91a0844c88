"""A test not marked ``wheels`` reads no published wheel.

The marker is the suite's promise about the network: ``-m "not wheels"`` runs with no
package index at all (only the tests that build fresh venvs still install ``pip``,
``packaging`` and ``wrapt`` there, pinned by constraints).  A test that fetches a real
wheel without the marker passes on a warm cache and downloads, or fails, on a cold one; so
while a test runs, :func:`sglang_shims.testing.wheels.fetch` and ``unpack`` refuse unless
it carries the marker.  Loaded as a plugin by ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_current: list[pytest.Item] = []  # the test running now (none during collection)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _current.append(item)
    try:
        yield
    finally:
        _current.remove(item)


def _guarded(get: Callable[..., Path]) -> Callable[..., Path]:
    def wrapper(dist: str, version: str, cache: Path | None = None,
                pip_args: tuple[str, ...] = ()) -> Path:
        if cache is None and _current and _current[-1].get_closest_marker("wheels") is None:
            raise pytest.fail.Exception(
                f"{_current[-1].nodeid} reads the published {dist} {version} wheel: mark it"
                " @pytest.mark.wheels (on an empty cache it downloads)", pytrace=False)
        return get(dist, version, cache, pip_args)

    return wrapper


def pytest_configure(config: pytest.Config) -> None:
    from sglang_shims.testing import wheels

    wheels.fetch = _guarded(wheels.fetch)  # type: ignore[method-assign]
    wheels.unpack = _guarded(wheels.unpack)  # type: ignore[method-assign]
