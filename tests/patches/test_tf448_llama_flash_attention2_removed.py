"""tf448-llama-flash-attention2-removed: a remote modeling file written for transformers 4.47.

DeepSeek-OCR's ``modeling_deepseekv2.py`` (trust_remote_code) imports
``LlamaFlashAttention2`` from transformers' modeling_llama, which 4.48 folded into
``LlamaAttention``.  A module with that import, a class table naming it and a subclass of
it is imported here from a folder on the path, as transformers' dynamic module loader
imports remote code, under sglang 0.5.1 (the real wheel) on transformers 4.55.2 (its pin)
and 5.24.0.  Stock, the import fails; patched, the flash-attention entry builds with
(config, layer_idx), is a LlamaAttention, and its forward runs and equals a
LlamaAttention's with the same weights.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program, tree_fixture
from ..support.run import need
from ..support.transformers5 import TRANSFORMERS5, transformers_paths

pytestmark = pytest.mark.wheels

PATCH = "tf448-llama-flash-attention2-removed"

CODE = program("patches/tf448_llama_flash_attention2_removed/remote_code")

# the folder of the remote code (modeling_remote.py), for the program to import from
remote = tree_fixture("patches/tf448_llama_flash_attention2_removed")


@pytest.mark.parametrize("transformers", ["4.55.2", TRANSFORMERS5])
def test_remote_flash_attention_class_imports_and_runs(
        transformers: str, remote: Path, sglang_release: Callable[[str], Path],
        pypi_release: Callable[[str, str], Path]) -> None:
    need("torch")
    tf = () if transformers == "4.55.2" else transformers_paths(pypi_release, transformers)
    paths = (*tf, sglang_release("0.5.1"))

    def run(**env: str) -> dict[str, Any]:
        return run_json(CODE, paths, env, args=(str(remote),), timeout=300,
                        transformers=transformers)

    stock = run(SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["state"] == "disabled"
    assert stock["error"].startswith("ImportError: cannot import name 'LlamaFlashAttention2' "
                                     "from 'transformers.models.llama.modeling_llama'"), stock
    patched = run()
    assert patched["state"] == "applied" and "error" not in patched, patched
    assert patched["is_llama_attention"] is True and patched["same"] is True
