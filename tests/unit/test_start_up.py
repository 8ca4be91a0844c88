"""The code every interpreter of the environment runs at start (``_sglang_shims_start``),
checked in this process: when it is off, which imports wake it, that its finder answers
``None`` for everything else, that it starts once, imports nothing and never raises.

The module is loaded from ``sglang_shims/_activation`` under another name than its own,
so that loading it starts nothing here (imported as ``_sglang_shims_start``, by the
``.pth`` line, it starts at once).  What it does in a real interpreter start, through the
generated ``.pth``, is held by ``tests/process/test_start_up.py``.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sglang_shims import _bootstrap
from sglang_shims.catalog import load as _catalog

from ..support.run import REPO, imported_by_running

SOURCE = REPO / "sglang_shims" / "_activation" / "_sglang_shims_start.py"


def load_start_module(name: str = "start_module_under_test") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SOURCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


START = load_start_module()


@pytest.fixture
def meta_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """A ``sys.meta_path`` of this test's own (the real finders, then what start() adds),
    without the marked finders an installed copy's own ``.pth`` put there (CI installs the
    package: start() would then rightly add nothing)."""
    finders = [f for f in sys.meta_path if not getattr(f, _bootstrap.PTH_MARK, False)]
    monkeypatch.setattr(sys, "meta_path", finders)
    yield finders


def manifest_roots() -> set[str]:
    """The top-level packages of the built-in patches' targets, read from the manifests
    (not from anything generated)."""
    catalog = _catalog.load(toml=True)
    return {m.target.partition(".")[0] for m in catalog.manifests if m.source == "builtin"}


def test_loading_the_file_under_another_name_starts_nothing(meta_path: list[object]) -> None:
    before = list(meta_path)
    load_start_module("another_name")
    assert meta_path == before


def test_it_imports_only_sys_and_os_anywhere() -> None:
    """Not at module level, not in a function (what sits under ``if TYPE_CHECKING`` never
    runs): nothing of the package, which it finds and loads without the import system."""
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
                   for stmt in node.body for n in ast.walk(stmt)}
    imported = {alias.name for node in ast.walk(tree) if id(node) not in typing_only
                and isinstance(node, ast.Import) for alias in node.names}
    assert not [node for node in ast.walk(tree) if id(node) not in typing_only
                and isinstance(node, ast.ImportFrom)]
    assert imported == {"os", "sys"}


def test_roots_are_the_manifests_roots() -> None:
    assert set(START.ROOTS) == manifest_roots()
    assert START.PTH_MARK == _bootstrap.PTH_MARK  # how _bootstrap.active() sees the finder


@pytest.mark.parametrize("value", ["0", "false", "off", "no", " OFF ", "False\n", "No"])
def test_off_values_turn_it_off(value: str) -> None:
    assert START.mode({"SGLANG_SHIMS": value}) is None
    assert START.mode({"SGLANG_SHIMS": value, "SGLANG_SHIMS_PATH": "/x"}) is None


@pytest.mark.parametrize("environ", [{}, {"SGLANG_SHIMS": "1"}, {"SGLANG_SHIMS": ""},
                                     {"SGLANG_SHIMS": "yes"}, {"SGLANG_SHIMS_PATH": " "},
                                     {"SGLANG_SHIMS_DISABLE": "x"}])
def test_anything_else_watches_the_roots(environ: dict[str, str]) -> None:
    assert START.mode(environ) == "roots"


def test_extra_folders_watch_any_module() -> None:
    assert START.mode({"SGLANG_SHIMS_PATH": "/opt/patches"}) == "any"


def test_which_imports_wake() -> None:
    for root in START.ROOTS:
        assert START.wakes(root, "roots") and START.wakes(root, "any")
    assert not START.wakes("json", "roots")
    assert not START.wakes("sglang.srt", "roots")  # a submodule's root is imported first
    assert START.wakes("json", "any") and START.wakes("extpkg.mod", "any")
    # what site imports itself after the .pth wakes nothing, even with extra folders
    for name in ("sitecustomize", "usercustomize", "pwd", "posix", sys.builtin_module_names[0]):
        assert not START.wakes(name, "any"), name


@given(st.text(min_size=1, max_size=30))
def test_the_finder_answers_none_for_every_other_name(name: str) -> None:
    """Not watched: ``None``, as if the finder were not there, and nothing woken."""
    woken: list[str] = []
    stage = START.first_stage("roots", [], "test")
    real_wake = START.wake
    START.wake = lambda stage, name, *rest: woken.append(name)
    try:
        answer = stage.find_spec(name, None, None)
    finally:
        START.wake = real_wake
    assert (answer, woken) == ((None, []) if name not in START.ROOTS else (None, [name]))


def test_start_puts_one_marked_finder_first(meta_path: list[object],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SGLANG_SHIMS", raising=False)
    monkeypatch.delenv("SGLANG_SHIMS_PATH", raising=False)
    real = list(meta_path)
    START.start("pth")
    START.start("pth")  # site has been seen to read one .pth twice
    stage = meta_path[0]
    assert meta_path[1:] == real
    assert getattr(stage, _bootstrap.PTH_MARK) is True
    assert (stage.watched, stage.origin, stage.site_path) == ("roots", "pth", sys.path)
    assert stage.site_path is not sys.path  # a copy: '' comes later


def test_off_imports_nothing_and_adds_nothing(meta_path: list[object],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_SHIMS", "off")
    modules, finders = set(sys.modules), list(meta_path)
    START.start("pth")
    assert meta_path == finders and set(sys.modules) == modules


def test_start_never_raises_and_tells_at_the_first_root(
        meta_path: list[object], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A failure at start is silent until a watched root is imported, then said once."""

    def broken(environ: object) -> str:
        raise RuntimeError("environment unreadable")

    monkeypatch.setattr(START, "mode", broken)
    START.start("pth")
    assert capsys.readouterr().err == ""
    stage = meta_path[0]
    assert stage.find_spec("json", None, None) is None
    assert capsys.readouterr().err == ""
    root = START.ROOTS[0]
    for _ in range(3):
        assert stage.find_spec(root, None, None) is None
    err = capsys.readouterr().err
    assert err.count("sglang-shims: start-up hook failed (RuntimeError: environment"
                     " unreadable)") == 1, err
    assert "pip install --force-reinstall sglang-shims" in err


def test_a_missing_package_is_told_once_at_the_first_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The finder wakes at a root but finds no package where site found it (nor through
    another finder): the import goes on as without the shims, and the problem is said."""
    monkeypatch.delitem(sys.modules, "sglang_shims._bootstrap")
    monkeypatch.delitem(sys.modules, "sglang_shims")
    stage = START.first_stage("roots", [str(tmp_path)], "pth")
    monkeypatch.setattr(sys, "meta_path", [stage])  # no other finder has the package either
    root = START.ROOTS[0]
    try:
        answers = [stage.find_spec(root, None, None) for _ in range(2)]
    finally:
        monkeypatch.undo()  # this process's finders and modules back before anything imports
    assert answers == [None, None]
    err = capsys.readouterr().err
    assert err.count("No module named 'sglang_shims'") == 1, err


def test_a_loaded_bootstrap_is_used_as_it_is() -> None:
    """Where the launcher's sitecustomize or install() loaded the bootstrap first, waking
    uses that module, not a second copy."""
    assert START.load_bootstrap([]) is _bootstrap


def test_loading_it_imports_no_module_at_all() -> None:
    """Its type-only imports stay behind ``TYPE_CHECKING``."""
    assert imported_by_running(SOURCE) == []


class FakeBootstrap:
    """What :func:`wake` asks of ``sglang_shims._bootstrap``: ``activate()``, then the
    finder it put first (``BOOT.watcher``)."""

    def __init__(self, watcher: object) -> None:
        self.calls: list[str] = []
        self.BOOT = SimpleNamespace(watcher=watcher)

    def activate(self, origin: str) -> None:
        self.calls.append(origin)


def test_it_wakes_once_and_the_bootstrap_finder_answers_that_import(
        meta_path: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    spec = object()
    watcher = SimpleNamespace(find_spec=lambda name, path, target: asked.append(name) or spec)
    fake = FakeBootstrap(watcher)
    monkeypatch.setattr(START, "load_bootstrap", lambda site_path, stage: fake)
    stage = START.first_stage("roots", [], "pth")
    meta_path.insert(0, watcher)  # where activate() puts it
    root = START.ROOTS[0]
    assert stage.find_spec(root, None, None) is spec
    assert stage.find_spec(root, None, None) is None  # inert once woken
    assert (fake.calls, asked, stage.woke) == (["pth"], [root], True)


def test_a_bootstrap_finder_not_on_meta_path_answers_nothing(
        meta_path: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    watcher = SimpleNamespace(find_spec=lambda name, path, target: object())
    monkeypatch.setattr(START, "load_bootstrap", lambda site_path, stage: FakeBootstrap(watcher))
    assert START.first_stage("roots", [], "pth").find_spec(START.ROOTS[0], None, None) is None


def test_the_package_comes_from_the_first_finder_that_has_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not on ``site``'s path (an editable install): the first finder after the stage that
    finds the package is the one used, later finders are not asked."""
    real = importlib.machinery.PathFinder.find_spec("sglang_shims", [str(REPO)])
    later: list[str] = []
    first = SimpleNamespace(find_spec=lambda name, path: real)
    second = SimpleNamespace(find_spec=lambda name, path: later.append(name))
    monkeypatch.delitem(sys.modules, "sglang_shims._bootstrap")
    monkeypatch.delitem(sys.modules, "sglang_shims")
    stage = START.first_stage("roots", [str(tmp_path)], "pth")
    monkeypatch.setattr(sys, "meta_path", [stage, first, second])
    try:
        loaded = START.load_bootstrap([str(tmp_path)], stage)
    finally:
        monkeypatch.undo()
    assert later == []
    assert Path(loaded.__file__) == REPO / "sglang_shims" / "_bootstrap.py"
