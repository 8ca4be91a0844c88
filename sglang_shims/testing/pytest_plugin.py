"""pytest fixtures for testing patches: one patch applied in-process, stand-in kernels and
real sglang wheels.

Opt in from a ``conftest.py``: ``pytest_plugins = ["sglang_shims.testing.pytest_plugin"]``.
(It is deliberately not a ``pytest11`` entry point: that would load it into every pytest
run of the environment, in projects that never test a patch, fixtures that download
wheels included.)
Then::

    def test_my_patch(standin_kernel, sglang_release):
        kernel = standin_kernel("0.3.18")     # a PYTHONPATH entry with sgl_kernel 0.3.18
        sglang = sglang_release("0.5.1")      # the real wheel, unpacked

    def test_my_patch_decides(shim_patch):   # no subprocess: milliseconds
        record = shim_patch("patches/my-patch", "VALUE = 1\\n", versions={"torch": "2.9.1"})
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # the engine is loaded by the fixture, not by loading the plugin
    from .inprocess import ShimPatch


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


@pytest.fixture
def shim_patch(tmp_path: Path) -> Iterator[ShimPatch]:
    """``shim_patch(folder, module_or_source) -> Record``: apply one patch in this process.

    No fresh interpreter: a real engine judges and applies the patch in ``folder`` to
    its target (given as source, or as a module object) through the same loader events
    an import sends, in a few milliseconds.  After the test the patch is reverted and
    ``sys.modules`` is as it was.  Keyword arguments: ``environ`` (``SGLANG_SHIMS_*``
    toggles), ``versions`` (``{"torch": "2.9.1"}``), ``gpus`` (``[(9, 0)]``)::

        def test_my_patch(shim_patch):
            record = shim_patch("patches/my-patch", "def f():\\n    return 1\\n")
            assert record.state == "applied"
            assert shim_patch.module.f() == 2

    What needs a fresh interpreter (start-up, our import hook among other finders, fork,
    exit) is not seen here: run those in a subprocess.
    """
    from . import inprocess

    isolation = inprocess.Isolation()
    helper = inprocess.ShimPatch(tmp_path, isolation)
    yield helper
    problems = isolation.close()
    if problems:
        pytest.fail("shim_patch: " + "; ".join(problems))
