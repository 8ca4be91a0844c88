"""Extra patch folders (``SGLANG_SHIMS_PATH``) that cannot work are named, in-process: the
loader's verdicts, and the exit codes of the commands that list patches."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sglang_shims import _bootstrap
from sglang_shims.catalog.load import load
from sglang_shims.cli import main

from ..support.packages import manifest_text, write_patch


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "extra"
    folder.mkdir(mode=0o755)
    write_patch(folder, "good-one", manifest_text("good-one", "shimtarget.good"),
                "def apply(ctx):\n    pass\n")
    return folder


def padded(patch_id: str, padding: int) -> str:
    """A valid manifest whose ``[target]`` table starts ``padding`` bytes in."""
    text = manifest_text(patch_id, "shimtarget.far")
    head, _, tail = text.partition("[target]")
    return head + "# " + "x" * padding + "\n[target]" + tail


def test_a_target_past_what_start_up_reads_is_refused(root: Path) -> None:
    write_patch(root, "far-target", padded("far-target", _bootstrap.EXTRA_HEAD),
                "def apply(ctx):\n    pass\n")
    write_patch(root, "near-target", padded("near-target", 1000), "def apply(ctx):\n    pass\n")
    catalog = load(str(root), include_builtin=False)
    assert sorted(m.id for m in catalog.manifests) == ["good-one", "near-target"]
    error = catalog.errors["far-target"]
    assert "would never wake the engine: it lies past the first 64 KiB" in error
    # and the two readers agree on every manifest that loads
    assert _bootstrap.extra_targets(str(root)) == {m.target for m in catalog.manifests}


def test_a_target_spelling_start_up_cannot_read_is_refused(root: Path) -> None:
    text = manifest_text("odd-target", "shimtarget.odd").replace(
        'module = "shimtarget.odd"', 'module = """shimtarget.odd"""')
    write_patch(root, "odd-target", text, "def apply(ctx):\n    pass\n")
    catalog = load(str(root), include_builtin=False)
    assert "start-up's reader of the [target] module line cannot read it" in (
        catalog.errors["odd-target"])


def test_a_manifest_that_is_not_utf8_names_its_file(root: Path) -> None:
    folder = root / "latin1"
    folder.mkdir(mode=0o755)
    (folder / "manifest.toml").write_bytes(b'id = "latin1"\nsummary = "caf\xe9"\n')
    error = load(str(root), include_builtin=False).errors["latin1"]
    assert error == f"manifest invalid: {folder / 'manifest.toml'} is not UTF-8 text (byte 28)"


def test_thousands_of_missing_entries_are_one_screen(tmp_path: Path) -> None:
    value = os.pathsep.join(str(tmp_path / f"gone{i}") for i in range(5000))
    warnings = load(value, include_builtin=False).warnings
    assert len(warnings) == 4
    assert warnings[-1] == "... and 4997 more SGLANG_SHIMS_PATH entries refused"


@pytest.mark.parametrize("command", [["list"], ["check"]])
def test_listing_commands_fail_on_a_patch_that_cannot_load(
        root: Path, command: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SGLANG_SHIMS_PATH", str(root))
    assert main([*command, "--json"]) == 0
    capsys.readouterr()
    write_patch(root, "broken", 'id = "broken"\n')  # no summary, evidence, target...
    assert main([*command, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert list(data["not_loaded"]) == ["broken"]
    assert main(command) == 1
    assert "broken" in capsys.readouterr().out


def test_a_target_the_engine_runs_on_is_refused_and_said(root: Path) -> None:
    write_patch(root, "on-packaging", manifest_text("on-packaging", "packaging.version"),
                "def apply(ctx):\n    pass\n")
    catalog = load(str(root), include_builtin=False)
    assert "on-packaging" not in {m.id for m in catalog.manifests}
    assert catalog.errors["on-packaging"].startswith(
        "refused: its target packaging.version is part of the standard library or of what")


def test_a_built_in_patch_code_is_loaded_from_its_file() -> None:
    import sys

    from sglang_shims.catalog.load import load_code

    manifest = next(m for m in load(None).manifests if m.code and m.when != "instead")
    name = "sglang_shims.patches." + manifest.id.replace("-", "_").replace(".", "_")
    sys.modules.pop(name, None)
    try:
        module = load_code(manifest)
        assert module.__name__ == name and callable(module.apply)
    finally:
        sys.modules.pop(name, None)
