"""Throw-away packages and patches on disk, and the manifests of test patches."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sglang_shims.catalog.manifest import Manifest


def write_package(root: Path, files: dict[str, str]) -> Path:
    """Write ``{"pkg/mod.py": source}`` under ``root``; returns ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def write_patch(root: Path, patch_id: str, manifest: str, code: str | None = None) -> Path:
    """Write ``root/<patch_id>/manifest.toml`` (and ``patch.py``); returns ``root``."""
    folder = root / patch_id
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    os.chmod(folder, 0o755)
    (folder / "manifest.toml").write_text(textwrap.dedent(manifest), encoding="utf-8")
    if code is not None:
        (folder / "patch.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return root


def manifest_text(patch_id: str, target: str, *, extra: str = "", requires: str = "",
                  retire: str = 'installed = ["no-such-dist-xyz"]', when: str = "after",
                  policy: str = "optional", default: str = "on") -> str:
    """A minimal valid manifest; ``extra`` appends more tables."""
    return f"""
id = "{patch_id}"
summary = "test patch {patch_id}"
evidence = ["https://example.org/issue/1"]
default = "{default}"
policy = "{policy}"

[target]
module = "{target}"
when = "{when}"

[requires]
{requires}

[retire]
when = "never in tests"
{retire}
{extra}
"""


def demo_manifest(patch_id: str, target: str) -> Manifest:
    """A parsed manifest with one ``[[provide]]`` entry, for a ``PatchContext`` built in
    the test's own process."""
    from sglang_shims.catalog.validate import load_text

    return load_text(manifest_text(patch_id, target, extra=(
        '[[provide]]\nname = "f"\nexported_by = "x"\nremedy = "y"\n')), "t")
