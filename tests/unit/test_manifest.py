"""Manifests: the shipped ones are valid and complete; broken ones fail with a clear message."""

from __future__ import annotations

import copy
import json
import pickle
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sglang_shims.catalog import codegen as _index
from sglang_shims.catalog import data as _data
from sglang_shims.catalog import load as _catalog
from sglang_shims.catalog import prose
from sglang_shims.catalog.manifest import Manifest, ManifestError
from sglang_shims.catalog.validate import load_text, parse

from ..support.packages import manifest_text

VALID = manifest_text("demo-patch", "pkg.mod", requires='sglang = ">=0.5,<0.6"',
                      extra='[[provide]]\nname = "f"\nexported_by = "x 1.0"\nremedy = "pip"\n')


def test_minimal_manifest_parses() -> None:
    m = load_text(VALID, "demo")
    assert m.id == "demo-patch" and m.target == "pkg.mod" and m.when == "after"
    assert m.requires[0].dists == ("sglang",) and m.requires[0].spec == ">=0.5,<0.6"
    assert m.default is True and m.policy == "optional"
    assert m.provides[0].name == "f"


def test_alternative_distributions() -> None:
    m = load_text(VALID.replace('sglang = ">=0.5,<0.6"',
                                '"sgl-kernel | sglang-kernel" = ">=0.3.18"'), "demo")
    assert m.requires[0].dists == ("sgl-kernel", "sglang-kernel")


@pytest.mark.parametrize(("edit", "message"), [
    (('id = "demo-patch"', 'id = "Demo Patch"'), "id"),
    (('summary = "test patch demo-patch"', 'summary = ""'), "summary"),
    (('evidence = ["https://example.org/issue/1"]', 'evidence = ["http://x"]'), "https://"),
    (('policy = "optional"', 'policy = "reqired"'), "policy"),
    (('default = "on"', 'default = "yes"'), "default"),
    (('when = "after"', 'when = "during"'), "when"),
    (('sglang = ">=0.5,<0.6"', 'sglang = ">=0.5,,<"'), "invalid specifier"),
    (('sglang = ">=0.5,<0.6"', 'sglang = 5'), "specifier string"),
    (('[retire]\nwhen = "never in tests"\ninstalled = ["no-such-dist-xyz"]',
      '[retire]\nwhen = "never"'), "at least one rule"),
    (('module = "pkg.mod"', 'module = "pkg..mod"'), "module name"),
    (('policy = "optional"', 'policy = "optional"\nsumary = "typo"'), "unknown field"),
])
def test_invalid_manifests_name_the_field(edit: tuple[str, str], message: str) -> None:
    old, new = edit
    assert old in VALID
    with pytest.raises(ManifestError) as info:
        load_text(VALID.replace(old, new), "patches/demo/manifest.toml")
    assert "patches/demo/manifest.toml" in str(info.value)
    assert message in str(info.value)


def test_needs_code_or_provide() -> None:
    text = manifest_text("no-action", "pkg.mod")
    with pytest.raises(ManifestError, match=r"patch\.py"):
        load_text(text, "x")


def test_not_toml() -> None:
    with pytest.raises(ManifestError, match="not valid TOML"):
        load_text("id = = 1", "x")


@given(st.dictionaries(
    st.sampled_from(["id", "summary", "evidence", "default", "policy", "target", "requires",
                     "retire", "provide", "fingerprint", "gpu", "code", "range", "changes",
                     "bogus"]),
    st.one_of(st.text(max_size=20), st.integers(), st.lists(st.text(max_size=10), max_size=3),
              st.dictionaries(st.text(max_size=8), st.text(max_size=10), max_size=3))))
def test_any_document_fails_cleanly(data: dict[str, object]) -> None:
    """Arbitrary TOML-shaped data either parses or raises ManifestError, nothing else."""
    try:
        parse(data, "fuzz")
    except ManifestError as exc:
        assert str(exc).startswith("fuzz")


class TestShippedPatches:
    catalog = _catalog.load(toml=True)

    def test_all_load(self) -> None:
        assert self.catalog.errors == {}
        assert self.catalog.manifests

    def test_ids_unique_and_match_folders(self) -> None:
        ids = [m.id for m in self.catalog.manifests]
        assert len(ids) == len(set(ids))
        for m in self.catalog.manifests:
            assert m.folder is not None and m.folder.name == m.id

    def test_every_patch_has_evidence_retirement_and_prose(self) -> None:
        """Evidence and a retire rule in the manifest; what the patch changes and how its
        range was established in its README.md, which only the CLI reads: catalog.jsonl,
        which every waking process parses, carries none of that prose."""
        for m in self.catalog.manifests:
            assert m.evidence and all(e.startswith("https://") for e in m.evidence), m.id
            assert m.retire.description, m.id
            written = prose.read(m.folder)
            assert written.get("changes") and written.get("established"), m.id
            assert "to be filled" not in written["established"], m.id
            assert (m.changes, m.range_note) == ("", ""), f"{m.id}: prose goes in README.md"

    def test_first_two_patch_ids(self) -> None:
        ids = {m.id for m in self.catalog.manifests}
        assert {"sgl-kernel-fused-marlin-moe", "sgl-kernel-dist-renamed"} <= ids

    def test_generated_files_are_current(self) -> None:
        stale = _index.stale(self.catalog)
        assert not stale, "run `python -m sglang_shims.catalog.codegen --write`: " + ", ".join(
            str(p) for p in stale)

    def test_pth_is_a_comment_and_one_import_line(self) -> None:
        """All that site compiles at every start is the import of the start-up module,
        which the PEP 829 entry point names too."""
        comment, line, rest = _index.PTH.read_text(encoding="utf-8").split("\n")
        assert comment.startswith("# sglang-shims") and "SGLANG_SHIMS=0" in comment
        assert (line, rest) == ("import _sglang_shims_start", "")
        assert _index.START.read_text() == "_sglang_shims_start:start\n"

    def test_json_catalog_equals_the_parsed_manifests(self) -> None:
        """What the engine reads when it wakes is what parsing every manifest gives."""
        parsed = sorted(self.catalog.manifests, key=lambda m: m.id)
        root = _catalog.builtin_root()
        shipped = _data.read(root, check_digest=True)
        assert shipped is not None, "catalog.jsonl is stale: run the codegen"
        assert [m.id for m in shipped] == [m.id for m in parsed]
        for mine, theirs in zip(shipped, parsed, strict=True):
            assert mine == theirs, mine.id
            assert (mine.test_with, mine.folder) == (theirs.test_with, theirs.folder), mine.id
        assert sorted(_catalog.load().manifests, key=lambda m: m.id) == parsed

    def test_watch_table_is_readable_data(self) -> None:
        from sglang_shims import _bootstrap

        parsed = self.catalog.by_id()
        assert {i: m.target for i, m in parsed.items()} == _bootstrap.TARGETS
        assert {i for i, m in parsed.items() if not m.default} == _bootstrap.OFF_BY_DEFAULT
        assert {i for i, m in parsed.items() if m.when == "instead"} == _bootstrap.STAND_INS
        assert {i for i, m in parsed.items() if m.policy == "required"} == _bootstrap.REQUIRED


def test_stale_json_in_a_checkout_falls_back_to_toml(tmp_path: Path) -> None:
    """A source checkout whose catalog.jsonl was not regenerated reads the TOML instead."""
    root = tmp_path / "patches"
    folder = root / "demo-patch"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text(VALID)
    assert _data.read(root, check_digest=True) is None  # made of other manifests
    built = [load_text(VALID, "demo", folder)]
    text = _data.render(built, root)
    assert json.loads(text.split("\n")[0])["digest"] == _data.digest(root)
    (folder / "manifest.toml").write_text(VALID.replace("test patch", "edited patch"))
    assert json.loads(text.split("\n")[0])["digest"] != _data.digest(root)


def _rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Manifest]:
    """A one-patch catalog written where :func:`_data.read` looks, and the parsed patch."""
    root = tmp_path / "patches"
    (root / "demo-patch").mkdir(parents=True)
    parsed = load_text(VALID, "demo", root / "demo-patch")
    path = tmp_path / "catalog.jsonl"
    path.write_text(_data.render([parsed], root))
    monkeypatch.setattr(_data, "CATALOG", path)
    return root, parsed


def test_json_lines_parse_a_patch_only_when_read(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the catalog parses every patch's head only; the first other field read
    parses the rest, and the result is the manifest parsing the TOML gives."""
    root, parsed = _rendered(tmp_path, monkeypatch)
    (shipped,) = _data.read(root, check_digest=False) or []
    assert [getattr(shipped, f) for f in Manifest.HEAD] == [getattr(parsed, f)
                                                            for f in Manifest.HEAD]
    rest = getattr(shipped, "_rest", None)
    assert rest is not None  # nothing else parsed yet
    assert shipped.requires == parsed.requires
    assert getattr(shipped, "_rest", None) is None
    assert shipped == parsed and shipped.folder == parsed.folder
    assert shipped.test_with == parsed.test_with
    # a second thread that read a field meanwhile completes it again: no error, no change
    rest(shipped)
    shipped.complete({"requires": ()})
    assert shipped == parsed and shipped.requires == parsed.requires
    with pytest.raises(AttributeError):
        shipped.requires = ()  # type: ignore[misc]


def test_deferred_manifests_copy_compare_and_pickle_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, parsed = _rendered(tmp_path, monkeypatch)
    for reader in (copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m)), lambda m: m):
        (shipped,) = _data.read(root, check_digest=False) or []
        assert reader(shipped) == parsed and hash(shipped) == hash(parsed)


def test_threads_reading_one_deferred_manifest_all_see_it_whole() -> None:
    """Threads that read fields of the same deferred manifests at once (one completing it
    while another finds a field still unset) each get the field, never an AttributeError."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        errors: list[str] = []
        for _ in range(60):
            shipped = _data.read(_catalog.builtin_root(), check_digest=False) or []
            start = threading.Barrier(4)

            def read(manifests: list[Manifest] = shipped, gate: threading.Barrier = start
                     ) -> None:
                gate.wait()
                try:
                    for manifest in manifests:
                        _ = (manifest.fingerprints, manifest.requires, manifest.folder)
                except AttributeError as exc:
                    errors.append(repr(exc))

            threads = [threading.Thread(target=read) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        assert errors == []
    finally:
        sys.setswitchinterval(interval)


@pytest.mark.parametrize("damage", ["truncated", "extended", "edited", "no-sizes"])
def test_a_damaged_catalog_is_refused_when_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                damage: str) -> None:
    """Damage to a line parsed only later is caught when the file is read, as a whole: the
    TOML is read instead, never a patch left half-read in the middle of judging."""
    root, _ = _rendered(tmp_path, monkeypatch)
    path = tmp_path / "catalog.jsonl"
    first, body, end = path.read_text().split("\n")
    damaged = {"truncated": f"{first}\n{body[:-7]}",
               "extended": f"{first}\n{body}\n{{}}\n",
               "edited": f"{first}\n{body.replace('sglang', 'sglang!')}\n",
               "no-sizes": f"{first.replace('sizes', 'sides')}\n{body}\n"}[damage]
    assert end == "" and damaged != path.read_text()
    path.write_text(damaged)
    assert _data.read(root, check_digest=False) is None


def test_json_round_trip_of_every_field() -> None:
    m = load_text(VALID.replace('id = "demo-patch"',
                                'id = "demo-patch"\ngpu = {capability = ">=12.0"}'), "demo")
    back = _data.from_data(json.loads(json.dumps(_data.to_data(m))), None)
    assert back == m and back.gpu == ">=12.0" and back.provides == m.provides


@given(st.dictionaries(st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_|. ", min_size=1, max_size=20),
                       st.text(alphabet="<>=!~0123456789.,* abrcpostdev+", max_size=25),
                       max_size=4))
def test_any_gate_table_fails_cleanly(table: dict[str, str]) -> None:
    """Arbitrary gate keys and specifiers: parsed, or one ManifestError naming the gate."""
    from sglang_shims.catalog.validate import parse_gates

    try:
        gates = parse_gates(table, "gates")
    except ManifestError as exc:
        assert str(exc).startswith("gates: gate ")
    else:
        assert len(gates) == len(table)


def test_codegen_check_and_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m sglang_shims.catalog.codegen``: ``--check`` names each stale file and
    fails, ``--write`` writes them and says which; with no catalog given, ``stale()`` reads
    the built-in one, whose files are current."""
    assert _index.stale() == []
    assert _index.main(["--check"]) == 0
    generated = tmp_path / "pkg" / "gen" / "table.py"
    monkeypatch.setattr(_index, "PACKAGE", tmp_path / "pkg")
    monkeypatch.setattr(_index, "expected", lambda catalog: {generated: "TABLE = ()\n"})
    capsys.readouterr()
    assert _index.main(["--check"]) == 1
    assert capsys.readouterr().err == f"stale: {Path('pkg', 'gen', 'table.py')}\n"
    assert _index.main(["--write"]) == 0
    assert capsys.readouterr().out == f"wrote {Path('pkg', 'gen', 'table.py')}\n"
    assert generated.read_text(encoding="utf-8") == "TABLE = ()\n"
    assert _index.main(["--check"]) == 0


def test_a_catalog_of_another_schema_is_not_read(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A head that is not an object, or names a schema this reader does not know, makes the
    whole catalog unreadable (the TOML is read instead)."""
    root, _ = _rendered(tmp_path, monkeypatch)
    first, rest = _data.CATALOG.read_text().split("\n", 1)
    assert _data.read(root, check_digest=False) is not None
    for head in ({**json.loads(first), "schema": _data.SCHEMA + 1}, ["not", "an", "object"]):
        _data.CATALOG.write_text(json.dumps(head) + "\n" + rest)
        assert _data.read(root, check_digest=False) is None, head
