"""Version and GPU gates: PEP 440 with local labels, post/rc/dev releases, alternatives."""

from __future__ import annotations

import math
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from sglang_shims.catalog.manifest import Gate
from sglang_shims.catalog.validate import load_text
from sglang_shims.engine.gates import (
    Environment,
    check_gate,
    check_gpu,
    detect_gpus,
    evaluate,
    satisfies,
)

from ..support.packages import manifest_text
from ..support.run import imported_by_running


@pytest.mark.parametrize(("version", "spec", "expected"), [
    ("0.5.1", ">=0.4.9.post2,<0.5.6", True),
    ("0.5.6", ">=0.4.9.post2,<0.5.6", False),
    ("0.5.5.post3", ">=0.4.9.post2,<0.5.6", True),
    ("0.4.9.post1", ">=0.4.9.post2,<0.5.6", False),
    ("0.5.6rc1", "<0.5.6", False),  # PEP 440: <V excludes pre-releases of V (they carry the fix)
    ("0.5.6rc1", ">=0.5.6rc1", True),
    ("0.5.1.dev42+g1234abc", "<0.5.6", True),  # a dev build of an old release
    ("2.9.1+cu130", "==2.9.1", True),        # local label ignored by ==
    ("2.9.1+cu130", ">=2.9.1", True),
    ("2.9.1+cu130", "<2.9.1", False),
    ("0.3.18", ">=0.3.18", True),
    ("0.3.17.post2", ">=0.3.18", False),
    ("0.4.6.post1", ">=0.3.18", True),
    ("1.0", "", True),
])
def test_satisfies(version: str, spec: str, expected: bool) -> None:
    assert satisfies(version, spec) == (expected, "")


def test_unparseable_version_fails_with_reason() -> None:
    ok, problem = satisfies("0.5.1-custom-build", ">=0.5")
    assert not ok and "not PEP 440" in problem


def test_alternatives_take_first_installed() -> None:
    env = Environment(versions={"sgl-kernel": None, "sglang-kernel": "0.4.5"})
    ok, detail = check_gate(Gate(("sgl-kernel", "sglang-kernel"), ">=0.3.18"), env)
    assert ok and detail == "sglang-kernel 0.4.5 in >=0.3.18"


@pytest.mark.parametrize(("dists", "ok", "detail"), [
    (("sgl-kernel", "sglang-kernel"), False, "sgl-kernel 0.3.18 not in >=0.4"),
    (("sglang-kernel", "sgl-kernel"), True, "sglang-kernel 0.4.5 in >=0.4"),
])
def test_alternatives_with_both_installed_take_the_first(dists: tuple[str, str], ok: bool,
                                                         detail: str) -> None:
    """README: ``a | b`` is the first of a, b that is installed -- in the order written."""
    env = Environment(versions={"sgl-kernel": "0.3.18", "sglang-kernel": "0.4.5"})
    assert check_gate(Gate(dists, ">=0.4"), env) == (ok, detail)


def test_missing_distribution() -> None:
    env = Environment(versions={"sglang": None})
    ok, detail = check_gate(Gate(("sglang",), "<0.5.6"), env)
    assert not ok and "not installed" in detail


def test_installed_any_version() -> None:
    env = Environment(versions={"sglang-kernel": "0.4.10"})
    assert check_gate(Gate(("sglang-kernel",), ""), env) == (
        True, "sglang-kernel 0.4.10 in any version")


def test_distribution_names_are_canonicalised() -> None:
    env = Environment(versions={"flashinfer-python": "0.2.11.post3"})
    assert env.version("flashinfer_python") == "0.2.11.post3"


class TestGpuGate:
    def test_matches_any_device(self) -> None:
        env = Environment(capabilities=[(9, 0), (12, 0)], gpu_source="test")
        assert check_gpu(">=12.0", env)[0]
        assert not check_gpu(">=10.0,<11", env)[0]

    def test_no_gpu(self) -> None:
        env = Environment(capabilities=[], gpu_source="none found")
        ok, detail = check_gpu(">=12.0", env)
        assert not ok and "no GPU" in detail

    def test_override_variable(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("SGLANG_SHIMS_GPU_CAPABILITY", "12.0, 9.0")
        env = Environment()
        assert env.gpu() == [(12, 0), (9, 0)]
        assert env.gpu_source == "SGLANG_SHIMS_GPU_CAPABILITY"

    def test_gpu_gate_line_is_reported(self) -> None:
        text = manifest_text("gpu-line", "pkg", requires='sglang = ">=0.5"', extra=(
            '[gpu]\ncapability = ">=12.0"\n[[provide]]\nname = "f"\nexported_by = "x"\n'
            'remedy = "y"\n'))
        env = Environment(versions={"sglang": "0.5.1"}, capabilities=[(12, 0)], gpu_source="t")
        ok, lines, failure = evaluate(load_text(text, "t"), env)
        assert ok and failure == ""
        assert lines[0] == "sglang 0.5.1 in >=0.5"
        assert len(lines) == 2 and "12.0" in lines[1], lines

    def test_gpu_only_evaluated_when_versions_pass(self) -> None:
        text = manifest_text("gpu-demo", "pkg", requires='sglang = "<0.1"', extra=(
            '[gpu]\ncapability = ">=12.0"\n[[provide]]\nname = "f"\nexported_by = "x"\n'
            'remedy = "y"\n'))
        env = Environment(versions={"sglang": "0.5.1"})  # capabilities left unknown
        ok, _lines, failure = evaluate(load_text(text, "t"), env)
        assert not ok and failure == "sglang 0.5.1 not in <0.1"
        assert env.capabilities is None  # never detected


# -- property tests with an oracle of our own ---------------------------------------------
# Versions are generated from their parts (release, pre, post, dev, local), so the expected
# answer is computed from those parts with PEP 440's ordering written out below, not by the
# packaging call that satisfies() makes.

PHASES = {"a": 0, "b": 1, "rc": 2}


@dataclass(frozen=True)
class V:
    release: tuple[int, ...]
    pre: tuple[str, int] | None = None
    post: int | None = None
    dev: int | None = None
    local: str | None = None
    epoch: int = 0

    def __str__(self) -> str:
        text = (f"{self.epoch}!" if self.epoch else "") + ".".join(map(str, self.release))
        text += f"{self.pre[0]}{self.pre[1]}" if self.pre else ""
        text += f".post{self.post}" if self.post is not None else ""
        text += f".dev{self.dev}" if self.dev is not None else ""
        return text + (f"+{self.local}" if self.local else "")

    @property
    def base(self) -> tuple[int, ...]:
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        return tuple(release)

    @property
    def is_pre(self) -> bool:
        return self.pre is not None or self.dev is not None

    def key(self) -> tuple[object, ...]:
        """PEP 440 order: X.devN < X aN < X rcN < X < X.postN; .devN before its own release."""
        if self.pre is None and self.post is None and self.dev is not None:
            pre: tuple[int, int] = (-1, 0)
        elif self.pre is None:
            pre = (3, 0)
        else:
            pre = (PHASES[self.pre[0]], self.pre[1])
        post = -1 if self.post is None else self.post
        dev = math.inf if self.dev is None else self.dev
        return (self.epoch, self.base, pre, post, dev)


def spec_holds(v: V, op: str, s: V) -> bool:
    """One clause, PEP 440 semantics with pre-releases allowed (local labels: see there)."""
    same_base = (v.epoch, v.base) == (s.epoch, s.base)
    if op in ("==", "!="):
        equal = v.key() == s.key()  # the spec has no local label: the candidate's is ignored
        return equal if op == "==" else not equal
    if op == ">=":
        return v.key() >= s.key()
    if op == "<=":
        return v.key() <= s.key()
    if op == "<":  # a pre-release of V is not "< V" unless V is a pre-release itself
        if not s.is_pre and v.is_pre and same_base and v.key() < s.key():
            return False
        return v.key() < s.key()
    assert op == ">"  # a post-release or local build of V is not "> V"
    if s.post is None and v.post is not None and same_base and v.pre == s.pre:
        return False
    if v.local is not None and v.key() == s.key():
        return False
    return v.key() > s.key()


releases = st.lists(st.integers(0, 12), min_size=1, max_size=4).map(tuple)
spec_versions = st.builds(
    V, releases, st.one_of(st.none(), st.tuples(st.sampled_from(list(PHASES)), st.integers(0, 3))),
    st.one_of(st.none(), st.integers(0, 3)))
versions = st.builds(
    V, releases, st.one_of(st.none(), st.tuples(st.sampled_from(list(PHASES)), st.integers(0, 3))),
    st.one_of(st.none(), st.integers(0, 3)), st.one_of(st.none(), st.integers(0, 50)),
    st.sampled_from([None, "cu130", "g1234abc", "rocm6.2"]), st.sampled_from([0, 0, 0, 1]))
clauses = st.lists(st.tuples(st.sampled_from(["==", "!=", ">=", "<=", "<", ">"]), spec_versions),
                   max_size=3)


def unambiguous(version: V, clause: list[tuple[str, V]]) -> bool:
    """packaging < 26 and >= 26 read PEP 440's "a pre-release of V" differently when V is a
    post-release (is 1.0.dev0 below 1.0.post0?), and "a post-release of V" when the pre
    parts differ (is 1.0b1.post0 one of 1.0a1?); no gate of ours writes such a clause."""
    return not any((s.epoch, s.base) == (version.epoch, version.base) and (
        (op == "<" and s.post is not None and version.is_pre)
        or (op == ">" and s.post is None and version.post is not None and version.pre != s.pre))
        for op, s in clause)


@given(st.one_of(versions, releases.map(V)), clauses)
def test_satisfies_matches_pep440(version: V, clause: list[tuple[str, V]]) -> None:
    """local, post, pre and dev releases, against AND-ed clauses of every operator."""
    assume(unambiguous(version, clause))
    spec = ",".join(f"{op}{s}" for op, s in clause)
    ok, problem = satisfies(str(version), spec)
    assert problem == ""
    assert ok == all(spec_holds(version, op, s) for op, s in clause), (str(version), spec)


@given(st.one_of(versions, releases.map(V)), clauses)
def test_finders_reader_matches_pep440(version: V, clause: list[tuple[str, V]]) -> None:
    """The start-up finder's own PEP 440 reader (no packaging), against the same oracle."""
    from sglang_shims import _versions

    assume(unambiguous(version, clause))
    spec = ",".join(f"{op}{s}" for op, s in clause)
    expected = all(spec_holds(version, op, s) for op, s in clause)
    assert _versions.spec_contains(spec, str(version)) is expected, (str(version), spec)


# none of these can end a PEP 440 version that has no local label (which would absorb some)
GARBAGE_SUFFIXES = ["-custom-build", "..1", "+", "+cu 130", " beta", "!", "@main", ".x",
                    "+a..b", "/1", "+-"]


@given(versions.filter(lambda v: v.local is None), st.sampled_from(GARBAGE_SUFFIXES))
def test_garbage_versions_are_refused_by_name(version: V, suffix: str) -> None:
    garbage = f"{version}{suffix}"
    ok, problem = satisfies(garbage, ">=0")
    assert not ok and problem == f"version {garbage!r} is not PEP 440"


@given(st.text(max_size=30))
def test_satisfies_arbitrary_text(version: str) -> None:
    """Any text: a clear problem exactly when it is not a PEP 440 version."""
    from packaging.version import InvalidVersion, Version

    try:
        Version(version)
        valid = True
    except InvalidVersion:
        valid = False
    ok, problem = satisfies(version, ">=0")
    assert bool(problem) is not valid
    assert ok is valid


class TestDetectGpus:
    """Without the override: torch only when CUDA is already initialised, then nvidia-smi."""

    @pytest.fixture(autouse=True)
    def _no_override(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        monkeypatch.delenv("SGLANG_SHIMS_GPU_CAPABILITY", raising=False)
        monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi unless a test writes one
        monkeypatch.setitem(sys.modules, "torch", None)

    def fake_smi(self, tmp_path: Path, output: str) -> None:
        smi = tmp_path / "nvidia-smi"
        smi.write_text(f"#!/bin/sh\nprintf '{output}'\n")
        smi.chmod(0o755)

    def test_initialised_torch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        caps = [(9, 0), (12, 0)]
        cuda = types.SimpleNamespace(is_initialized=lambda: True, device_count=lambda: 2,
                                     get_device_capability=lambda i: caps[i])
        monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
        assert detect_gpus() == ([(9, 0), (12, 0)], "torch.cuda")

    def test_uninitialised_torch_falls_back_to_nvidia_smi(
            self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        cuda = types.SimpleNamespace(is_initialized=lambda: False)
        monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
        self.fake_smi(tmp_path, "9.0\\n12.0\\n")
        assert detect_gpus() == ([(9, 0), (12, 0)], "nvidia-smi")

    def test_nvidia_smi_lines_that_are_not_capabilities_are_skipped(self, tmp_path: Path
                                                                    ) -> None:
        self.fake_smi(tmp_path, "[N/A]\\n 8.9 \\n10\\n")
        assert detect_gpus() == ([(8, 9), (10, 0)], "nvidia-smi")

    def test_failing_nvidia_smi(self, tmp_path: Path) -> None:
        (tmp_path / "nvidia-smi").write_text("#!/bin/sh\nexit 9\n")
        (tmp_path / "nvidia-smi").chmod(0o755)
        assert detect_gpus() == ([], "none found")

    def test_nothing(self) -> None:
        assert detect_gpus() == ([], "none found")

    @pytest.mark.parametrize("value", ["abc", "12.x", "9.0,lol"])
    def test_unreadable_override_is_ignored_not_raised(
            self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str) -> None:
        # the toggles' warning names the bad value; detection goes on as if it were unset
        monkeypatch.setenv("SGLANG_SHIMS_GPU_CAPABILITY", value)
        self.fake_smi(tmp_path, "9.0\\n")
        assert detect_gpus() == ([(9, 0)], "nvidia-smi")


# PEP 440's other spellings ("Normalization"): pre/preview/c = rc, alpha = a, beta = b,
# rev/r and "-N" = post, "-dev" and upper case = dev; local labels with "-" and "_".
# Expected answers from the PEP's text.
SPELLINGS = [
    ("1.0pre1", "==1.0rc1", True), ("1.0preview2", "==1.0rc2", True),
    ("1.0c1", "==1.0rc1", True), ("1.0alpha1", "==1.0a1", True), ("1.0beta1", "==1.0b1", True),
    ("1.0rev1", "==1.0.post1", True), ("1.0r2", "==1.0.post2", True),
    ("1.0-1", "==1.0.post1", True), ("1.0-dev3", "==1.0.dev3", True),
    ("1.0.DEV3", "==1.0.dev3", True), ("1.0pre1", "<1.0rc2", True),
    ("1.0preview1", ">1.0b9", True), ("1.0dev1", "<1.0a0", True),
    ("1.0r1", ">1.0", False),  # a post-release of V is not "> V"
    ("1.0pre1", "==1.0b1", False), ("1.0rev1", "==1.0.post2", False),
    ("1.0beta2", "<1.0alpha3", False),
    # local labels: ignored by ==V (V without one) and by ordered comparisons
    ("2.9.1+cu130", "==2.9.1", True), ("2.9.1+cu130", "<2.9.1", False),
    ("0.5.1+g1234.dirty", ">=0.5,<0.6", True), ("0.5.1+rocm6-2_1", "==0.5.1", True),
]


@pytest.mark.parametrize(("version", "spec", "expected"), SPELLINGS)
def test_other_spellings(version: str, spec: str, expected: bool) -> None:
    from sglang_shims import _versions

    assert satisfies(version, spec) == (expected, "")
    # the finder's own reader (no packaging at start-up) gives the same answer
    assert _versions.spec_contains(spec, version) is expected


# Prefix matches (``==V.*``, ``!=V.*``, padded with zeros, epoch 0 only) and ``~=``, expected
# answers from PEP 440's text; the finder's reader must give them without packaging.
PREFIX_CLAUSES = [
    ("1.5", "==1.*", True), ("2.0", "==1.*", False), ("1.5", "!=1.*", False),
    ("2.0", "!=1.*", True), ("1.2.7", "==1.2.*", True), ("1.3", "==1.2.*", False),
    ("1.2", "==1.2.0.*", True), ("1!1.5", "==1.*", False), ("1!1.5", "!=1.*", True),
    ("1.3", "~=1.2", True), ("1.2.9", "~=1.2.3", True), ("2.0", "~=1.2", False),
    ("1.1", "~=1.2", False), ("1.3.0", "~=1.2.3", False),
]


@pytest.mark.parametrize(("version", "spec", "expected"), PREFIX_CLAUSES)
def test_finder_reader_prefix_and_compatible_clauses(version: str, spec: str,
                                                     expected: bool) -> None:
    from sglang_shims import _versions

    assert satisfies(version, spec) == (expected, "")
    assert _versions.spec_contains(spec, version) is expected


@pytest.mark.parametrize("version", ["1.0.post1a1", "1.0.dev1a1", "1.0.dev1.post1"])
def test_finder_reader_refuses_segments_out_of_order(version: str) -> None:
    """PEP 440 orders the suffixes pre, post, dev; one out of order is not a version, and
    the finder's reader must say so rather than read a key from it."""
    from sglang_shims import _versions

    assert _versions.version_key(version) is None
    assert _versions.spec_contains(">=0", version) is False


def test_the_version_reader_imports_nothing_when_it_loads() -> None:
    """The finder's reader runs at wake-up: its type-only imports stay behind
    ``TYPE_CHECKING`` (``os`` and ``sys`` are loaded before any ``.pth``)."""
    source = Path(__file__).resolve().parents[2] / "sglang_shims" / "_versions.py"
    assert imported_by_running(source) == []


@pytest.mark.parametrize("version", ["a1!1.0", "1a!1.0", "!1.0", "x!1.0"])
def test_finder_reader_refuses_an_epoch_that_is_not_a_number(version: str) -> None:
    """An epoch is digits only; anything else is not a version (and never an error)."""
    from sglang_shims import _versions

    assert _versions.version_key(version) is None
    assert _versions.spec_contains(">=0", version) is False


@pytest.mark.parametrize(("version", "spec"), [
    ("2.0rc1", "<2.0"), ("2.0rc1", ">2.0"), ("2.0.post1", ">2.0"), ("2.0.dev3", "<2.0"),
    ("1!2.0a1", "<1!2.0"),
])
def test_strict_bounds_at_their_own_release_go_to_packaging(version: str, spec: str) -> None:
    """``<V`` / ``>V`` against a pre-, post- or dev-release of V itself: packaging < 26 and
    >= 26 answer differently, so the import-free reader leaves it to the installed one."""
    from sglang_shims.engine import gates

    assert gates._without_packaging(version, spec) is None
    # one release further and the reader answers on its own
    assert gates._without_packaging("2.1", spec.replace("1!", "")) is not None
