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

from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.run import need
from ..support.transformers5 import transformers_paths

pytestmark = pytest.mark.wheels

PATCH = "tf5-image-processor-register"
BROKEN = "5.3.0"  # the last transformers of the broken window

CODE = program("patches/tf5_image_processor_register")


def run(paths: tuple[Path, ...], activate: bool = True, **env: str) -> dict[str, Any]:
    return run_json(CODE, paths, env, activate=activate, timeout=300)


def test_import_fails_stock_and_works_patched_as_on_transformers4(
        sglang051: Path, pypi_release: Callable[[str, str], Path]) -> None:
    need("torch")
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
