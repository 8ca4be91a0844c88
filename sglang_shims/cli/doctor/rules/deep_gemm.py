"""Rules on DeepGEMM: the ``deep_gemm`` sglang calls is not the build sglang expects.

sglang 0.5.12 and later pin ``sgl-deep-gemm``; earlier releases call the copy bundled with
the kernel they pin.  A source build of DeepGEMM (sglang's own Dockerfiles and vendor
images build some) writes the same ``deep_gemm`` folder, and its API follows DeepGEMM's
main branch, not sglang's calls.
"""

from __future__ import annotations

from ..deep_gemm_facts import SOURCE_DIST, DeepGemm, expected_build
from ..facts import Facts
from ..finding import Finding, Level
from ..version_text import version_in
from ._common import Rule, patch_on, verdict


def _uninstall(found: DeepGemm) -> str:
    """How to take a ``deep_gemm`` that is not sglang's off the path."""
    if found.kind != "source":
        return ""
    if found.owner(SOURCE_DIST) is not None:
        return "pip uninstall -y deep_gemm && "
    return f"take the DeepGEMM checkout at {found.folder} off the Python path, then "


def _not_sglangs_build(facts: Facts) -> Finding | None:
    found, sglang = facts.deep_gemm, facts.version("sglang")
    expected = expected_build(facts.requires.get("sglang", []), facts.kernel())
    if found is None or sglang is None or expected is None or found.kind == expected[0]:
        return None
    _kind, words, install = expected
    covered = ""
    warm_up = "deepgemm-compile-mode-missing"
    if version_in(sglang, ">=0.5.4,<0.5.12") and patch_on(facts, warm_up)[0]:
        covered = ("; sglang-shims' patch deepgemm-compile-mode-missing covers the "
                   "compile-mode calls of the warm-up, not the rest of the API")
    return verdict(
        Level.WARN, f"deep_gemm is {found.shown()}; sglang {sglang} calls the DeepGEMM API of "
        f"{words}: a build of another DeepGEMM commit lacks or changes functions it calls "
        "(\"AttributeError: module 'deep_gemm' has no attribute 'get_compile_mode'\", "
        f"\"DeepGEMM API mismatch\"), and FP8 models fail at warm-up or first call{covered}",
        f"{_uninstall(found)}{install} (puts back the deep_gemm sglang {sglang} was released "
        "with)")


RULES: tuple[Rule, ...] = (
    Rule("deepgemm-not-sglangs-build", "https://github.com/sgl-project/sglang/issues/12918",
         "the importable deep_gemm is a source build (or the kernel's copy where sglang pins "
         "sgl-deep-gemm)", _not_sglangs_build),
)
