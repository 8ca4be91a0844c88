"""Version and GPU gates: PEP 440 with local labels, post/rc/dev releases, alternatives."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sglang_shims.catalog.manifest import Gate, load_text
from sglang_shims.engine.gates import Environment, check_gate, check_gpu, evaluate, satisfies

from .conftest import manifest_text


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

    def test_gpu_only_evaluated_when_versions_pass(self) -> None:
        text = manifest_text("gpu-demo", "pkg", requires='sglang = "<0.1"', extra=(
            '[gpu]\ncapability = ">=12.0"\n[[provide]]\nname = "f"\nexported_by = "x"\n'
            'remedy = "y"\n'))
        env = Environment(versions={"sglang": "0.5.1"})  # capabilities left unknown
        ok, _lines, failure = evaluate(load_text(text, "t"), env)
        assert not ok and failure == "sglang 0.5.1 not in <0.1"
        assert env.capabilities is None  # never detected


versions = st.builds(
    lambda a, b, c, post, local: f"{a}.{b}.{c}" + (f".post{post}" if post else "")
    + (f"+cu{local}" if local else ""),
    st.integers(0, 3), st.integers(0, 30), st.integers(0, 30),
    st.integers(0, 3), st.sampled_from([None, 124, 129, 130]))


@given(versions, st.sampled_from([">=0.4.9.post2,<0.5.6", ">=0.3.18", "==2.9.1", "", "<1"]))
def test_satisfies_never_raises_and_matches_packaging(version: str, spec: str) -> None:
    from packaging.specifiers import SpecifierSet

    ok, problem = satisfies(version, spec)
    assert problem == ""
    assert ok == (SpecifierSet(spec).contains(version, prereleases=True) if spec else True)


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
