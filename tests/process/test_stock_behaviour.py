"""Where no patch acts, the shims change nothing: find_spec, import and tracebacks are stock.

The oracle is the same interpreter with ``SGLANG_SHIMS=0`` (nothing of ours imported),
never a value written down from reading our code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ..support.programs import program
from ..support.run import run_python

PROBE = program("process/find_and_import")

SITUATIONS = ("missing", "module", "package", "broken", "namespace")
# watched top-level names, a watched submodule's package, and names nobody watches
NAMES = ("sgl_kernel", "kernels", "setproctitle", "zz_shim_probe_a", "zz_shim_probe_b")


def lay_out(root: Path, name: str, situation: str) -> None:
    """Put ``name`` on disk under ``root`` as ``situation`` says."""
    if situation == "module":
        (root / f"{name}.py").write_text("X = 1\n")
    elif situation == "package":
        (root / name).mkdir()
        (root / name / "__init__.py").write_text("X = 1\n")
        (root / name / "flash_mla.py").write_text("Y = 2\n")
    elif situation == "broken":
        (root / name).mkdir()
        (root / name / "__init__.py").write_text(f"raise RuntimeError('boom in {name}')\n")
    elif situation == "namespace":  # a folder without __init__.py, as a broken uninstall leaves
        (root / name / "sub").mkdir(parents=True)
        (root / name / "sub" / "__init__.py").write_text("Z = 3\n")


def probe(root: Path, names: list[str], *, shims: bool) -> list[dict[str, object]]:
    env = {} if shims else {"SGLANG_SHIMS": "0"}
    result = run_python(PROBE, paths=(root,), env=env, activate=shims, args=(json.dumps(names),))
    assert result.returncode == 0, result.stderr
    rows = result.json()
    assert isinstance(rows, list)
    return rows


def outcomes(tmp: Path, layout: dict[str, str],
             names: list[str]) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    for name, situation in layout.items():
        lay_out(tmp, name, situation)
    return probe(tmp, names, shims=False), probe(tmp, names, shims=True)


@settings(max_examples=25)
@given(
    layout=st.dictionaries(st.sampled_from(NAMES), st.sampled_from(SITUATIONS), max_size=4),
    picks=st.lists(st.sampled_from([*NAMES, "sgl_kernel.flash_mla", "sgl_kernel.sub",
                                    "kernels.sub", "zz_shim_probe_a.flash_mla"]),
                   min_size=1, max_size=5))
def test_find_spec_and_import_are_stock(tmp_path_factory: pytest.TempPathFactory,
                                        layout: dict[str, str], picks: list[str]) -> None:
    """No sglang is installed, so no patch passes its gates: every probe, import and
    traceback must be what the same interpreter gives with SGLANG_SHIMS=0."""
    root = tmp_path_factory.mktemp("stock")
    stock, shimmed = outcomes(root, layout, picks)
    seen: set[str] = set()
    for row in shimmed:
        assert isinstance(row, dict)
        # A watched module whose own body raises shows the one frame of the loader that
        # runs it (patches act around the body); nothing else of ours, and nothing for
        # a module that is not there at all.
        frames = row.pop("our_frames", [])
        body_raised = layout.get(str(row["name"]).partition(".")[0]) == "broken"
        assert frames == (["_bootstrap.py:exec_module"] if frames and body_raised else [])
        # The one visible difference, on purpose: a watched namespace package's spec has a
        # loader (ours, around the NamespaceLoader the import system would build) instead
        # of None, so the patches on it are judged; the module imported is the same.
        # (Once imported, find_spec answers from the module, in both runs alike.)
        spec = row["spec"]
        if isinstance(spec, dict) and spec["origin"] is None and spec["loader"] == \
                "NamespaceLoader" and row["name"] in ("sgl_kernel", "kernels") \
                and row["name"] not in seen:
            spec["loader"] = None
        seen.add(str(row["name"]).partition(".")[0])  # probing a child imports it
    for row in stock:
        assert isinstance(row, dict)
        assert row.pop("our_frames", []) == []
    assert shimmed == stock


def test_sglang_availability_probe_is_stock(tmp_path: Path) -> None:
    """sglang's own probe, with no sgl_kernel and no sglang: False, as without the shims
    (it raised ModuleNotFoundError when the finder offered a spec for any missing name)."""
    code = """
        import importlib.util as u
        print(u.find_spec("sgl_kernel") is not None
              and u.find_spec("sgl_kernel.flash_mla") is not None)
    """
    for shims in (False, True):
        result = run_python(code, env={} if shims else {"SGLANG_SHIMS": "0"}, activate=shims)
        assert (result.returncode, result.stdout.strip()) == (0, "False"), result.stderr


def test_missing_kernel_traceback_has_no_frames_of_ours(tmp_path: Path) -> None:
    (row,) = probe(tmp_path, ["sgl_kernel"], shims=True)
    assert row["spec"] is None
    assert row["import"] == "raised ModuleNotFoundError: No module named 'sgl_kernel'"
    assert row.get("our_frames") == []


def fake_dist(root: Path, name: str, version: str) -> None:
    folder = root / f"{name}-{version}.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


@pytest.mark.parametrize("sglang, toggle, offered", [
    ("0.5.1", {}, True),           # inside the fallback's range: it may stand in
    ("0.5.24", {}, False),         # outside it (the range ends at 0.5.23): stock answer
    ("0.5.1", {"SGLANG_SHIMS_DISABLE": "sgl-kernel-triton-fallback"}, False),
])
def test_stand_in_offered_only_when_its_gates_pass(tmp_path: Path, sglang: str,
                                                   toggle: dict[str, str],
                                                   offered: bool) -> None:
    """The finder decides from the installed distributions before it offers a spec for a
    missing sgl_kernel; torch is the other gate (installed with the test requirements)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install -r tests/requirements/serving.txt)")
    fake_dist(tmp_path, "sglang", sglang)
    result = run_python("""
        import importlib.util, sys
        print(importlib.util.find_spec("sgl_kernel") is not None,
              "sglang_shims.engine" in sys.modules)
    """, paths=(tmp_path,), env=toggle)
    assert result.returncode == 0, result.stderr
    # a bare find_spec never wakes the engine (the deadlock rule): the decision is the finder's
    assert result.stdout.split() == [str(offered), "False"]


VERSIONS = st.one_of(
    st.from_regex(r"\A(v|1!)?[0-9]{1,2}(\.[0-9]{1,2}){0,3}((a|b|rc|c|alpha|beta|pre|preview)"
                  r"[0-9]?)?([.-]?post[0-9]?|-[0-9])?([.-]?dev[0-9]?)?(\+[a-z0-9]{1,4})?\Z",
                  fullmatch=True),
    st.text(alphabet="0123456789.-_+!abcdeilnoprstv", max_size=12))
SPECS = st.lists(st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "~="]),
                           st.from_regex(r"\A[0-9]{1,2}(\.[0-9]{1,2}){0,2}"
                                         r"(rc[0-9]|\.post[0-9]|\.dev[0-9]|\.\*)?\Z",
                                         fullmatch=True)),
                 max_size=3)


@given(version=VERSIONS, clauses=SPECS)
def test_finder_version_gates_agree_with_packaging(version: str,
                                                   clauses: list[tuple[str, str]]) -> None:
    """The finder's import-free PEP 440 reader gives packaging's answer wherever packaging
    accepts the version and the specifier (the engine's gates use packaging)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    from sglang_shims._versions import spec_contains

    spec = ",".join(op + bound for op, bound in clauses)
    try:
        expected = SpecifierSet(spec).contains(Version(version), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        expected = False
    assume(not packaging_releases_disagree(version, clauses))
    assert spec_contains(spec, version) == expected


def packaging_releases_disagree(version: str, clauses: list[tuple[str, str]]) -> bool:
    """packaging < 26 and >= 26 read PEP 440's "a pre-release of V" differently when V is a
    post-release (is 1.0.dev0 below 1.0.post0?), and "a post-release of V" when the pre parts
    differ; no gate of ours writes such a clause, so the property leaves them out."""
    from packaging.version import InvalidVersion, Version

    try:
        mine = Version(version)
        bounds = [(op, Version(bound)) for op, bound in clauses if not bound.endswith(".*")]
    except InvalidVersion:
        return False
    return any((b.epoch, b.release) == (mine.epoch, mine.release) and (
        (op == "<" and b.post is not None and mine.is_prerelease)
        or (op == ">" and b.post is None and mine.post is not None and mine.pre != b.pre))
        for op, b in bounds)


def test_installed_version_reads_dist_info_as_importlib_metadata_does(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    fake_dist(first, "Some_Dist", "1.2.post3")
    fake_dist(second, "some-dist", "9.9")
    egg = second / "other.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: other\nVersion: 0.7\n")
    result = run_python("""
        import json, importlib.metadata as md
        from sglang_shims._versions import installed_version
        names = ["some-dist", "some.dist", "other", "absent-dist"]
        def meta(n):
            try:
                return md.version(n)
            except md.PackageNotFoundError:
                return None
        print(json.dumps([[installed_version(n), meta(n)] for n in names]))
    """, paths=(first, second), activate=False)
    assert result.returncode == 0, result.stderr
    pairs = result.json()
    assert isinstance(pairs, list)
    assert all(ours == theirs for ours, theirs in pairs), json.dumps(pairs)
    assert pairs[0][0] == "1.2.post3"
