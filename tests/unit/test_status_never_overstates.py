"""``status()`` never says a patch is in effect when it is not: the engine's side, in the
test's own process.  A module made stock again by ``importlib.reload``, and a module asked
about while its body runs.  The ways that need a fresh interpreter (finders ahead of ours,
imports before activation, pytest's rewriter, fork children, the ``status`` command) are in
``tests/process/test_status_never_overstates.py``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from ..support.engine import Seam

TARGET = "shimtarget"
APPLY = "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 2)\n"


def test_applied_when_it_is(seam: Seam) -> None:
    """The control: the same set-up without a trick is applied and patched."""
    seam.patch("demo-patch", TARGET, APPLY)
    engine = seam.engine()
    assert seam.imported(engine, TARGET).VALUE == 2
    assert seam.status(engine, "demo-patch")["state"] == "applied"


def test_reload_is_stale(seam: Seam, monkeypatch: pytest.MonkeyPatch) -> None:
    seam.patch("demo-patch", TARGET, APPLY)
    engine = seam.engine()
    m = seam.imported(engine, TARGET)
    monkeypatch.syspath_prepend(str(Path(m.__file__ or "").parent))  # where reload finds it
    importlib.reload(m)
    assert m.VALUE == 1, "reload runs the stock body again"
    entry = seam.status(engine, "demo-patch")
    assert entry["state"] == "stale" and "importlib.reload()" in entry["reason"]


def test_status_inside_the_target_body_is_not_bypassed(seam: Seam) -> None:
    """While our loader runs the body, the module is in sys.modules: that is not a bypass."""
    seam.patch("demo-patch", TARGET, APPLY)
    engine = seam.engine()
    module = seam.module(TARGET, "SEEN = ENGINE.status()['demo-patch']['state']\nVALUE = 1\n")
    module.ENGINE = engine  # type: ignore[attr-defined]  (the body's way to ask status())
    seam.execute(engine, module)
    assert module.SEEN == "pending"
    assert seam.status(engine, "demo-patch")["state"] == "applied"
