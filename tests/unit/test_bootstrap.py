"""Small promises of the start-up hook, each checked in-process but the first (a bare
interpreter): loading it imports nothing, the read limit on extra manifests, a wrapped
loader's own ``create_module`` result, and a start-up problem told once."""

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
