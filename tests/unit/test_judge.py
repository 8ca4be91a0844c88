"""judge.exported: the question behind ``[retire] exported`` -- does ``module:name`` exist?

Asked of the live module when the engine has one, else of the source on the search path;
None when it cannot be told.  Expected answers are written out here, per case."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from sglang_shims.engine.judge import PROXY_MARK, exported
from sglang_shims.engine.proxy import OptionalSymbol

from ..support.packages import manifest_text, write_package


def test_live_module_answers() -> None:
    live = types.ModuleType("livemod")
    live.there = 1
    live.none_value = None
    live.ours = OptionalSymbol("livemod", "ours", "some-patch", lambda: "gone")
    assert exported("livemod:there", live) == (True, "livemod exports there")
    assert exported("livemod:none_value", live) == (True, "livemod exports none_value")
    assert exported("livemod:missing", live) == (False, "livemod does not export missing")
    # a name bound to one of our proxies was put there by us: not exported upstream
    assert exported("livemod:ours", live) == (False, "livemod does not export ours")


def test_a_proxy_is_known_by_its_mark_not_its_class_name() -> None:
    """The judge does not import the proxy code, so it asks for the mark the proxy class
    carries: a look-alike without it is a real export, anything carrying it is ours."""

    class OptionalSymbolLookAlike:
        patch_id = "not-ours"

    OptionalSymbolLookAlike.__name__ = "OptionalSymbol"

    class Marked:
        pass

    setattr(Marked, PROXY_MARK, True)
    live = types.ModuleType("markmod")
    live.look_alike, live.marked = OptionalSymbolLookAlike(), Marked()
    assert getattr(OptionalSymbol, PROXY_MARK) is True
    assert exported("markmod:look_alike", live) == (True, "markmod exports look_alike")
    assert exported("markmod:marked", live) == (False, "markmod does not export marked")


@pytest.fixture
def tree(tmp_path: Path) -> list[Path]:
    write_package(tmp_path, {
        "jpkg/__init__.py": "",
        "jpkg/plain.py": "def helper():\n    pass\nVALUE = 3\n",
        "jpkg/starry.py": "from jpkg.plain import *\nOWN = 1\n",
    })
    return [tmp_path]


@pytest.mark.parametrize(("symbol", "answer", "detail"), [
    ("jpkg.plain:helper", True, "jpkg.plain binds helper (read from its source)"),
    ("jpkg.plain:VALUE", True, "jpkg.plain binds VALUE (read from its source)"),
    ("jpkg.plain:gone", False, "jpkg.plain does not bind gone (read from its source)"),
    ("jpkg.starry:OWN", True, "jpkg.starry binds OWN (read from its source)"),
    ("jpkg.nothere:x", None, "cannot read the source of jpkg.nothere"),
])
def test_static_answers(tree: list[Path], symbol: str, answer: bool | None, detail: str) -> None:
    assert exported(symbol, search_path=tree) == (answer, detail)


def test_star_import_of_an_unreadable_module_cannot_be_told(tmp_path: Path) -> None:
    write_package(tmp_path, {"kpkg/__init__.py": "", "kpkg/m.py": "from elsewhere_xyz import *\n"})
    answer, detail = exported("kpkg.m:name", search_path=[tmp_path])
    assert answer is None
    assert detail == "kpkg.m star-imports; cannot tell statically whether it has name"


def test_imported_module_answers_without_a_live_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """No live module and no search path: a fully imported module is asked, not its source
    (this one has none)."""
    module = types.ModuleType("judge_in_memory_xyz")
    module.value = 1
    monkeypatch.setitem(sys.modules, "judge_in_memory_xyz", module)
    assert exported("judge_in_memory_xyz:value") == (True, "judge_in_memory_xyz exports value")
    assert exported("judge_in_memory_xyz:gone") == (
        False, "judge_in_memory_xyz does not export gone")


def test_a_module_still_being_imported_is_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its body has not bound its names yet: the answer comes from its source (none here)."""
    module = types.ModuleType("judge_half_xyz")
    module.__spec__ = types.SimpleNamespace(_initializing=True)  # type: ignore[assignment]
    monkeypatch.setitem(sys.modules, "judge_half_xyz", module)
    assert exported("judge_half_xyz:later") == (None, "cannot read the source of judge_half_xyz")


def test_retired_says_each_exported_name_it_looked_for() -> None:
    """A retire rule's report line per ``exported`` name, hit or not, then per dist."""
    from sglang_shims.catalog.validate import load_text
    from sglang_shims.engine.gates import Environment
    from sglang_shims.engine.judge import retired

    live = types.ModuleType("livemod")
    live.there = 1
    retire = 'exported = ["livemod:there", "livemod:missing"]\ninstalled = ["no-such-dist-xyz"]'
    provide = '[[provide]]\nname = "f"\nexported_by = "x"\nremedy = "y"\n'
    manifest = load_text(manifest_text("demo-patch", "livemod", retire=retire, extra=provide),
                         "test")
    env = Environment(versions={}, capabilities=[], hermetic=True)
    assert retired(manifest, env, live) == (True, [
        "livemod exports there", "livemod does not export missing",
        "no-such-dist-xyz not installed"])
