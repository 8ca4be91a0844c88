"""Rules on triton: the release torch pins, names sglang imports from it, and the
ptxas it brings for the newest GPUs."""

from __future__ import annotations

from pathlib import Path

from ....engine.gates import canonical, satisfies
from ..facts import Facts
from ..finding import Finding, Level
from ..version_text import sm_name, version_in
from ._common import Rule, patch_on, unless_patched, verdict


def _torch_triton(facts: Facts) -> Finding | None:
    from packaging.requirements import InvalidRequirement, Requirement

    torch = facts.version("torch")
    for line in facts.requires.get("torch", []):
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        name = canonical(req.name)
        if name not in ("triton", "pytorch-triton", "pytorch-triton-rocm") or not req.specifier:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        installed = facts.version(name)
        if installed and not satisfies(installed, str(req.specifier))[0]:
            return verdict(
                Level.WARN, f"torch {torch} requires {name}{req.specifier}; {name} {installed} is "
                "installed. Inductor (torch.compile, and torch._inductor imports at sglang "
                "launch) is written against one triton release and breaks with errors such "
                "as \"cannot import name 'AttrsDescriptor'\" or TritonMissing",
                f"pip install '{name}{req.specifier}'")
    return None


def _triton_cache_symbols(facts: Facts) -> Finding | None:
    sglang = facts.version("sglang")
    dist, triton = facts.env.first_installed(("triton", "pytorch-triton-rocm", "pytorch-triton"))
    on, why = patch_on(facts, "triton-cache-helpers-removed")
    state = (f"sglang-shims' patch triton-cache-helpers-removed (on: {why}) puts them back"
             if on else f"the patch triton-cache-helpers-removed is off ({why})")
    return verdict(
        Level.WARN if on else Level.FAIL,
        f"sglang {sglang} imports default_cache_dir, default_dump_dir and "
        "default_override_dir from triton.runtime.cache at module level (sglang/srt/utils.py,"
        f" 0.1.25-0.4.9); triton 3.4 removed them, and {dist} {triton} is installed: "
        f"importing sglang.srt fails with ImportError; {state}",
        f"pip install '{dist}<3.4' with the torch it pairs with (torch <= 2.7), or upgrade "
        "sglang to >= 0.4.9.post1")


def _ptxas_variable(triton: str) -> str:
    """The variable this triton reads for the ptxas of sm_100 and newer (read from the
    wheels, as the patch triton-ptxas-blackwell documents): 3.3 builds it from the binary
    name (hence the hyphen), 3.4-3.5 use the plain ptxas, 3.6+ ptxas-blackwell."""
    if version_in(triton, "<3.4"):
        return "TRITON_PTXAS-BLACKWELL_PATH" if version_in(triton, ">=3.3") else \
            "TRITON_PTXAS_PATH"
    return "TRITON_PTXAS_PATH" if version_in(triton, "<3.6") else "TRITON_PTXAS_BLACKWELL_PATH"


def _ptxas_blackwell(facts: Facts) -> Finding | None:
    triton = facts.version("triton")
    if not triton or not facts.caps:
        return None
    variable = _ptxas_variable(triton)
    if facts.environ.get(variable):
        return None
    for cap in sorted(set(facts.caps)):
        target = f"{sm_name(cap)}a"
        if (cap in ((10, 3), (12, 1)) and version_in(triton, "<3.6")) or (
                cap == (11, 0) and version_in(triton, "<3.7")):
            need = "13.0" if cap == (11, 0) else "12.9"
            mine = None
            if facts.nvcc and facts.nvcc_version and version_in(facts.nvcc_version, f">={need}"):
                mine = Path(facts.nvcc).parent / "ptxas"
            local = f" (this machine has one: {mine})" if mine else ""
            fix = ("pip install 'triton>=3.6' with the torch that pins it, or " if cap != (11, 0)
                   else "")
            unpatched = verdict(
                Level.FAIL, f"GPU {sm_name(cap)} needs ptxas to know {target}; triton {triton}'s "
                "bundled ptxas does not (triton 3.4.0 and 3.6.0's 12.8 ptxas reject sm_103a "
                "and sm_121a; 3.6.0's 12.9 ptxas-blackwell accepts them but not sm_110a), so "
                f"every Triton kernel fails with \"Value '{target}' is not defined for option "
                "'gpu-name'\"",
                f"{fix}export {variable}=<a CUDA >= {need} ptxas>{local}")
            if not facts.version("sglang") or (need == "13.0" and version_in(triton, "<3.5")):
                # the patch acts when sglang is imported; triton 3.3/3.4 refuse a CUDA 13 ptxas
                return unpatched
            found = (f"it points {variable} at {mine}" if mine else
                     f"it looks for a CUDA >= {need} ptxas ($CUDA_HOME/bin, $CUDA_PATH/bin, "
                     "PATH, /usr/local/cuda*/bin, pip's nvidia-cuda-nvcc) and sets "
                     f"{variable}; where none exists it fails loudly and the kernels still fail")
            return unless_patched(facts, "triton-ptxas-blackwell", unpatched,
                                   f"fixes this when sglang is imported: {found}")
        if cap[0] in (10, 12) and version_in(triton, "<3.3"):
            return verdict(
                Level.WARN, f"GPU {sm_name(cap)} needs a ptxas from CUDA >= 12.8; triton {triton} "
                "is "
                "older than 3.3 (3.3.1 was the oldest checked; it ships a 12.8 "
                "ptxas-blackwell), so its Triton kernels may fail to assemble",
                "pip install 'triton>=3.3' with the torch that pins it, or export "
                "TRITON_PTXAS_PATH=<a CUDA >= 12.8 ptxas>")
    return None


RULES: tuple[Rule, ...] = (
    Rule("torch-triton-pair-mismatch", "https://github.com/triton-lang/triton/issues/7594",
         "installed triton outside torch's Requires-Dist triton pin", _torch_triton),
    Rule("triton-cache-symbols-removed", "https://github.com/sgl-project/sglang/pull/7832",
         "", _triton_cache_symbols, patch="triton-cache-helpers-removed"),
    Rule("triton-ptxas-too-old-blackwell", "https://github.com/triton-lang/triton/issues/8539",
         "GPU 10.3/12.1 with triton <3.6, 11.0 with triton <3.7, 10.x/12.x with triton <3.3; "
         "the ptxas variable of that triton unset", _ptxas_blackwell),
)
