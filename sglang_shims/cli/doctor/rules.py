"""Check 6: known-bad combinations, each citing its breakage and its remedy."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...catalog.manifest import Gate, Manifest, parse_gates
from ...engine.gates import canonical, check_gate, satisfies
from ...patching.elf import (
    FATBIN_KIND_ELF,
    FATBIN_KIND_PTX,
    FLAG_ARCH_SPECIFIC,
    FLAG_FAMILY,
    FatbinEntry,
)
from . import kernel_facts as kf
from .facts import Facts
from .finding import Finding, failed
from .pins import sglang_pins
from .versions import minor_of, public_version, sm_name, version_between, version_in

Verdict = tuple[str, str, str]
"""(level, detail, remedy) from a rule that fired."""


@functools.cache
def _manifests() -> dict[str, Manifest]:
    from ...catalog.load import load

    return load().by_id()


@dataclass(frozen=True)
class Rule:
    """A known-bad combination from ``shared/research/breakages.md``.

    ``judge`` is a pure function of :class:`Facts`: None when the combination is
    absent, otherwise the verdict; the rule adds the citation.

    A rule for a break that a patch fixes names the ``patch``; its version range is
    then the patch's ``[requires]``, read from the manifest (one truth: the doctor
    and the patch cannot disagree about where the break is), checked before ``judge``
    runs, and ``trigger`` is derived from it.  Where the break exists in a wider range
    than the patch acts, ``when`` holds the rule's own gates and ``wider`` says why;
    a test holds the two ranges to that relation.
    """

    id: str
    breakage: int | None
    url: str
    trigger: str
    judge: Callable[[Facts], Verdict | None]
    patch: str | None = None
    when: tuple[tuple[str, str], ...] | None = None
    """(distribution key as in a manifest, specifier), for a range wider than the patch's."""
    wider: str = ""

    def gates(self) -> tuple[Gate, ...]:
        """The version gates the rule needs, before its judge looks any further."""
        if self.when is not None:
            return parse_gates(dict(self.when), f"doctor rule {self.id}")
        if self.patch is not None:
            return _manifests()[self.patch].requires
        return ()

    def describe(self) -> str:
        """When the rule fires, in words: derived from the gates where it has them."""
        gates = " with ".join(f"{g.label} {g.spec or 'installed'}" for g in self.gates())
        return "; ".join(part for part in (gates, self.trigger) if part)

    def evaluate(self, facts: Facts) -> Finding | None:
        if not all(check_gate(gate, facts.env)[0] for gate in self.gates()):
            return None
        verdict = self.judge(facts)
        if verdict is None:
            return None
        level, detail, remedy = verdict
        cite = f"breakage #{self.breakage} {self.id}" if self.breakage else self.id
        return Finding(self.id, level, f"{detail} [{cite}: {self.url}]", remedy)


def _patch_on(facts: Facts, patch_id: str) -> tuple[bool, str]:
    """Would sglang-shims apply this built-in patch, per the toggles in the environment?"""
    from ..._bootstrap import OFF_BY_DEFAULT
    from ..._toggles import Toggles

    return Toggles(dict(facts.environ)).decide(patch_id, patch_id not in OFF_BY_DEFAULT)


def _unless_patched(facts: Facts, patch_id: str, verdict: Verdict, does: str) -> Verdict:
    """``verdict`` as it stands when ``patch_id`` is off or outside its gates here; a
    warning saying what the patch does when it would act (as the other tied rules do)."""
    level, detail, remedy = verdict
    on, why = _patch_on(facts, patch_id)
    gates = _manifests()[patch_id].requires
    if not on:
        return (level, f"{detail}; sglang-shims' patch {patch_id} is off ({why})",
                f"turn the patch on (SGLANG_SHIMS_ENABLE={patch_id}); {remedy}")
    if not all(check_gate(gate, facts.env)[0] for gate in gates):
        return verdict
    return ("warn", f"{detail}; sglang-shims' patch {patch_id} (on: {why}) {does}", remedy)


def _fused_marlin_moe(facts: Facts) -> Verdict | None:
    sglang, kernel = facts.version("sglang"), facts.kernel()
    if kernel is None:
        return None
    detail = (f"sglang {sglang} imports fused_marlin_moe from sgl_kernel at module level (awq.py, "
              f"gptq.py); {kernel[0]} {kernel[1]} no longer exports it (removed in 0.3.18), so "
              "every model fails to start with ImportError")
    on, why = _patch_on(facts, "sgl-kernel-fused-marlin-moe")
    fix = ("AWQ/GPTQ MoE models need pip install 'sgl-kernel>=0.2.2,<0.3.18' built for your torch,"
           " or sglang >= 0.5.6")
    if on:
        return ("warn", detail + "; sglang-shims' patch sgl-kernel-fused-marlin-moe (on: "
                f"{why}) supplies a stand-in, so start-up works but AWQ/GPTQ MoE models cannot "
                "run", fix)
    return ("fail", detail + f"; sglang-shims' patch sgl-kernel-fused-marlin-moe is off ({why})",
            f"turn the patch on (SGLANG_SHIMS_ENABLE=sgl-kernel-fused-marlin-moe); {fix}")


def _dist_renamed(facts: Facts) -> Verdict | None:
    sglang = facts.version("sglang")
    if facts.version("sgl-kernel"):  # the patch's retire rule: the old name is installed
        return None
    detail = (f"sglang {sglang} checks the kernel under its old distribution name sgl-kernel at "
              "start-up; with only sglang-kernel installed it refuses to start ('sgl-kernel with "
              "minimum required version ... is not installed')")
    pin = next((p for p in sglang_pins(facts.requires.get("sglang", []), ("sgl-kernel",))
                if p.default), None)
    install = (f"pip uninstall -y sglang-kernel && pip install 'sgl-kernel{pin.spec}'" if pin
               else "install the sgl-kernel version your sglang pins")
    on, why = _patch_on(facts, "sgl-kernel-dist-renamed")
    if on:
        return ("warn", detail + f"; sglang-shims' patch sgl-kernel-dist-renamed (on: {why}) "
                "redirects the check", f"keep sglang-shims active, or {install}")
    return ("fail", detail + f"; the patch sgl-kernel-dist-renamed is off ({why})",
            f"SGLANG_SHIMS_ENABLE=sgl-kernel-dist-renamed, or {install}")


def _kernel_not_installed(facts: Facts) -> Verdict | None:
    sglang = facts.version("sglang")
    if not version_in(sglang, ">=0.4.3") or facts.kernel() is not None:
        return None
    pins = [p for p in sglang_pins(facts.requires.get("sglang", []),
                                   ("sgl-kernel", "sglang-kernel")) if p.default]
    install = (f"pip install '{pins[0].dist}{pins[0].spec}'" if pins else
               "pip install sgl-kernel (sglang <= 0.5.9) or sglang-kernel (0.5.10+), the "
               "version your sglang pins")
    level = "fail" if facts.torch_build == "cuda" or facts.caps else "warn"
    return (level, f"sglang {sglang} needs sgl_kernel on CUDA (since 0.4.3), and neither "
            "sgl-kernel nor sglang-kernel is installed: No module named 'sgl_kernel'", install)


def _cuda_major_variant(facts: Facts) -> Verdict | None:
    kernel, known = facts.kernel(), facts.kernel_cuda_major()
    torch_major = minor_of(facts.torch_cuda)
    if kernel is None or known is None or torch_major is None or facts.torch_build != "cuda":
        return None
    major, how = known
    if major == torch_major[0]:
        return None
    dist, version = kernel
    label = ("cu130" if torch_major[0] >= 13 else
             "cu129" if version_in(version, ">=0.3.9") else "cu128")
    return ("warn", f"{dist} {version} is a CUDA {major} build ({how}) but torch "
            f"{facts.version('torch')} uses CUDA {facts.torch_cuda}: the kernel needs a second "
            f"CUDA runtime next to torch's and fails to import when libcudart.so.{major} is not "
            "installed",
            f"install the +{label} build of the same kernel: pip install '{dist}=="
            f"{public_version(version)}' --index-url {kf.VARIANT_INDEX.format(label=label)}")


def _green_ctx_driver(facts: Facts) -> Verdict | None:
    kernel = facts.kernel()
    if kernel is None or not version_between(public_version(kernel[1]), kf.GREEN_CTX_FIRST,
                                             kf.GREEN_CTX_LAST):
        return None
    branch = None
    if facts.driver_cuda is not None:
        shown = f"CUDA {facts.driver_cuda // 1000}.{facts.driver_cuda % 1000 // 10}"
    elif facts.driver_version and facts.driver_version.split(".")[0].isdigit():
        branch = int(facts.driver_version.split(".")[0])
        shown = f"driver {facts.driver_version}"
    else:
        return None
    lacking = kf.green_ctx_lacking(facts.driver_cuda, branch)
    if not lacking:
        return None
    need = kf.GREEN_CTX_MIN_DRIVER
    need_text = f"CUDA {need // 1000}.{need % 1000 // 10}"
    # The loader names one unresolved symbol; which one depends on what the driver lacks.
    first = "cuGreenCtxDestroy" if "cuGreenCtxDestroy" in lacking else lacking[0]
    return ("fail", f"{kernel[0]} {kernel[1]}'s common_ops links the CUDA green-context API "
            f"({', '.join(kf.GREEN_CTX_NEEDED)}); this driver ({shown}) lacks "
            f"{', '.join(lacking)}: import fails with 'undefined symbol: {first}'",
            f"upgrade the NVIDIA driver to >= {kf.GREEN_CTX_MIN_DRIVER_BRANCH} ({need_text}), or "
            f"install sgl-kernel <= 0.2.5 or >= {kf.GREEN_CTX_FIXED} built for your torch")


def _cudart_preload(facts: Facts) -> Verdict | None:
    kernel = facts.kernel()
    if (kernel is None or not version_in(kernel[1], ">=0.3.11,<0.3.18.post3")
            or facts.torch_build != "cuda" or facts.cuda_home_has_libdir is not False):
        return None
    verdict: Verdict = (
        "fail", f"{kernel[0]} {kernel[1]} preloads libcudart from CUDA home "
        f"({facts.cuda_home}, from {facts.cuda_home_from}) and raises RuntimeError('Could "
        "not find CUDA lib directory.') at import when it has no lib/, no lib64/ and no "
        "libcudart.so.12 (fixed in sgl-kernel 0.3.18.post3, PR #13089)",
        "point CUDA_HOME at a folder with lib/libcudart.so.12 (e.g. site-packages/nvidia/"
        "cuda_runtime, or a CUDA 12 toolkit), or upgrade to sgl-kernel >= 0.3.18.post3 built "
        "for your torch")
    if facts.cuda_home_from in ("CUDA_HOME", "CUDA_PATH"):
        return verdict  # the patch never changes a home the user set
    return _unless_patched(
        facts, "sgl-kernel-cuda-runtime-preload", verdict,
        "sets CUDA_HOME to pip's CUDA runtime folder (site-packages/nvidia/cuda_runtime, which "
        "has a lib/) before sgl_kernel runs; without that wheel the import still fails, and "
        "the patch says so")


def _torch_triton(facts: Facts) -> Verdict | None:
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
            return ("warn", f"torch {torch} requires {name}{req.specifier}; {name} {installed} is "
                    "installed. Inductor (torch.compile, and torch._inductor imports at sglang "
                    "launch) is written against one triton release and breaks with errors such "
                    "as \"cannot import name 'AttrsDescriptor'\" or TritonMissing",
                    f"pip install '{name}{req.specifier}'")
    return None


def _triton_cache_symbols(facts: Facts) -> Verdict | None:
    sglang = facts.version("sglang")
    dist, triton = facts.env.first_installed(("triton", "pytorch-triton-rocm", "pytorch-triton"))
    on, why = _patch_on(facts, "triton-cache-helpers-removed")
    state = (f"sglang-shims' patch triton-cache-helpers-removed (on: {why}) puts them back"
             if on else f"the patch triton-cache-helpers-removed is off ({why})")
    return ("warn" if on else "fail",
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


def _ptxas_blackwell(facts: Facts) -> Verdict | None:
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
            verdict: Verdict = (
                "fail", f"GPU {sm_name(cap)} needs ptxas to know {target}; triton {triton}'s "
                "bundled ptxas does not (triton 3.4.0 and 3.6.0's 12.8 ptxas reject sm_103a "
                "and sm_121a; 3.6.0's 12.9 ptxas-blackwell accepts them but not sm_110a), so "
                f"every Triton kernel fails with \"Value '{target}' is not defined for option "
                "'gpu-name'\"",
                f"{fix}export {variable}=<a CUDA >= {need} ptxas>{local}")
            if not facts.version("sglang") or (need == "13.0" and version_in(triton, "<3.5")):
                # the patch acts when sglang is imported; triton 3.3/3.4 refuse a CUDA 13 ptxas
                return verdict
            found = (f"it points {variable} at {mine}" if mine else
                     f"it looks for a CUDA >= {need} ptxas ($CUDA_HOME/bin, $CUDA_PATH/bin, "
                     "PATH, /usr/local/cuda*/bin, pip's nvidia-cuda-nvcc) and sets "
                     f"{variable}; where none exists it fails loudly and the kernels still fail")
            return _unless_patched(facts, "triton-ptxas-blackwell", verdict,
                                   f"fixes this when sglang is imported: {found}")
        if cap[0] in (10, 12) and version_in(triton, "<3.3"):
            return ("warn", f"GPU {sm_name(cap)} needs a ptxas from CUDA >= 12.8; triton {triton} "
                    "is "
                    "older than 3.3 (3.3.1 was the oldest checked; it ships a 12.8 "
                    "ptxas-blackwell), so its Triton kernels may fail to assemble",
                    "pip install 'triton>=3.3' with the torch that pins it, or export "
                    "TRITON_PTXAS_PATH=<a CUDA >= 12.8 ptxas>")
    return None


def _flashinfer_arch_list(facts: Facts) -> Verdict | None:
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
    return ("warn", f"TORCH_CUDA_ARCH_LIST={wanted} is set and FLASHINFER_CUDA_ARCH_LIST is not; "
            f"flashinfer-python {flashinfer} reads only FLASHINFER_CUDA_ARCH_LIST (renamed after "
            "0.2.x), so its JIT ignores your list and compiles for the GPUs it sees (in a build "
            "container without one: 'No supported CUDA architectures found'), and a cubin or "
            "JIT-cache build targets other architectures than you asked for",
            f'export FLASHINFER_CUDA_ARCH_LIST="{listed}" (space-separated; 9.0 and newer need '
            "the 'a' suffix for their arch-specific kernels)")


def _torch_lacks_arch(facts: Facts) -> Verdict | None:
    torch = facts.version("torch")
    if not torch or facts.torch_build != "cuda":
        return None
    for cap in sorted(set(facts.caps)):
        if facts.torch_arch_list:
            entries = [entry_from_name(n) for n in facts.torch_arch_list]
            if any(e is not None and e.runs_on(cap) for e in entries):
                continue
            why = f"its arch list is {', '.join(facts.torch_arch_list)}"
        elif cap[0] >= 10 and facts.torch_cuda and version_in(facts.torch_cuda, "<12.8"):
            why = f"it is a CUDA {facts.torch_cuda} build, and CUDA < 12.8 cannot build for it"
        else:
            continue
        return ("fail", f"torch {torch} has no code for {sm_name(cap)}: {why}; every torch CUDA op "
                "fails with 'no kernel image is available for execution on the device'",
                "install a torch built with CUDA >= 12.8: pip install "
                f"'torch=={public_version(torch)}' "
                "--index-url https://download.pytorch.org/whl/cu128 (or cu129 / cu130)")
    return None


def entry_from_name(name: str) -> FatbinEntry | None:
    match = re.fullmatch(r"(sm|compute)_(\d+)([af]?)", name)
    if not match:
        return None
    kind = FATBIN_KIND_ELF if match.group(1) == "sm" else FATBIN_KIND_PTX
    flags = {"a": FLAG_ARCH_SPECIFIC, "f": FLAG_FAMILY}.get(match.group(3), 0)
    return FatbinEntry(kind, int(match.group(2)), flags)


_QWEN_VL_HELPER = "tf449-mllama-valid-images-removed"
_QWEN_VL_REGISTER = "tf449-qwen2-5-vl-register-collision"


def _config_register(facts: Facts) -> Verdict | None:
    """Gated by the register patch's range (sglang 0.4.3.post1-0.4.4.post1, transformers
    >= 4.49); the first two of those releases also import the mllama helper 4.49 removed,
    which fails first (read in the wheels), so both patches are needed there."""
    sglang, tf = facts.version("sglang"), facts.version("transformers")
    collision = (f"registers its own Qwen2_5_VLConfig with AutoImageProcessor at import; "
                 f"transformers {tf} ships Qwen2.5-VL, so import fails with \"ValueError: "
                 "'<class ...Qwen2_5_VLConfig'>' is already used by a Transformers model\"")
    if version_in(sglang, "<0.4.3.post3"):
        detail = (f"sglang {sglang} imports is_valid_list_of_images from transformers' mllama "
                  f"image processor, which transformers {tf} removed (4.49.0), so import "
                  "sglang.srt.configs fails first with \"ImportError: cannot import name "
                  "'is_valid_list_of_images' from "
                  "'transformers.models.mllama.image_processing_mllama'\"; past that it "
                  + collision)
        needed: tuple[str, ...] = (_QWEN_VL_HELPER, _QWEN_VL_REGISTER)
    else:
        detail, needed = f"sglang {sglang} {collision}", (_QWEN_VL_REGISTER,)
    remedy = ("pip install 'transformers==4.48.3' (what this sglang pins), or upgrade sglang "
              "to >= 0.4.4.post2")
    toggles = {patch: _patch_on(facts, patch) for patch in needed}
    off = [f"{patch} ({why})" for patch, (on, why) in toggles.items() if not on]
    if off:
        return ("fail", f"{detail}; sglang-shims' patch {', '.join(off)} is off",
                f"turn the patch on (SGLANG_SHIMS_ENABLE={','.join(needed)}); {remedy}")
    does = ("puts the helper back and registers sglang's classes with exist_ok"
            if len(needed) == 2 else "registers sglang's classes with exist_ok")
    return ("warn", f"{detail}; sglang-shims' patch {' and '.join(needed)} (on) {does}", remedy)


def _qwen3_asr_register(facts: Facts) -> Verdict | None:
    sglang, tf = facts.version("sglang"), facts.version("transformers")
    on, why = _patch_on(facts, "tf-config-register-collision")
    state = (f"sglang-shims' patch tf-config-register-collision (on: {why}) registers it with "
             "exist_ok" if on else f"the patch tf-config-register-collision is off ({why})")
    return ("warn" if on else "fail",
            f"sglang {sglang} registers 'qwen3_asr' with AutoConfig without "
            f"exist_ok; transformers {tf} ships that model type (from 5.13.0), so import "
            "fails with \"ValueError: 'qwen3_asr' is already used by a Transformers config\" "
            f"(read in the wheels: sglang 0.5.11-0.5.19 register it, 0.5.20 passes exist_ok); "
            f"{state}",
            "pip install 'transformers<5.13' (this sglang pins 5.12.1 or older), or upgrade "
            "sglang to >= 0.5.20")


def _rope_theta(facts: Facts) -> Verdict | None:
    sglang, tf = facts.version("sglang"), facts.version("transformers")
    pinned = next((p.spec for p in sglang_pins(facts.requires.get("sglang", []),
                                                ("transformers",)) if p.default), "")
    target = pinned if pinned and not version_in(pinned.lstrip("="), ">=5.0.0rc0") else "==4.57.1"
    verdict = ("fail", f"sglang {sglang} reads config.rope_theta with a default (getattr(config, "
            "'rope_theta', 10000) in llama.py, qwen3.py and ~50 other models); transformers "
            f"{tf} moves rope_theta into config.rope_parameters, so the default is used silently "
            "and outputs are wrong for every model whose RoPE base is not the default. The helper"
            " from PR #14745 (handle_rope_parameters) is in no published wheel; 0.5.10rc0 is the "
            "first release that reads config.rope_parameters (checked: sglang 0.5.3rc0-0.5.11 "
            "and 0.5.23 wheels)",
            f"pip install 'transformers{target}', or upgrade sglang to >= 0.5.10")
    return _unless_patched(facts, "tf5-rope-theta-moved", verdict,
                           "reads the RoPE base from config.rope_parameters")


def _kernels_hub(facts: Facts) -> Verdict | None:
    kernels, tf = facts.version("kernels"), facts.version("transformers")
    verdict = ("fail", f"kernels {kernels} with transformers {tf}: importing "
            "transformers.models.llama.modeling_llama raises \"ValueError: Either a revision or a "
            "version must be specified.\" (transformers/integrations/hub_kernels.py), and sglang "
            "imports it while starting",
            "pip install 'kernels<0.15' (sglang's own pin since PR #26704), or pip uninstall -y "
            "kernels if nothing else needs it")
    return _unless_patched(facts, "kernels-revision-required", verdict,
                           "resolves the hub-kernel table as kernels 0.14.1 did, in sglang"
                           " processes only")


def _alloc_conf(facts: Facts) -> Verdict | None:
    new = facts.environ.get("PYTORCH_ALLOC_CONF", "").strip()
    old = facts.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").strip()
    torch = facts.version("torch")
    if new and old and new != old:
        return ("warn", f"PYTORCH_ALLOC_CONF={new!r} and PYTORCH_CUDA_ALLOC_CONF={old!r} differ; "
                "which one torch uses depends on its version (torch 2.9.1 reads only "
                "PYTORCH_CUDA_ALLOC_CONF for CUDA)",
                f"set both to the same value, e.g. export PYTORCH_CUDA_ALLOC_CONF={new!r}")
    if new and not old and version_in(torch, "<2.10"):
        return ("warn", f"only PYTORCH_ALLOC_CONF={new!r} is set; torch {torch}, older "
                "than 2.10 ignores it for CUDA (confirmed for 2.9.1), so e.g. "
                "expandable_segments is silently off",
                f"export PYTORCH_CUDA_ALLOC_CONF={new!r} as well")
    return None


def _memory_saver_expandable(facts: Facts) -> Verdict | None:
    saver = facts.version("torch-memory-saver")
    conf = " ".join(facts.environ.get(v, "") for v in ("PYTORCH_ALLOC_CONF",
                                                        "PYTORCH_CUDA_ALLOC_CONF"))
    if not saver or "expandable_segments:true" not in conf.replace(" ", "").lower():
        return None
    return ("warn", f"torch-memory-saver {saver} is installed and expandable_segments:True is "
            "set: with sglang --enable-memory-saver, pause() then releases nothing",
            "unset expandable_segments for runs that use --enable-memory-saver")


def _flashinfer_mismatch(facts: Facts) -> Verdict | None:
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
    return ("fail", f"{shown} does not match flashinfer-python {core}: flashinfer refuses to "
            "start ('... version does not match flashinfer version'), and bypassing that check "
            "loads stale kernels (illegal memory accesses, missing cubins)",
            " && ".join(fixes) + " (reinstall at the same version; do not bypass the check)")


def _flashinfer_check_disabled(facts: Facts) -> Verdict | None:
    value = facts.environ.get("FLASHINFER_DISABLE_VERSION_CHECK", "").strip()
    if not value or value.lower() in ("0", "false", "no", "off"):
        return None
    return ("warn", f"FLASHINFER_DISABLE_VERSION_CHECK={value} hides a flashinfer-python / "
            "flashinfer-cubin / flashinfer-jit-cache mismatch; running mismatched packages has "
            "caused stale kernels and illegal memory accesses",
            "unset FLASHINFER_DISABLE_VERSION_CHECK and install matching versions")


def _flashinfer_nvcc(facts: Facts) -> Verdict | None:
    if not facts.version("flashinfer-python") or not facts.nvcc_version:
        return None
    twelve = [c for c in set(facts.caps) if c[0] == 12]
    if not twelve or not version_in(facts.nvcc_version, "<12.9"):
        return None
    return ("warn", f"FlashInfer JIT-compiles with the local nvcc ({facts.nvcc}, CUDA "
            f"{facts.nvcc_version}); for {sm_name(twelve[0])} it needs CUDA >= 12.9 and otherwise "
            "fails with 'FlashInfer requires GPUs with sm75 or higher' (fixed by flashinfer PR "
            "#3633; the first release with it is not confirmed)",
            "point CUDA_HOME and PATH at a CUDA >= 12.9 toolkit")


def _kernel_ops(facts: Facts) -> Verdict | None:
    from .hybrid import kernel_ops

    return kernel_ops(facts)


RULES: tuple[Rule, ...] = (
    Rule("sgl-kernel-missing-fused-marlin-moe", 1,
         "https://github.com/sgl-project/sglang/issues/8654",
         "", _fused_marlin_moe, patch="sgl-kernel-fused-marlin-moe"),
    # not tied to the patch's gates: it fires only where the data says names are missing
    Rule("sgl-kernel-hybrid-ops", None, "https://github.com/sgl-project/sglang/pull/20277",
         "the installed kernel lacks names the installed sglang imports (read from the wheels)",
         _kernel_ops),
    Rule("sgl-kernel-dist-renamed", None, "https://github.com/sgl-project/sglang/pull/20440",
         "sgl-kernel not installed", _dist_renamed, patch="sgl-kernel-dist-renamed"),
    Rule("sgl-kernel-not-installed", 8, "https://github.com/sgl-project/sglang/issues/3687",
         "sglang >=0.4.3 with neither kernel distribution", _kernel_not_installed),
    Rule("sgl-kernel-cuda-major-variant", 6, "https://github.com/sgl-project/sglang/issues/29646",
         "kernel CUDA major (DT_NEEDED libcudart, label or default build) != torch's",
         _cuda_major_variant),
    Rule("sgl-kernel-green-ctx-driver", 7, "https://github.com/sgl-project/sglang/issues/8432",
         f"sgl-kernel {kf.GREEN_CTX_FIRST}–{kf.GREEN_CTX_LAST} with a driver < CUDA 12.5",
         _green_ctx_driver),
    Rule("sgl-kernel-cudart-preload", 4, "https://github.com/sgl-project/sglang/issues/18203",
         "sgl-kernel >=0.3.11,<0.3.18.post3, CUDA torch, CUDA home without lib/ or lib64/",
         _cudart_preload),
    Rule("torch-triton-pair-mismatch", 21, "https://github.com/triton-lang/triton/issues/7594",
         "installed triton outside torch's Requires-Dist triton pin", _torch_triton),
    Rule("triton-cache-symbols-removed", 19, "https://github.com/sgl-project/sglang/pull/7832",
         "", _triton_cache_symbols, patch="triton-cache-helpers-removed"),
    Rule("triton-ptxas-too-old-blackwell", 17, "https://github.com/triton-lang/triton/issues/8539",
         "GPU 10.3/12.1 with triton <3.6, 11.0 with triton <3.7, 10.x/12.x with triton <3.3; "
         "the ptxas variable of that triton unset", _ptxas_blackwell),
    Rule("torch-wheel-lacks-sm120", 18, "https://github.com/pytorch/pytorch/issues/167244",
         "GPU not in torch's arch list, or cc >= 10 with a torch CUDA < 12.8", _torch_lacks_arch),
    Rule("tf-qwen2-5-vl-config-register", 22, "https://github.com/sgl-project/sglang/issues/4629",
         "", _config_register, patch=_QWEN_VL_REGISTER),
    Rule("tf-config-register-collision", None,
         "https://github.com/sgl-project/sglang/issues/38183", "", _qwen3_asr_register,
         patch="tf-config-register-collision"),
    Rule("tf5-rope-theta-moved", 24, "https://github.com/sgl-project/sglang/pull/14745",
         "", _rope_theta, patch="tf5-rope-theta-moved"),
    Rule("tf-kernels-hub-revision", 27, "https://github.com/sgl-project/sglang/pull/26704",
         "", _kernels_hub, patch="kernels-revision-required",
         when=(("kernels", ">=0.15.1"), ("transformers", "<5.13.0")),
         wider="the break is between kernels and transformers: any program that imports a "
               "transformers modeling file meets it, with or without sglang; the patch acts "
               "only where sglang (>= 0.4.0) is installed"),
    Rule("alloc-conf-env-rename", 29, "https://github.com/pytorch/pytorch/issues/183387",
         "PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF differ, or only the new one with "
         "torch <2.10", _alloc_conf),
    Rule("memory-saver-vs-expandable", 30, "https://github.com/fzyzcjy/torch_memory_saver/issues/24",
         "torch-memory-saver installed with expandable_segments:True", _memory_saver_expandable),
    Rule("flashinfer-cubin-jitcache-mismatch", 11,
         "https://github.com/flashinfer-ai/flashinfer/issues/4337",
         "flashinfer-cubin or flashinfer-jit-cache version != flashinfer-python",
         _flashinfer_mismatch),
    Rule("flashinfer-version-check-disabled", 11,
         "https://github.com/lightseekorg/tokenspeed/pull/284",
         "FLASHINFER_DISABLE_VERSION_CHECK set", _flashinfer_check_disabled),
    Rule("flashinfer-arch-list-env", None, "https://github.com/sgl-project/sglang/issues/10933",
         "flashinfer-python >=0.3.1 with TORCH_CUDA_ARCH_LIST set and FLASHINFER_CUDA_ARCH_LIST "
         "unset", _flashinfer_arch_list),
    Rule("flashinfer-sm120-nvcc128", 13, "https://github.com/flashinfer-ai/flashinfer/pull/3633",
         "flashinfer with a 12.x GPU and a local nvcc < 12.9", _flashinfer_nvcc),
)


def check_rules(facts: Facts) -> list[Finding]:
    out = []
    for rule in RULES:
        try:
            finding = rule.evaluate(facts)
        except Exception as exc:
            finding = failed(rule.id, exc)
        if finding is not None:
            out.append(finding)
    return out
