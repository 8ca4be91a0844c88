"""Small promises of the start-up hook, each checked in-process but the first (a bare
interpreter): loading it imports nothing, the read limit on extra manifests and the targets
they may not take, a wrapped loader's own ``create_module`` result, a start-up problem told
once, what the watcher wraps, and that the engine's source lookup skips it."""

from __future__ import annotations

import types
from pathlib import Path
from typing import cast

import pytest

from sglang_shims import _bootstrap

from ..support.run import imported_by_running


def _extra_manifest(root: Path, name: str, padding: int) -> None:
    """A manifest whose ``[target]`` line comes after ``padding`` bytes of comment."""
    (root / name).mkdir()
    comment = "#" + "x" * (padding - 2) + "\n"
    (root / name / "manifest.toml").write_text(f'{comment}[target]\nmodule = "pkg.{name}"\n')


def test_loading_it_imports_no_module_at_all() -> None:
    """Every Python start loads it: its type-only imports stay behind ``TYPE_CHECKING``."""
    assert imported_by_running(Path(_bootstrap.__file__)) == []


def test_extra_manifests_are_read_up_to_64_kib(tmp_path: Path) -> None:
    """Start-up reads at most 64 KiB of an extra folder's manifest (every Python start pays
    for it): a target line inside the first 64 KiB is seen, one after it is not."""
    _extra_manifest(tmp_path, "near", 60 * 1024)
    _extra_manifest(tmp_path, "far", 70 * 1024)
    assert _bootstrap.extra_targets(str(tmp_path)) == {"pkg.near"}


def test_extra_patches_may_not_target_what_the_engine_imports(tmp_path: Path) -> None:
    """Neither the standard library nor the engine's own dependencies are watched for an
    extra folder's patch (the engine imports them while it wakes); anything else is."""
    for name, target in (("stdlib", "json.decoder"), ("dependency", "packaging.version"),
                         ("ours", "sglang_shims.cli"), ("theirs", "transformers.models")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.toml").write_text(f'[target]\nmodule = "{target}"\n')
    assert _bootstrap.extra_targets(str(tmp_path)) == {"transformers.models"}
    assert [_bootstrap.engine_runs_on(m) for m in ("json", "tomli.x", "sglang", "wraptx")] \
        == [True, True, False, False]


class _OwnModule(types.ModuleType):
    pass


class _LoaderWithCreate:
    def __init__(self) -> None:
        self.asked: list[object] = []

    def create_module(self, spec: object) -> types.ModuleType:
        self.asked.append(spec)
        return _OwnModule("made.by.loader")


def test_wrapped_loader_returns_the_real_loaders_module() -> None:
    """An extension module or a custom loader makes its own module object; the wrapper must
    hand that object back (None would make the import system build a plain module)."""
    real = _LoaderWithCreate()
    watcher = cast("_bootstrap.Watcher", object())  # create_module does not use it
    hooked = _bootstrap.HookedLoader(real, "made.by.loader", watcher)
    spec = object()
    made = hooked.create_module(spec)
    assert isinstance(made, _OwnModule) and made.__name__ == "made.by.loader"
    assert real.asked == [spec]


def test_wrapped_loader_without_create_module_gives_none() -> None:
    hooked = _bootstrap.HookedLoader(object(), "plain", cast("_bootstrap.Watcher", object()))
    assert hooked.create_module(object()) is None


def test_a_start_up_problem_is_told_once(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A damaged install is reported on stderr once per process, not on every import
    (from the state a process starts with)."""
    monkeypatch.setattr(_bootstrap, "BOOT", _bootstrap.Boot())
    for _ in range(3):
        _bootstrap._complain_once("the watch table is missing")
    err = capsys.readouterr().err
    assert err.count("sglang-shims: the watch table is missing") == 1, err
    assert "patches are not applied" in err


def test_active_is_none_until_someone_activates(monkeypatch: pytest.MonkeyPatch) -> None:
    """``active()`` answers "pth" only for the .pth line's own marked finder; a process
    with other finders and no activation is not reported as activated."""

    class Marked:
        pass

    setattr(Marked, _bootstrap.PTH_MARK, True)
    monkeypatch.setattr(_bootstrap.BOOT, "origin", None)
    monkeypatch.setattr("sys.meta_path", [object(), object()])
    assert _bootstrap.active() is None
    monkeypatch.setattr("sys.meta_path", [object(), Marked()])
    assert _bootstrap.active() == "pth"


class _Finder:
    """A ``sys.meta_path`` finder that has every module, with the loader it is given."""

    def __init__(self, loader: object) -> None:
        self.loader = loader

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        import importlib.machinery

        return importlib.machinery.ModuleSpec(fullname, self.loader)  # type: ignore[arg-type]


class _LegacyLoader:
    """A loader of the old protocol: ``load_module`` only, no ``exec_module``."""

    def load_module(self, fullname: str) -> types.ModuleType:
        return types.ModuleType(fullname)


def test_the_watcher_wraps_each_find_of_a_watched_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A watched name is wrapped every time it is looked for (an import after the module
    was removed from ``sys.modules`` is hooked again), and a loader without
    ``exec_module`` is handed back unwrapped for the import system's own fallback."""
    import importlib.machinery
    import sys

    watcher = _bootstrap.Watcher({"watched.mod"})
    source = importlib.machinery.SourceFileLoader("watched.mod", "/nonexistent/mod.py")
    monkeypatch.setattr(sys, "meta_path", [watcher, _Finder(source)])
    for _ in range(2):
        spec = watcher.find_spec("watched.mod")
        assert spec is not None and isinstance(spec.loader, _bootstrap.HookedLoader)
    legacy = _LegacyLoader()
    monkeypatch.setattr(sys, "meta_path", [watcher, _Finder(legacy)])
    spec = watcher.find_spec("watched.mod")
    assert spec is not None and spec.loader is legacy


def test_the_engine_looks_past_our_own_finders(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the engine locates a module's source it skips the watcher (marked as ours):
    asking it would wrap, or stand in for, what the other finders have."""
    import sys

    from sglang_shims.engine import source

    watcher = _bootstrap.Watcher({"tabnanny"})
    asked: list[str] = []
    monkeypatch.setattr(watcher, "find_spec", lambda name, *rest: asked.append(name))
    monkeypatch.setattr(sys, "meta_path", [watcher, *sys.meta_path])
    monkeypatch.delitem(sys.modules, "tabnanny", raising=False)
    found = source.locate("tabnanny")
    assert found is not None and found.name == "tabnanny.py"
    assert asked == []


def test_a_stand_in_decision_is_taken_again_after_invalidate_caches(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``importlib.invalidate_caches()`` (a package may have been installed since) makes
    the watcher read the installed versions again."""
    import importlib
    import sys

    installed = {"pass": False}
    versions = types.SimpleNamespace(gates_pass=lambda gate: installed["pass"])
    monkeypatch.setattr(_bootstrap, "STAND_IN_GATES", {"a-patch": ("gone.mod", "gate")})
    monkeypatch.setattr(_bootstrap, "load_sibling", lambda name: versions)
    watcher = _bootstrap.Watcher({"gone.mod"}, {"gone.mod"})
    monkeypatch.setattr(sys, "meta_path", [watcher, *sys.meta_path])
    assert watcher.admits("gone.mod") is False
    installed["pass"] = True
    assert watcher.admits("gone.mod") is False  # read once, then remembered
    importlib.invalidate_caches()
    assert watcher.admits("gone.mod") is True


def test_namespace_loader_of_either_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """The namespace loader is ``NamespaceLoader`` (3.11+) or, on 3.10, only
    ``_NamespaceLoader``; it is given the package's folders."""
    import sys

    class Old:
        _path: object = None

    monkeypatch.setitem(sys.modules, "_frozen_importlib_external",
                        types.SimpleNamespace(_NamespaceLoader=Old))
    made = _bootstrap.namespace_loader(["/a", "/b"])
    assert isinstance(made, Old) and made._path == ["/a", "/b"]
    monkeypatch.setitem(sys.modules, "_frozen_importlib_external", types.SimpleNamespace())
    assert _bootstrap.namespace_loader(["/a"]) is None


def test_a_missing_module_fails_as_stock_python_does() -> None:
    with pytest.raises(ModuleNotFoundError, match=r"No module named 'gone\.mod'") as caught:
        _bootstrap.Missing("gone.mod").exec_module(types.ModuleType("gone.mod"))
    assert caught.value.name == "gone.mod"


class _Real:
    """A loader with an attribute of its own and a body that does nothing."""

    marker = 5

    def is_package(self, fullname: str) -> bool:
        return fullname == "pkg"

    def exec_module(self, module: types.ModuleType) -> None:
        module.ran = True  # type: ignore[attr-defined]


def test_the_wrapper_passes_through_and_hands_the_real_loader_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What the wrapper does not define is the real loader's; running the body hands the
    real loader to the module (and to a spec that names the wrapper, not to another), and
    a namespace package gets ``__file__ = None`` even without a spec."""
    import importlib.machinery

    monkeypatch.setattr(_bootstrap, "_notify", lambda *args: None)
    real, other = _Real(), _Real()
    hooked = _bootstrap.HookedLoader(real, "pkg", _bootstrap.Watcher({"pkg"}))
    assert hooked.marker == 5 and hooked.is_package("pkg") is True
    named = types.ModuleType("pkg")
    named.__spec__ = importlib.machinery.ModuleSpec("pkg", hooked)  # type: ignore[arg-type]
    hooked.exec_module(named)
    assert named.__loader__ is real and named.__spec__.loader is real
    assert named.ran  # type: ignore[attr-defined]
    elsewhere = types.ModuleType("pkg")
    elsewhere.__spec__ = importlib.machinery.ModuleSpec("pkg", other)  # type: ignore[arg-type]
    hooked.exec_module(elsewhere)
    assert elsewhere.__spec__.loader is other
    space = _bootstrap.HookedLoader(real, "pkg", _bootstrap.Watcher({"pkg"}), is_namespace=True)
    bare = types.ModuleType("pkg")
    bare.__spec__ = None
    space.exec_module(bare)
    assert bare.__file__ is None and bare.__loader__ is real


def test_a_stand_in_runs_instead_of_the_body(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine answering ``instead`` before the body: the real body never runs, the
    engine is told to stand in, then the import is done."""
    phases: list[str] = []

    def notify(name: str, phase: str, module: object, exc: object = None) -> str | None:
        phases.append(phase)
        return "instead" if phase == "before" else None

    monkeypatch.setattr(_bootstrap, "_notify", notify)
    watcher = _bootstrap.Watcher({"pkg", "other"})
    module = types.ModuleType("pkg")
    _bootstrap.HookedLoader(_Real(), "pkg", watcher).exec_module(module)
    assert phases == ["before", "instead", "after"]
    assert not hasattr(module, "ran") and watcher.names == {"other"}


def test_the_remedy_fits_where_the_package_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bootstrap, "_source_checkout", lambda: True)
    assert "catalog.codegen --write` and `pip install -e .`" in _bootstrap.remedy()
    monkeypatch.setattr(_bootstrap, "_source_checkout", lambda: False)
    assert "pip install --force-reinstall sglang-shims" in _bootstrap.remedy()


def test_extra_manifests_any_mode_every_file_closed(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A manifest is read whatever its permission bits (the engine vets them later); what
    is not a regular file is skipped; every file opened is closed."""
    import os

    _extra_manifest(tmp_path, "executable", 100)
    (tmp_path / "executable" / "manifest.toml").chmod(0o755)
    (tmp_path / "folder" / "manifest.toml").mkdir(parents=True)
    opened: list[int] = []
    closed: list[int] = []
    real_open, real_close = os.open, os.close

    def spy_open(*args: object, **kwargs: object) -> int:
        fd = real_open(*args, **kwargs)  # type: ignore[arg-type]
        opened.append(fd)
        return fd

    def spy_close(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr(os, "close", spy_close)
    found = _bootstrap.extra_targets(str(tmp_path))
    monkeypatch.undo()
    assert found == {"pkg.executable"}
    assert len(opened) == 2 and sorted(opened) == sorted(closed)


def test_a_failed_start_complains_at_the_first_watched_import(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Start-up that fails leaves a finder that says why once, at the first import of a
    watched package, then leaves ``sys.meta_path``; the engine's source lookup skips it."""
    import sys

    from sglang_shims.engine import source

    def broken() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(_bootstrap, "BOOT", _bootstrap.Boot())
    monkeypatch.setattr(_bootstrap, "_watch_set", broken)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delenv("SGLANG_SHIMS", raising=False)
    _bootstrap.activate("test")
    assert _bootstrap.BOOT.problem == "RuntimeError: boom"
    complainer = sys.meta_path[0]
    root = sorted({t.partition(".")[0] for t in _bootstrap.TARGETS.values()})[0]
    source.locate(root)
    assert complainer.find_spec("tabnanny") is None
    assert capsys.readouterr().err == ""
    assert complainer.find_spec(root) is None
    assert "start-up hook failed (RuntimeError: boom)" in capsys.readouterr().err
    assert complainer not in sys.meta_path
