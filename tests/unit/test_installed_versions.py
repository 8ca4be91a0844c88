"""``engine.installed``: the versions the gates judge by are ``importlib.metadata``'s answers.

Why it exists: ``importlib.metadata.version`` parses each ``METADATA`` with the email parser;
reading only the ``Version`` header from one listing of ``sys.path`` cut judging in an
environment with torch and sglang's dependencies from 3.4 to 1.8 ms of CPU a process
(benchmarks/README.md, "Waking").  Held here: the same answer as ``importlib.metadata`` on
every distribution of this environment and on the layouts where a cheap reader could go
wrong, and ``importlib.metadata`` itself asked where the answers could differ.
"""

from __future__ import annotations

import sys
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sglang_shims.engine import installed


def _expected(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def test_every_distribution_of_this_environment() -> None:
    names = {d.metadata["Name"] for d in metadata.distributions() if d.metadata["Name"]}
    assert len(names) > 20
    assert {n: installed.version(n) for n in names} == {n: _expected(n) for n in names}


def _dist_info(folder: Path, dirname: str, text: str, leaf: str = "METADATA") -> None:
    (folder / dirname).mkdir(parents=True)
    (folder / dirname / leaf).write_text(text, encoding="utf-8")


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Two fresh folders as the whole of ``sys.path``."""
    folders = [tmp_path / "a", tmp_path / "b"]
    for f in folders:
        f.mkdir()
    monkeypatch.setattr(sys, "path", [str(f) for f in folders])
    return folders


ASKED = ["foo", "Foo", "foo-bar", "Foo.Bar", "foo_bar", "baz", "qux", "egg_thing", "missing",
         "empty", "nover", "folded"]


def _same_as_importlib() -> dict[str, tuple[str | None, str | None]]:
    return {n: (installed.version(n), _expected(n)) for n in ASKED
            if installed.version(n) != _expected(n)}


def test_layouts_a_cheap_reader_could_get_wrong(path: list[Path],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = path
    # the METADATA's version, not the folder name's; a long description after the headers
    _dist_info(a, "foo-1.0.dist-info", "Metadata-Version: 2.1\nName: foo\nVersion: 1.0.post0\n"
               "\nVersion: 9.9 (in the description)\n" + "x" * 50_000)
    _dist_info(b, "foo-2.0.dist-info", "Name: foo\nVersion: 2.0\n")  # the first folder wins
    _dist_info(a, "Foo.Bar-3.dist-info", "Name: Foo.Bar\nVersion:   3  \n")  # name normalised
    _dist_info(a, "baz-0.1.egg-info", "Name: baz\nSummary: folded\n Version: 8\n"
               "version: 0.1\n", leaf="PKG-INFO")  # a folded line is not a header
    (a / "qux-5.egg-info").write_text("Name: qux\nSummary: a file, not a folder\n"
                                      "Version: 5\n", encoding="utf-8")
    _dist_info(a, "empty-1.dist-info", "")  # an empty METADATA: PKG-INFO, then nothing
    _dist_info(a, "nover-1.dist-info", "Name: nover\n\nVersion: 2 (in the description)\n")
    _dist_info(a, "folded-1.dist-info", "Name: folded\nVersion: 1\n .0\n")  # the last header
    asked = _spy(monkeypatch)
    assert _same_as_importlib() == {}
    assert asked == ["folded"]  # only a Version folded over lines goes there
    assert installed.version("foo") == "1.0.post0" and installed.version("Foo.Bar") == "3  "


def test_sys_path_is_listed_once_and_again_when_it_changes(
        path: list[Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    listings: list[tuple[object, ...]] = []
    real = installed._listed
    monkeypatch.setattr(installed, "_listed", lambda p: listings.append(p) or real(p))
    assert installed.version("late") is None and installed.version("other") is None
    assert listings == [tuple(sys.path)]
    later = tmp_path / "later"
    _dist_info(later, "late-4.dist-info", "Name: late\nVersion: 4\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(later)])
    assert installed.version("late") == "4" == _expected("late")
    assert listings == [tuple(p for p in sys.path if p != str(later)), tuple(sys.path)]


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []
    real = installed._asked
    monkeypatch.setattr(installed, "_asked", lambda d: asked.append(d) or real(d))
    return asked


def test_a_zip_on_sys_path_is_left_to_importlib(path: list[Path], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "z.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped-7.dist-info/METADATA", "Name: zipped\nVersion: 7\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(archive)])
    asked = _spy(monkeypatch)
    assert installed.version("zipped") == "7" == _expected("zipped")
    assert asked == ["zipped"]


def test_an_egg_or_another_distribution_finder_is_left_to_importlib(
        path: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    (path[0] / "old-1.0-py3.11.egg").mkdir()
    asked = _spy(monkeypatch)
    installed.version("old")
    assert asked == ["old"]

    class Finder:
        def find_spec(self, *args: Any) -> None:
            return None

        def find_distributions(self, *args: Any) -> list[Any]:
            return []

    (path[0] / "old-1.0-py3.11.egg").rmdir()
    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    installed.version("old")
    assert asked == ["old", "old"]


@given(st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,12}[A-Za-z0-9])?", fullmatch=True))
def test_names_are_normalised_as_importlib_metadata_does(name: str) -> None:
    from importlib.metadata import Prepared  # type: ignore[attr-defined]

    assert installed.normalise(name) == Prepared.normalize(name)
