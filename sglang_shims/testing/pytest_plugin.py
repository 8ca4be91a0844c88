"""pytest fixtures for testing patches: stand-in kernels and real sglang wheels.

Opt in from a ``conftest.py``: ``pytest_plugins = ["sglang_shims.testing.pytest_plugin"]``.
(It is deliberately not a ``pytest11`` entry point: the ``.pth`` hook imports
``sglang_shims`` at interpreter start, which would make pytest warn in every project
of the environment that it cannot rewrite a plugin package imported that early.)
Then::

    def test_my_patch(standin_kernel, sglang_release):
        kernel = standin_kernel("0.3.18")     # a PYTHONPATH entry with sgl_kernel 0.3.18
        sglang = sglang_release("0.5.1")      # the real wheel, unpacked
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def standin_kernel(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Factory: ``standin_kernel(version, name=None, drop=(), add=(), torch_ops=())`` ->
    folder (see :func:`sglang_shims.testing.standin.build`)."""
    from . import standin

    made: dict[tuple[object, ...], Path] = {}

    def make(version: str, name: str | None = None, drop: tuple[str, ...] = (),
             add: tuple[str, ...] = (), torch_ops: tuple[str, ...] = ()) -> Path:
        key = (version, name, drop, add, torch_ops)
        if key not in made:
            dest = tmp_path_factory.mktemp(f"sgl_kernel-{version}")
            made[key] = standin.build(version, dest, name=name, drop=drop, add=add,
                                      torch_ops=torch_ops)
        return made[key]

    return make


@pytest.fixture(scope="session")
def pypi_release() -> Callable[[str, str], Path]:
    """Factory: ``pypi_release(dist, version)`` -> the wheel unpacked (cached on disk), a
    folder to put first on ``PYTHONPATH`` (e.g. another transformers for one test)."""
    from . import wheels

    def get(dist: str, version: str) -> Path:
        try:
            return wheels.unpack(dist, version)
        except wheels.NotServed as exc:
            pytest.skip(f"the package index could not serve {dist}=={version}: {exc}")
        except RuntimeError as exc:
            pytest.fail(str(exc))

    return get


@pytest.fixture(scope="session")
def sglang_release(pypi_release: Callable[[str, str], Path]) -> Callable[[str], Path]:
    """Factory: ``sglang_release(version)`` -> unpacked real sglang wheel (cached on disk)."""
    return lambda version: pypi_release("sglang", version)
