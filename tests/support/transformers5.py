"""Another transformers first on the path: the transformers-skew patch tests' stacks.

The test environment has sglang 0.5.1's pins (transformers 4.55.2).  A test that needs
transformers 5 puts the published wheels of transformers and of the huggingface_hub and
tokenizers releases it accepts (Requires-Dist) first on the subprocess's ``PYTHONPATH``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .patch_runs import run_stock
from .run import need, run_python

# transformers release -> the hub and tokenizers wheels that satisfy its Requires-Dist
# (5.24.0: huggingface-hub>=1.31.0,<3.0, tokenizers>=0.23.1,<0.24.0).
# (5.3.0: huggingface-hub>=1.3.0,<2.0, tokenizers>=0.22.0,<=0.23.0; 5.5.0: hub >=1.5.0.)
COMPANIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "5.3.0": (("huggingface_hub", "1.3.0"), ("tokenizers", "0.22.2")),
    "5.5.0": (("huggingface_hub", "1.5.0"), ("tokenizers", "0.22.2")),
    "5.24.0": (("huggingface_hub", "1.33.0"), ("tokenizers", "0.23.3")),
}

TRANSFORMERS5 = "5.24.0"  # the transformers every tf5 patch test runs sglang on
REFERENCE_TRANSFORMERS = "4.55.2"  # sglang 0.5.1's pin: where reference values come from


def transformers_paths(pypi_release: Callable[[str, str], Path],
                       version: str) -> tuple[Path, ...]:
    """PYTHONPATH entries (first) that make ``import transformers`` give ``version``."""
    extra = COMPANIONS.get(version, ())
    return (pypi_release("transformers", version),
            *(pypi_release(dist, dist_version) for dist, dist_version in extra))


def sglang_on_transformers5(sglang_release: Callable[[str], Path],
                            pypi_release: Callable[[str, str], Path],
                            standin_kernel: Callable[..., Path] | None = None,
                            sglang: str = "0.5.1") -> tuple[Path, ...]:
    """PYTHONPATH for one sglang release on transformers 5 (and a stand-in sgl-kernel
    0.3.18, which sglang's layers need, when ``standin_kernel`` is given)."""
    need("torch")
    kernel: tuple[Path, ...] = ()
    if standin_kernel is not None:
        for module in ("fastapi", "zmq"):
            need(module)
        kernel = (standin_kernel("0.3.18"),)
    return (*transformers_paths(pypi_release, TRANSFORMERS5), sglang_release(sglang), *kernel)


def sglang_paths_fixture(*, sglang: str = "0.5.1", kernel: bool = True) -> Any:
    """A test file's module-scoped ``paths`` fixture: sglang ``sglang`` on transformers 5,
    with the stand-in sgl-kernel when ``kernel`` (``paths = sglang_paths_fixture()``)."""

    @pytest.fixture(scope="module")
    def paths(sglang_release: Callable[[str], Path], standin_kernel: Callable[..., Path],
              pypi_release: Callable[[str, str], Path]) -> tuple[Path, ...]:
        return sglang_on_transformers5(sglang_release, pypi_release,
                                       standin_kernel if kernel else None, sglang=sglang)

    return paths


def reference_fixture(code: str, name: str) -> Any:
    """A test file's module-scoped ``reference`` fixture: the file ``code`` saves on
    transformers 4.55.2 (see :func:`reference_file`)."""

    @pytest.fixture(scope="module")
    def reference(tmp_path_factory: pytest.TempPathFactory,
                  pypi_release: Callable[[str, str], Path]) -> Path:
        return reference_file(tmp_path_factory, pypi_release, code, name)

    return reference


def comparison_fixtures(code: str, name: str) -> tuple[Any, Any]:
    """A test file's two sides of a comparison with transformers 4.55.2, as module-scoped
    fixtures ``reference, paths = comparison_fixtures(...)``: the values ``code`` saves
    there (:func:`reference_fixture`), and sglang 0.5.1 on transformers 5 with the
    stand-in kernel (:func:`sglang_paths_fixture`), where the patched program recomputes
    them."""
    return reference_fixture(code, name), sglang_paths_fixture()


def reference_file(tmp_path_factory: pytest.TempPathFactory,
                   pypi_release: Callable[[str, str], Path], code: str, name: str) -> Path:
    """Run ``code`` (no shims) on transformers 4.55.2; it saves its values to argv[1]."""
    need("torch")
    out = tmp_path_factory.mktemp(name) / "reference.pt"
    result = run_python(code, paths=(pypi_release("transformers", REFERENCE_TRANSFORMERS),),
                        activate=False, args=(str(out),), fork=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def check_stock_import_fails(code: str, paths: tuple[Path, ...], patch: str, name: str,
                             module: str) -> None:
    """With ``patch`` off, ``code``'s import (``import_attempt``) fails on transformers 5
    because it no longer has ``name`` in ``module`` (before the program would read a
    reference file: none is given)."""
    data = run_stock(code, paths, patch, transformers=TRANSFORMERS5)
    assert data["import"].startswith(f"ImportError: cannot import name {name!r} from {module!r}")
