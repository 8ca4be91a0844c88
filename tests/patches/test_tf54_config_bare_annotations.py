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

from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.run import need
from ..support.transformers5 import transformers_paths

pytestmark = pytest.mark.wheels

PATCH = "tf54-config-bare-annotations"
BROKEN = "5.5.0"  # the later of the two releases with non-keyword-only config fields

CODE = program("patches/tf54_config_bare_annotations")


@pytest.fixture(scope="module")
def paths(sglang_release: Callable[[str], Path], standin_kernel: Callable[..., Path],
          pypi_release: Callable[[str, str], Path]) -> tuple[Path, ...]:
    for module in ("torch", "fastapi", "zmq"):
        need(module)
    return (sglang_release("0.5.1"), standin_kernel("0.3.18"))


def run(paths: tuple[Path, ...], **env: str) -> dict[str, Any]:
    return run_json(CODE, paths, env)


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
