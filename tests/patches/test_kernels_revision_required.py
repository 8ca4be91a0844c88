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

from ..support.run import need
from ._transformers import run_json

pytestmark = pytest.mark.wheels

PATCH = "kernels-revision-required"

IMPORT_SGLANG = """
import json
result = {}
try:
    import sglang
    result["import"] = "ok " + sglang.__version__
    from kernels import LayerRepository, Mode
    from transformers.integrations import hub_kernels
    entry = hub_kernels._KERNEL_MAPPING["RMSNorm"]["cuda"][Mode.INFERENCE]
    result["table_entry"] = entry._resolve_revision()
    pinned = LayerRepository(repo_id="kernels-community/activation", layer_name="Silu",
                             version=1)
    result["explicit"] = [pinned._revision, pinned._version]
except Exception as exc:
    result["import"] = f"{type(exc).__name__}: {exc}"
import sglang_shims, kernels, transformers
result["state"] = sglang_shims.status()["PATCH"]["state"]
result["versions"] = [kernels.__version__, transformers.__version__]
print(json.dumps(result))
""".replace("PATCH", PATCH)

OLD_KERNELS = """
import json, warnings
warnings.simplefilter("ignore")
import kernels
from kernels import LayerRepository
entry = LayerRepository(repo_id="kernels-community/liger_kernels", layer_name="LigerRMSNorm")
print(json.dumps({"version": kernels.__version__, "resolved": entry._resolve_revision()}))
"""


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
