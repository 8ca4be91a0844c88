"""A patch's prose lives in its README.md; ``explain`` and docs/patches.md read it there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglang_shims.catalog import prose
from sglang_shims.catalog.validate import load_text
from sglang_shims.cli import main

from ..support.packages import manifest_text, write_patch

README = """\
# demo-patch

Some words a reader sees first.

## What it changes

Wraps `f` in pkg.mod.
<!-- a note to the author, never shown -->
Nothing else.

## Notes

Not one of ours.

## how the range was ESTABLISHED

Read from the wheels.
"""


def test_sections_are_found_by_heading() -> None:
    assert prose.sections(README) == {
        "changes": "Wraps `f` in pkg.mod.\n\nNothing else.",
        "established": "Read from the wheels."}
    assert prose.sections("# x\n\n## What it changes\n\n<!-- only\na comment -->\n") == {
        "changes": ""}


def test_render_reads_back() -> None:
    text = prose.render("demo-patch", "Changes f.\n", "\nFrom the wheels.")
    assert prose.sections(text) == {"changes": "Changes f.", "established": "From the wheels."}
    assert prose.sections(prose.render("demo-patch", "", "")) == {"changes": "",
                                                                   "established": ""}


def test_the_readme_wins_and_the_manifest_fills_in(tmp_path: Path) -> None:
    """A folder on SGLANG_SHIMS_PATH may keep its prose in the manifest; a README section
    with text is preferred."""
    text = manifest_text("demo-patch", "pkg.mod", extra=(
        '[range]\nestablished = "from the manifest"\n'
        '[[provide]]\nname = "f"\nexported_by = "x"\nremedy = "y"\n'))
    text = text.replace('policy = "optional"', 'policy = "optional"\nchanges = "manifest"')
    folder = tmp_path / "demo-patch"
    folder.mkdir()
    manifest = load_text(text, "m", folder, "extra")
    assert prose.of(manifest) == ("manifest", "from the manifest")
    (folder / "README.md").write_text("## What it changes\n\nfrom the README\n")
    assert prose.of(manifest) == ("from the README", "from the manifest")


def test_explain_shows_the_readme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    root = write_patch(tmp_path / "extra", "demo-patch", manifest_text(
        "demo-patch", "pkg.mod", extra='[[provide]]\nname = "f"\nexported_by = "x"\n'
                                       'remedy = "y"\n'))
    (root / "demo-patch" / "README.md").write_text(README)
    monkeypatch.setenv("SGLANG_SHIMS_PATH", str(root))
    assert main(["explain", "demo-patch"]) == 0
    out = capsys.readouterr().out
    assert "what it changes:\n  Wraps `f` in pkg.mod. Nothing else." in out
    assert "how the range was established:\n  Read from the wheels." in out
    assert "a note to the author" not in out and "Not one of ours" not in out
    assert main(["explain", "demo-patch", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["changes"], data["range"]) == ("Wraps `f` in pkg.mod.\n\nNothing else.",
                                                "Read from the wheels.")


def test_text_before_any_heading_and_after_a_title_belongs_to_no_section() -> None:
    assert prose.sections("Words first.\n## What it changes\nWraps f.\n") == {
        "changes": "Wraps f."}
    assert prose.sections("## What it changes\nWraps f.\n# Another title\nNot ours.\n") == {
        "changes": "Wraps f."}
