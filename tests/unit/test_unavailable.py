"""The one wording of a stand-in's error (``sglang_shims.patching.unavailable``), and that
every patch whose stand-in raises builds its message with it rather than by hand."""

from __future__ import annotations

import ast
from pathlib import Path

from sglang_shims.patching import unavailable

from ..support.run import REPO


def test_the_message_says_what_why_what_to_do_and_which_patch() -> None:
    text = unavailable("pkg.fn", "the installed pkg 2.0 does not export it.",
                       "  Install pkg<2.  ", "pkg-fn-removed")
    assert text == ("pkg.fn is not available: the installed pkg 2.0 does not export it."
                    " Install pkg<2. [sglang-shims patch 'pkg-fn-removed' stands in for it so"
                    " that importing works; see `sglang-shims explain pkg-fn-removed`]")


def _hand_built(path: Path) -> list[int]:
    """Lines of ``path`` where a string literal says "is not available" itself."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and "is not available:" in node.value:
            found.append(node.lineno)
    return found


def test_no_stand_in_words_its_error_by_hand() -> None:
    """Six places built this message in slightly different words before the helper; a new
    one goes through it too (the helper's own module is the one place with the words)."""
    files = [*sorted((REPO / "patches").glob("*/patch.py")),
             *sorted((REPO / "sglang_shims").rglob("*.py"))]
    offenders = {str(f.relative_to(REPO)): lines for f in files
                 if f.name != "proxy.py" and (lines := _hand_built(f))}
    assert offenders == {}
