"""tf54-config-bare-annotations: sglang 0.5.1's config package on transformers 5.5.0.

On transformers 5.4.0 and 5.5.0 ``import sglang.srt.configs`` fails (bare annotations
in Janus-Pro's and DeepSeek-VL2's configs); with the patch it imports, the configs
build and serialise exactly as they do on transformers 4.55.2 (sglang 0.5.1's pin, run
in the same test), VILA's config (unhashable class values) imports too, and a config
class from outside sglang is still judged by transformers alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.programs import FAKE_CUDA
from ..support.run import need
from ._transformers import end_with_state, import_attempt, run_json, transformers_paths

pytestmark = pytest.mark.wheels

PATCH = "tf54-config-bare-annotations"
BROKEN = "5.5.0"  # the later of the two releases with non-keyword-only config fields

CODE = FAKE_CUDA + """
import json
import transformers
from transformers import PretrainedConfig
result = {"transformers": transformers.__version__}
""" + import_attempt("sglang.srt.configs") + """
if result["import"] == "ok":
    from sglang.srt.configs.deepseekvl2 import DeepseekVL2Config
    from sglang.srt.configs.janus_pro import MultiModalityConfig
    ds = DeepseekVL2Config(vision_config={"width": 64}, projector_config={"n_embed": 32},
                           language_config={"hidden_size": 64, "num_hidden_layers": 2})
    mm = MultiModalityConfig(
        vision_config={"cls": "CLIPVisionTower", "params": {"image_size": 384}},
        aligner_config={"cls": "MlpProjector", "params": {"depth": 2}},
        gen_vision_config={"cls": "VQ-16", "params": {}},
        gen_aligner_config={"cls": "MlpProjector", "params": {}},
        gen_head_config={"cls": "vision_head", "params": {}},
        language_config={"hidden_size": 64})
    def plain(config):
        d = config.to_dict()
        d.pop("transformers_version", None)
        return json.loads(json.dumps(d, sort_keys=True, default=str))
    result["deepseekvl2"] = {k: v for k, v in plain(ds).items()
                             if k in ("vision_config", "projector_config", "tile_tag",
                                      "candidate_resolutions", "architectures")}
    result["janus"] = {k: v for k, v in plain(mm).items()
                       if k in ("vision_config", "aligner_config", "gen_head_config")}
    result["vision_width"] = ds.vision_config.width
    try:
        import sglang.srt.models.vila
        result["vila"] = "ok"
    except Exception as exc:
        result["vila"] = f"{type(exc).__name__}: {exc}"
try:
    class Outside(PretrainedConfig):
        model_type = "outside"
        a: int = 1
        b: int
    result["outside"] = "created"
except TypeError as exc:
    result["outside"] = f"TypeError: {exc}"
""" + end_with_state(PATCH)


@pytest.fixture(scope="module")
def paths(sglang_release: Callable[[str], Path], standin_kernel: Callable[..., Path],
          pypi_release: Callable[[str, str], Path]) -> tuple[Path, ...]:
    for module in ("torch", "fastapi", "zmq"):
        need(module)
    return (sglang_release("0.5.1"), standin_kernel("0.3.18"))


def run(paths: tuple[Path, ...], **env: str) -> dict[str, Any]:
    return run_json(CODE, paths, env, transformers=None)


def test_configs_import_and_serialise_as_on_transformers4(
        paths: tuple[Path, ...], pypi_release: Callable[[str, str], Path]) -> None:
    broken = (*transformers_paths(pypi_release, BROKEN), *paths)
    stock = run(broken, SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["transformers"] == BROKEN and stock["state"] == "disabled"
    assert stock["import"] == ("TypeError: non-default argument 'vision_config' follows "
                               "default argument")

    patched = run(broken)
    assert patched["transformers"] == BROKEN and patched["state"] == "applied"
    assert patched["import"] == "ok"
    assert patched["vila"] == "ok"
    assert patched["vision_width"] == 64
    # a class outside sglang is left to transformers, which still refuses it
    assert patched["outside"] == stock["outside"]
    assert patched["outside"].startswith("TypeError: non-default argument 'b'")

    pinned = run(paths)  # transformers 4.55.2: the behaviour to preserve
    assert pinned["transformers"] == "4.55.2" and pinned["import"] == "ok"
    assert pinned["state"] == "not-applicable"
    # Nested configs also carry each transformers' own base attributes (v4 has more);
    # sglang's fields -- everything both versions write -- must be identical.
    for key in ("deepseekvl2", "janus"):
        assert common(patched[key], pinned[key]) == common(pinned[key], patched[key])
        assert patched[key].keys() == pinned[key].keys()
    for name, field in (("vision_config", "width"), ("projector_config", "n_embed")):
        assert patched["deepseekvl2"][name][field] == pinned["deepseekvl2"][name][field]
    assert patched["deepseekvl2"]["vision_config"]["width"] == 64


def common(a: Any, b: Any) -> Any:
    """``a`` restricted, recursively, to the keys ``b`` also has."""
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: common(a[k], b[k]) for k in a.keys() & b.keys()}
    return a
