"""The published sglang releases the suite knows, and the few whose real wheels it reads.

``tests/data/sglang_releases.txt`` is every release (written by ``python -m tools.refresh
releases`` from the recorded index); ``tests/data/release_index.json`` what each one's
wheel holds for the patches' fingerprints.  The tests read those; only the releases of
:data:`WHEEL_SAMPLE` (and, for a patch none of them falls inside, its newest release) are
downloaded, so that the committed data is re-read from real wheels on every run without
the suite fetching all of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from .run import REPO

DATA = REPO / "tests" / "data"
RELEASES = (DATA / "sglang_releases.txt").read_text(encoding="utf-8").split()

WHEEL_SAMPLE = ("0.4.2", "0.4.3.post2", "0.4.6", "0.4.9.post3", "0.5.1", "0.5.5", "0.5.9",
                "0.5.10", "0.5.16", "0.5.23")
"""One or two releases of every minor series since 0.4, each at a boundary some patch's
range or the kernel data changes at (0.4.3.post2: the transformers 4.49 collisions; 0.5.10:
the kernel rename; 0.5.16: the kernel registry)."""


def inside(spec: str) -> list[str]:
    """The releases ``spec`` admits, oldest first."""
    found = SpecifierSet(spec)
    return [v for v in RELEASES if found.contains(Version(v), prereleases=True)]


def sample_inside(spec: str) -> list[str]:
    """The sample releases ``spec`` admits, or else its newest release (never empty for a
    range that admits any release)."""
    admitted = inside(spec)
    return [v for v in WHEEL_SAMPLE if v in admitted] or admitted[-1:]


def module_level_import(release: Path, path: str, from_module: str) -> str:
    """The first module-level ``from <from_module> import ...`` statement of
    ``sglang/<path>`` in an unpacked release, as its source text: the release's own line,
    for a test to build a small module around."""
    source = (release / "sglang" / path).read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.module == from_module:
            segment = ast.get_source_segment(source, node)
            assert segment is not None
            return segment
    raise AssertionError(f"no module-level import from {from_module} in sglang/{path}")
