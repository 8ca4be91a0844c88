"""docs/gpus.md's inputs say what the page claims (that the page and the doctor's copy are
what ``python -m tools.refresh gpus-page`` renders from them is also the refresh's check,
``tests/scripts/test_refresh.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tools.gpus import page
from tools.refresh.context import Context
from tools.refresh.registry import by_name

from ..support.run import REPO


def _json(rel: str) -> Any:
    return json.loads((REPO / rel).read_text(encoding="utf-8"))


def test_the_page_and_the_doctor_copy_are_one_generators() -> None:
    (generator,) = by_name(["gpus-page"])
    assert generator.outputs(Context()) == [page.PAGE, page.DOCTOR]
    assert generator.check(Context()) == []
    assert "python -m tools.refresh gpus-page" in (REPO / page.PAGE).read_text(encoding="utf-8")


def test_the_readme_links_the_page() -> None:
    assert "docs/gpus.md" in (REPO / "README.md").read_text(encoding="utf-8")


def test_images_as_the_loader_sees_them() -> None:
    """Read from the wheels: sm_120a runs on 12.0 only (GB10, 12.1, has no image in any
    release read); sm_80 SASS runs on 8.6/8.7; sm_75 left after 0.3.5; sm_100f covers 10.3
    from 0.4.6.post1; Thor (11.0) has none."""
    releases = _json(page.IMAGES)["releases"]

    def having(cap: tuple[int, int]) -> set[str]:
        return {name for name, rel in releases.items()
                if page.image_for(rel["libraries"], cap) != "none"}

    everything = set(releases)
    assert having((12, 1)) == having((11, 0)) == set()
    assert having((7, 5)) == {"sgl-kernel 0.3.5"}
    assert having((8, 6)) == having((8, 9)) == having((9, 0)) == everything
    assert having((12, 0)) == everything - {"sgl-kernel 0.3.5", "sgl-kernel 0.3.6.post1",
                                            "sgl-kernel 0.3.8"}
    assert {"sglang-kernel 0.4.2", "sglang-kernel 0.4.10"} <= having((10, 3))
    assert "sglang-kernel 0.4.0" not in having((10, 3))


def test_sglang_attention_stock_overflows_and_patched_fits_on_sm120() -> None:
    data = _json(page.ATTENTION)
    assert data["limit"] == 101376
    assert len(data["releases"]) >= 5
    for version, found in data["releases"].items():
        assert any(r["problems"] for r in found["stock"]), version
        assert not any(r["problems"] for r in found["patched"]), version


def test_patch_gates_are_read_from_the_manifests() -> None:
    gates = page.gated_patches()
    assert gates["sm120-triton-attention-tiles"] == ">=12.0,<13"
    assert set(gates) >= {"sm120-trtllm-backend-autoselect", "triton-ptxas-blackwell"}


def test_a_change_to_the_kernels_code_is_noted_against_the_committed_run(tmp_path: Path
                                                                         ) -> None:
    """The committed full run names the kernel code it compiled; other code is a note of
    ``--check`` (rerunning takes hours; CI compiles the largest configurations anyway)."""
    from tools.gpus import compile_check
    from tools.refresh import gpus

    ops = tmp_path / "sglang_shims" / "kernels" / "ops"
    ops.mkdir(parents=True)
    (ops / "norm.py").write_text("BLOCK = 1024\n", encoding="utf-8")
    results = tmp_path / gpus.COMPILE
    results.parent.mkdir(parents=True)
    triton = _json(gpus.COMPILE)["triton"]
    made = {"sample": "configs", "sources": compile_check.sources_digest(tmp_path),
            "triton": triton, "arches": {}}
    results.write_text(json.dumps(made), encoding="utf-8")
    context = Context(root=tmp_path)
    assert not [n for n in gpus.stale_compile(context) if "kernel code" in n]
    (ops / "norm.py").write_text("BLOCK = 2048\n", encoding="utf-8")
    assert [n for n in gpus.stale_compile(context) if "kernel code" in n] == [
        f"{gpus.COMPILE}: made from other kernel code (sources {made['sources']});"
        " `python -m tools.refresh gpu-compile gpus-page`"]


def test_a_refresh_reads_only_the_kernel_wheels_it_has_not_read(monkeypatch: Any) -> None:
    """A kernel wheel is up to 400 MB and never changes under its name: the images already
    in the committed file are kept, only a release new to the list is downloaded."""
    read: list[tuple[str, str]] = []

    def fake_read(dist: str, version: str) -> dict[str, Any]:
        read.append((dist, version))
        return {"wheel": f"{dist}-{version}.whl", "libraries": {"": [[1, 90, 0]]}}

    monkeypatch.setattr(page, "read_wheel", fake_read)
    known = {"sgl-kernel 0.3.0": {"wheel": "kept.whl", "libraries": {"": [[1, 80, 0]]}}}
    text = page.images_text((("sgl-kernel", "0.3.0"), ("sglang-kernel", "9.9.9")), known)
    assert read == [("sglang-kernel", "9.9.9")]
    releases = json.loads(text)["releases"]
    assert releases["sgl-kernel 0.3.0"]["wheel"] == "kept.whl"
    assert releases["sglang-kernel 9.9.9"]["wheel"] == "sglang-kernel-9.9.9.whl"
