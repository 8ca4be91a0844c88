"""Rules on FlashInfer: its three distributions in step, its version check left on,
the architectures its JIT builds for and the nvcc it builds with."""

from __future__ import annotations

import re

from .. import upstream
from ..facts import Facts
from ..finding import Finding, Level
from ..version_text import public_version, sm_name, version_in
from ._common import Rule, verdict


def _flashinfer_mismatch(facts: Facts) -> Finding | None:
    core = facts.version("flashinfer-python")
    if not core:
        return None
    bad = [(d, v) for d in ("flashinfer-cubin", "flashinfer-jit-cache")
           if (v := facts.version(d)) and public_version(v) != public_version(core)]
    if not bad:
        return None
    cu = (facts.torch_cuda or "12.9").replace(".", "")
    fixes = []
    for dist, _v in bad:
        if dist == "flashinfer-cubin":
            fixes.append(f"pip install 'flashinfer-cubin=={public_version(core)}'")
        else:
            fixes.append(f"pip install 'flashinfer-jit-cache=={public_version(core)}' --index-url "
                         f"https://flashinfer.ai/whl/cu{cu}")
    shown = ", ".join(f"{d} {v}" for d, v in bad)
    return verdict(
        Level.FAIL, f"{shown} does not match flashinfer-python {core}: flashinfer refuses to "
        "start ('... version does not match flashinfer version'), and bypassing that check "
        "loads stale kernels (illegal memory accesses, missing cubins)",
        " && ".join(fixes) + " (reinstall at the same version; do not bypass the check)")


def _flashinfer_check_disabled(facts: Facts) -> Finding | None:
    value = facts.environ.get("FLASHINFER_DISABLE_VERSION_CHECK", "").strip()
    if not value or value.lower() in ("0", "false", "no", "off"):
        return None
    return verdict(
        Level.WARN, f"FLASHINFER_DISABLE_VERSION_CHECK={value} hides a flashinfer-python / "
        "flashinfer-cubin / flashinfer-jit-cache mismatch; running mismatched packages has "
        "caused stale kernels and illegal memory accesses",
        "unset FLASHINFER_DISABLE_VERSION_CHECK and install matching versions")


def _flashinfer_arch_list(facts: Facts) -> Finding | None:
    """flashinfer-python 0.3.1+ reads FLASHINFER_CUDA_ARCH_LIST only (compilation_context.py;
    0.2.14.post1's aot.py and JIT read TORCH_CUDA_ARCH_LIST; read from the installed wheels
    0.2.11.post3-0.7.2).  Not mirrored by a patch: what an explicit flashinfer list means
    changed between releases (0.4.0rc3 appends 'a' to 9.0+, later ones take it literally or
    map 12.0 to 12.0f), and TORCH_CUDA_ARCH_LIST is often meant for torch's own extension
    builds, so copying it would silently pick other kernels than either tool would."""
    flashinfer = facts.version("flashinfer-python")
    wanted = facts.environ.get("TORCH_CUDA_ARCH_LIST", "").strip()
    if (not version_in(flashinfer, ">=0.3.1") or not wanted
            or facts.environ.get("FLASHINFER_CUDA_ARCH_LIST", "").strip()):
        return None
    archs = []
    for arch in re.split(r"[;,\s]+", wanted.replace("+PTX", "")):
        major, _, minor = arch.partition(".")
        if major.isdigit() and minor:
            archs.append(arch if not minor.isdigit() or int(major) < 9 else f"{arch}a")
    listed = " ".join(dict.fromkeys(archs)) or "<e.g. 8.0 9.0a 10.0a>"
    return verdict(
        Level.WARN, f"TORCH_CUDA_ARCH_LIST={wanted} is set and FLASHINFER_CUDA_ARCH_LIST is not; "
        f"flashinfer-python {flashinfer} reads only FLASHINFER_CUDA_ARCH_LIST (renamed after "
        "0.2.x), so its JIT ignores your list and compiles for the GPUs it sees (in a build "
        "container without one: 'No supported CUDA architectures found'), and a cubin or "
        "JIT-cache build targets other architectures than you asked for",
        f'export FLASHINFER_CUDA_ARCH_LIST="{listed}" (space-separated; 9.0 and newer need '
        "the 'a' suffix for their arch-specific kernels)")


def _flashinfer_nvcc(facts: Facts) -> Finding | None:
    if not facts.version("flashinfer-python") or not facts.nvcc_version:
        return None
    twelve = [c for c in set(facts.caps) if c[0] == 12]
    if not twelve or not version_in(facts.nvcc_version, "<12.9"):
        return None
    return verdict(
        Level.WARN, f"FlashInfer JIT-compiles with the local nvcc ({facts.nvcc}, CUDA "
        f"{facts.nvcc_version}); for {sm_name(twelve[0])} it needs CUDA >= 12.9 and otherwise "
        "fails with 'FlashInfer requires GPUs with sm75 or higher' (fixed by flashinfer PR "
        "#3633; the first release with it is not confirmed)",
        "point CUDA_HOME and PATH at a CUDA >= 12.9 toolkit")


RULES: tuple[Rule, ...] = (
    Rule("flashinfer-cubin-jitcache-mismatch",
         "https://github.com/flashinfer-ai/flashinfer/issues/4337",
         "flashinfer-cubin or flashinfer-jit-cache version != flashinfer-python",
         _flashinfer_mismatch),
    Rule("flashinfer-version-check-disabled", "https://github.com/lightseekorg/tokenspeed/pull/284",
         "FLASHINFER_DISABLE_VERSION_CHECK set", _flashinfer_check_disabled),
    Rule("flashinfer-arch-list-env", upstream.ARCH_LIST_ENV,
         "flashinfer-python >=0.3.1 with TORCH_CUDA_ARCH_LIST set and FLASHINFER_CUDA_ARCH_LIST "
         "unset", _flashinfer_arch_list),
    Rule("flashinfer-sm120-nvcc128", "https://github.com/flashinfer-ai/flashinfer/pull/3633",
         "flashinfer with a 12.x GPU and a local nvcc < 12.9", _flashinfer_nvcc),
)
