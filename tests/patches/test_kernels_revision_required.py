"""kernels-revision-required: a fresh sglang 0.5.12 install (transformers 5.6.0 pinned,
kernels unbounded -> today's 0.17.2) on CPU.

Stock, ``import sglang`` fails inside transformers' hub-kernel table.  Patched, it
imports, and the table's entries resolve to the revision kernels 0.14.1 -- the last
release that accepted them -- resolves the same entry to (asked of kernels 0.14.1 in the
same test, without the shims); entries that name a version are untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.run import need

pytestmark = pytest.mark.wheels

PATCH = "kernels-revision-required"

IMPORT_SGLANG = program("patches/kernels_revision_required/import_sglang")
OLD_KERNELS = program("patches/kernels_revision_required/old_kernels")


@pytest.fixture(scope="module")
def fresh_install(pypi_release: Callable[[str, str], Path]) -> tuple[Path, ...]:
    for module in ("torch", "fastapi", "zmq"):
        need(module)
    return (pypi_release("transformers", "5.6.0"), pypi_release("huggingface_hub", "1.33.0"),
            pypi_release("tokenizers", "0.22.2"), pypi_release("kernels", "0.17.2"),
            pypi_release("sglang", "0.5.12"))


def run(code: str, paths: tuple[Path, ...], activate: bool = True,
        **env: str) -> dict[str, Any]:
    return run_json(code, paths, env, activate=activate, transformers=None)


def test_import_sglang_on_a_fresh_install(fresh_install: tuple[Path, ...],
                                          pypi_release: Callable[[str, str], Path]) -> None:
    stock = run(IMPORT_SGLANG, fresh_install, SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["versions"] == ["0.17.2", "5.6.0"] and stock["state"] == "disabled"
    assert stock["import"] == "ValueError: Either a revision or a version must be specified."

    patched = run(IMPORT_SGLANG, fresh_install)
    assert patched["state"] == "applied"
    assert patched["import"] == "ok 0.5.12"
    assert patched["explicit"] == [None, 1]

    old = run(OLD_KERNELS, (pypi_release("huggingface_hub", "1.33.0"),
                            pypi_release("kernels", "0.14.1"),
                            pypi_release("kernels-data", "0.14.1")), activate=False)
    assert old["version"] == "0.14.1"
    assert patched["table_entry"] == old["resolved"] == "main"
