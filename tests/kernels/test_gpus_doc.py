"""docs/gpus.md and the doctor's copy are what ``tools/gpus_doc.py`` writes from the
committed inputs (offline), and those inputs say what the page claims."""

from __future__ import annotations

import json
from typing import Any

from .._scripts import load_script
from ..conftest import REPO


def tool() -> Any:
    return load_script("tools/gpus_doc.py", "gpus_doc_under_test")


def test_the_page_and_the_doctor_copy_are_generated() -> None:
    for path, text in tool().outputs().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(REPO)} differs from what python tools/gpus_doc.py writes")


def test_the_readme_links_the_page() -> None:
    assert "docs/gpus.md" in (REPO / "README.md").read_text(encoding="utf-8")


def test_images_as_the_loader_sees_them() -> None:
    """Read from the wheels: sm_120a runs on 12.0 only (GB10, 12.1, has no image in any
    release read); sm_80 SASS runs on 8.6/8.7; sm_75 left after 0.3.5; sm_100f covers 10.3
    from 0.4.6.post1; Thor (11.0) has none."""
    gd = tool()
    releases = json.loads(gd.IMAGES.read_text(encoding="utf-8"))["releases"]

    def having(cap: tuple[int, int]) -> set[str]:
        return {name for name, rel in releases.items()
                if gd.image_for(rel["libraries"], cap) != "none"}

    everything = set(releases)
    assert having((12, 1)) == having((11, 0)) == set()
    assert having((7, 5)) == {"sgl-kernel 0.3.5"}
    assert having((8, 6)) == having((8, 9)) == having((9, 0)) == everything
    assert having((12, 0)) == everything - {"sgl-kernel 0.3.5", "sgl-kernel 0.3.6.post1",
                                            "sgl-kernel 0.3.8"}
    assert {"sglang-kernel 0.4.2", "sglang-kernel 0.4.10"} <= having((10, 3))
    assert "sglang-kernel 0.4.0" not in having((10, 3))


def test_sglang_attention_stock_overflows_and_patched_fits_on_sm120() -> None:
    data = json.loads(tool().ATTENTION.read_text(encoding="utf-8"))
    assert data["limit"] == 101376
    assert len(data["releases"]) >= 5
    for version, found in data["releases"].items():
        assert any(r["problems"] for r in found["stock"]), version
        assert not any(r["problems"] for r in found["patched"]), version


def test_patch_gates_are_read_from_the_manifests() -> None:
    gates = tool().gated_patches()
    assert gates["sm120-triton-attention-tiles"] == ">=12.0,<13"
    assert set(gates) >= {"sm120-trtllm-backend-autoselect", "triton-ptxas-blackwell"}
