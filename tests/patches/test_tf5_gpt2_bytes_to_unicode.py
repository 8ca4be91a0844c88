"""tf5-gpt2-bytes-to-unicode: a remote-code tokenizer's import line on transformers 5.24.

Kimi-K2's ``tokenization_kimi.py`` (loaded with trust_remote_code) does
``from transformers.models.gpt2.tokenization_gpt2 import bytes_to_unicode``.  A module
with that line is imported here from a folder on the path, as transformers' dynamic
module loader imports remote code.  Stock transformers 5 refuses it; with the patch it
imports and the table it builds equals transformers 4.55.2's (run in the same test).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program, tree_fixture
from ..support.transformers5 import TRANSFORMERS5, transformers_paths

pytestmark = pytest.mark.wheels

PATCH = "tf5-gpt2-bytes-to-unicode"

CODE = program("patches/tf5_gpt2_bytes_to_unicode/remote_code")

# the folder of the remote code (tokenization_remote.py), for the program to import from
remote = tree_fixture("patches/tf5_gpt2_bytes_to_unicode")


def run(paths: tuple[Path, ...], remote: Path, activate: bool = True,
        **env: str) -> dict[str, Any]:
    return run_json(CODE, paths, env, args=(str(remote),), activate=activate, timeout=300)


def test_remote_tokenizer_imports_with_transformers4s_table(
        remote: Path, sglang_release: Callable[[str], Path],
        pypi_release: Callable[[str, str], Path]) -> None:
    tf5 = (*transformers_paths(pypi_release, TRANSFORMERS5), sglang_release("0.5.1"))
    stock = run(tf5, remote, SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["transformers"] == TRANSFORMERS5 and stock["state"] == "disabled"
    assert stock["error"].startswith("ImportError: cannot import name 'bytes_to_unicode' "
                                     "from 'transformers.models.gpt2.tokenization_gpt2'")

    patched = run(tf5, remote)
    assert patched["state"] == "applied" and "error" not in patched
    assert patched["roundtrip"] is True

    pinned = run((), remote, activate=False)  # transformers 4.55.2's own function
    assert pinned["transformers"] == "4.55.2" and "error" not in pinned
    assert patched["table"] == pinned["table"]
    assert len(patched["table"]) == 256
