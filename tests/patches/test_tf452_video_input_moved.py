"""tf452-video-input-moved: sglang 0.4.4.post1's configs on transformers 5, and the
engine's decisions in-process.

On the real wheels: stock, ``sglang.srt.configs`` does not import on transformers 5.24.0
(``VideoInput`` is gone from ``image_utils``).  Patched, it imports; the name the file
bound is transformers' own ``video_utils.VideoInput``, its processor's annotation points
at it, and the file's image processor returns, on three images and a four-frame video,
arrays byte for byte equal to the same release's on its pinned transformers 4.48.3, where
the name is ``image_utils``' own and the patch is outside its gate.

In-process (``shim_patch``, the test environment's transformers): the patch binds the real
alias, ``revert()`` removes it, and the gates and the retire rule say no where they must.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sglang_shims.testing.inprocess import ShimPatch

from ..support import transformers5 as tf5
from ..support.patch_runs import run_applied, run_json, run_stock
from ..support.programs import patch_programs
from ..support.run import need

PATCH = "tf452-video-input-moved"
FOLDER = Path(__file__).resolve().parents[2] / "patches" / PATCH
SGLANG = "0.4.4.post1"  # the last release that ships configs/qwen2_5_vl_config.py
PINNED = "4.48.3"  # its transformers pin, where image_utils still defines VideoInput

(PROCESSOR,) = patch_programs(PATCH, "processor")

# The import line of sglang's qwen2_5_vl_config.py that breaks, as little of it as shows it.
TARGET = """\
from transformers.image_utils import ImageInput, VideoInput
"""


@pytest.fixture(scope="module")
def sglang(sglang_release: Callable[[str], Path]) -> Path:
    for module in ("torch", "PIL"):
        need(module)
    return sglang_release(SGLANG)


@pytest.mark.wheels
def test_stock_configs_do_not_import_on_transformers5(
        sglang: Path, pypi_release: Callable[[str, str], Path]) -> None:
    paths = (*tf5.transformers_paths(pypi_release, tf5.TRANSFORMERS5), sglang)
    data = run_stock(PROCESSOR, paths, PATCH, transformers=tf5.TRANSFORMERS5)
    assert data["import"].startswith(
        "ImportError: cannot import name 'VideoInput' from 'transformers.image_utils'")


@pytest.mark.wheels
def test_patched_processor_equals_the_pinned_release(
        sglang: Path, pypi_release: Callable[[str, str], Path]) -> None:
    pinned = run_json(PROCESSOR, (pypi_release("transformers", PINNED), sglang),
                      transformers=PINNED,
                      expect={"import": "ok", "state": "not-applicable",
                              "image_utils_binds": True, "annotation_is_alias": True})
    assert "video_utils_alias" not in pinned  # 4.48.3 has no video_utils

    paths = (*tf5.transformers_paths(pypi_release, tf5.TRANSFORMERS5), sglang)
    data = run_applied(PROCESSOR, paths, PATCH, transformers=tf5.TRANSFORMERS5)
    assert data["import"] == "ok"
    assert data["video_utils_alias"] is True and data["image_utils_binds"] is True
    assert data["annotation_is_alias"] is True
    assert data["images"] == pinned["images"]
    assert data["video"] == pinned["video"]
    assert data["images"]["pixel_values"][0][0] > 0 and data["video"]["video_grid_thw"][0][0] == 1


def test_binds_the_real_alias_and_reverts(shim_patch: ShimPatch) -> None:
    from transformers import image_utils, video_utils

    assert "VideoInput" not in vars(image_utils)  # the test environment's transformers >= 4.52
    record = shim_patch(FOLDER, TARGET, versions={"sglang": SGLANG})
    assert record.state == "applied", record.reason
    assert shim_patch.module is not None
    assert shim_patch.module.VideoInput is video_utils.VideoInput
    assert vars(image_utils)["VideoInput"] is video_utils.VideoInput
    assert shim_patch.engine is not None and shim_patch.engine.revert() == []
    assert "VideoInput" not in vars(image_utils)


def test_stock_import_fails_in_process(shim_patch: ShimPatch) -> None:
    with pytest.raises(ImportError, match="cannot import name 'VideoInput'"):
        shim_patch(FOLDER, TARGET, versions={"sglang": SGLANG},
                   environ={"SGLANG_SHIMS_DISABLE": PATCH})


@pytest.mark.parametrize(("versions", "state"), [
    ({"sglang": "0.4.3"}, "not-applicable"),  # no qwen2_5_vl_config.py yet
    ({"sglang": "0.4.3.post1"}, "applied"),
    ({"sglang": "0.4.4.post2"}, "not-applicable"),  # the file is gone
    ({"sglang": SGLANG, "transformers": "4.51.3"}, "not-applicable"),  # image_utils has it
    ({"sglang": SGLANG, "transformers": "4.52.0"}, "applied"),
])
def test_gates(shim_patch: ShimPatch, versions: dict[str, str], state: str) -> None:
    if state == "applied":
        record = shim_patch(FOLDER, TARGET, versions=versions)
    else:  # left alone, the body fails as stock: this transformers lacks the name
        with pytest.raises(ImportError, match="cannot import name 'VideoInput'"):
            shim_patch(FOLDER, TARGET, versions=versions)
        assert shim_patch.engine is not None
        record = shim_patch.engine.observed()[PATCH]
    assert record.state == state, record.reason


def test_retired_where_image_utils_has_the_name(shim_patch: ShimPatch,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import image_utils

    own = object()
    monkeypatch.setattr(image_utils, "VideoInput", own, raising=False)
    record = shim_patch(FOLDER, TARGET, versions={"sglang": SGLANG})
    assert record.state == "retired", record.reason
    assert vars(image_utils)["VideoInput"] is own
