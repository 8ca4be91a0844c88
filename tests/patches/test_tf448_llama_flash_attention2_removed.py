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

from ..support.run import need
from ._transformers import TRANSFORMERS5, end_with_state, run_json, transformers_paths

pytestmark = pytest.mark.wheels

PATCH = "tf448-llama-flash-attention2-removed"

REMOTE = '''
from transformers.models.llama.modeling_llama import LlamaAttention, LlamaFlashAttention2


class RemoteFlashAttention(LlamaFlashAttention2):
    """As remote code specialises the flash-attention class."""


ATTENTION_CLASSES = {"eager": LlamaAttention, "flash_attention_2": RemoteFlashAttention}
'''

CODE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import torch, transformers
result = {"transformers": transformers.__version__}
try:
    import modeling_remote
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as ml
    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                         num_key_value_heads=2, num_hidden_layers=1, vocab_size=32)
    config._attn_implementation = "eager"  # flash attention needs a GPU; the class is one
    torch.manual_seed(0)
    flash = modeling_remote.ATTENTION_CLASSES["flash_attention_2"](config, 0)
    plain = ml.LlamaAttention(config, 0)
    plain.load_state_dict(flash.state_dict())
    x = torch.randn(1, 5, 64)
    cos_sin = ml.LlamaRotaryEmbedding(config=config)(x, torch.arange(5)[None])
    result["is_llama_attention"] = isinstance(flash, ml.LlamaAttention)
    result["same"] = torch.equal(flash(x, cos_sin, None)[0], plain(x, cos_sin, None)[0])
except Exception as exc:
    result["error"] = f"{type(exc).__name__}: {exc}"
""" + end_with_state(PATCH)


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("remote_code")
    (folder / "modeling_remote.py").write_text(REMOTE, encoding="utf-8")
    return folder


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
