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

from ._transformers import TRANSFORMERS5, end_with_state, run_json, transformers_paths

pytestmark = pytest.mark.wheels

PATCH = "tf5-gpt2-bytes-to-unicode"

REMOTE = '''
from transformers.models.gpt2.tokenization_gpt2 import bytes_to_unicode


class ByteLevelTable:
    def __init__(self):
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
'''

CODE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import transformers
result = {"transformers": transformers.__version__}
try:
    import tokenization_remote
    table = tokenization_remote.ByteLevelTable()
    result["table"] = {str(k): v for k, v in table.byte_encoder.items()}
    result["roundtrip"] = all(table.byte_decoder[table.byte_encoder[b]] == b
                              for b in range(256))
except Exception as exc:
    result["error"] = f"{type(exc).__name__}: {exc}"
""" + end_with_state(PATCH)


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("remote_code")
    (folder / "tokenization_remote.py").write_text(REMOTE, encoding="utf-8")
    return folder


def run(paths: tuple[Path, ...], remote: Path, activate: bool = True,
        **env: str) -> dict[str, Any]:
    return run_json(CODE, paths, env, args=(str(remote),), activate=activate, timeout=300,
                    transformers=None)


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
