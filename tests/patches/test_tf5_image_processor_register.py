"""tf5-image-processor-register: sglang 0.5.1's config package on transformers 5.3.0.

sglang 0.5.1 pins transformers 4.55.2; on transformers 5.0.0rc3-5.3.0 its positional
``AutoImageProcessor.register`` call raises at ``import sglang.srt.configs``.  With the
patch the import works and Janus-Pro's image processor is registered exactly as
transformers 4.55.2 registers it (computed in the same test, not written down).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.run import need
from ._transformers import end_with_state, import_attempt, run_json, transformers_paths

pytestmark = pytest.mark.wheels

PATCH = "tf5-image-processor-register"
BROKEN = "5.3.0"  # the last transformers of the broken window

CODE = """
import json
import transformers
result = {"transformers": transformers.__version__}
""" + import_attempt("sglang.srt.configs") + """
if result["import"] == "ok":
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING
    from sglang.srt.configs.janus_pro import MultiModalityConfig
    entry = IMAGE_PROCESSOR_MAPPING[MultiModalityConfig]
    result["registered"] = [None if c is None else f"{c.__module__}.{c.__qualname__}"
                            for c in entry]
""" + end_with_state(PATCH)


@pytest.fixture(scope="module")
def sglang051(sglang_release: Callable[[str], Path]) -> Path:
    need("torch")
    return sglang_release("0.5.1")


def run(paths: tuple[Path, ...], activate: bool = True, **env: str) -> dict[str, Any]:
    return run_json(CODE, paths, env, activate=activate, timeout=300, transformers=None)


def test_import_fails_stock_and_works_patched_as_on_transformers4(
        sglang051: Path, pypi_release: Callable[[str, str], Path]) -> None:
    broken = (*transformers_paths(pypi_release, BROKEN), sglang051)
    stock = run(broken, SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["transformers"] == BROKEN
    assert stock["state"] == "disabled"
    assert stock["import"] == ("TypeError: AutoImageProcessor.register() got multiple values "
                               "for argument 'exist_ok'")

    patched = run(broken)
    assert patched["transformers"] == BROKEN
    assert patched["state"] == "applied"
    assert patched["import"] == "ok"

    pinned = run((sglang051,), activate=False)  # sglang 0.5.1's own transformers pin
    assert pinned["transformers"] == "4.55.2" and pinned["import"] == "ok"
    assert patched["registered"] == pinned["registered"]
    assert pinned["registered"][0] == "sglang.srt.configs.janus_pro.VLMImageProcessor"
