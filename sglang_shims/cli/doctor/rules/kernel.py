"""Rules on the kernel distribution (sgl-kernel / sglang-kernel) and what it
needs from the machine: names sglang imports, the distribution's name, CUDA runtime
and driver."""

from __future__ import annotations

from .. import kernel_facts as kf
from .. import upstream
from ..facts import Facts
from ..finding import Finding, Level
from ..requires import sglang_pins
from ..version_text import minor_of, public_version, version_between, version_in
from ._common import Rule, patch_on, unless_patched, verdict
from .kernel_names import missing_names


def _fused_marlin_moe(facts: Facts) -> Finding | None:
    sglang, kernel = facts.version("sglang"), facts.kernel()
    if kernel is None:
        return None
    detail = (f"sglang {sglang} imports fused_marlin_moe from sgl_kernel at module level (awq.py, "
              f"gptq.py); {kernel[0]} {kernel[1]} no longer exports it (removed in 0.3.18), so "
              "every model fails to start with ImportError")
    on, why = patch_on(facts, "sgl-kernel-fused-marlin-moe")
    fix = ("AWQ/GPTQ MoE models need pip install 'sgl-kernel>=0.2.2,<0.3.18' built for your torch,"
           " or sglang >= 0.5.6")
    if on:
        return verdict(
            Level.WARN, detail + "; sglang-shims' patch sgl-kernel-fused-marlin-moe (on: "
            f"{why}) supplies a stand-in, so start-up works but AWQ/GPTQ MoE models cannot "
            "run", fix)
    return verdict(
        Level.FAIL, detail + f"; sglang-shims' patch sgl-kernel-fused-marlin-moe is off ({why})",
        f"turn the patch on (SGLANG_SHIMS_ENABLE=sgl-kernel-fused-marlin-moe); {fix}")


def _dist_renamed(facts: Facts) -> Finding | None:
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
    on, why = patch_on(facts, "sgl-kernel-dist-renamed")
    if on:
        return verdict(
            Level.WARN, detail + f"; sglang-shims' patch sgl-kernel-dist-renamed (on: {why}) "
            "redirects the check", f"keep sglang-shims active, or {install}")
    return verdict(
        Level.FAIL, detail + f"; the patch sgl-kernel-dist-renamed is off ({why})",
        f"SGLANG_SHIMS_ENABLE=sgl-kernel-dist-renamed, or {install}")


def _kernel_not_installed(facts: Facts) -> Finding | None:
    sglang = facts.version("sglang")
    if not version_in(sglang, ">=0.4.3") or facts.kernel() is not None:
        return None
    pins = [p for p in sglang_pins(facts.requires.get("sglang", []),
                                   ("sgl-kernel", "sglang-kernel")) if p.default]
    install = (f"pip install '{pins[0].dist}{pins[0].spec}'" if pins else
               "pip install sgl-kernel (sglang <= 0.5.9) or sglang-kernel (0.5.10+), the "
               "version your sglang pins")
    level = Level.FAIL if facts.torch_build == "cuda" or facts.caps else Level.WARN
    return verdict(
        level, f"sglang {sglang} needs sgl_kernel on CUDA (since 0.4.3), and neither "
        "sgl-kernel nor sglang-kernel is installed: No module named 'sgl_kernel'", install)


def _cuda_major_variant(facts: Facts) -> Finding | None:
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
    return verdict(
        Level.WARN, f"{dist} {version} is a CUDA {major} build ({how}) but torch "
        f"{facts.version('torch')} uses CUDA {facts.torch_cuda}: the kernel needs a second "
        f"CUDA runtime next to torch's and fails to import when libcudart.so.{major} is not "
        "installed",
        f"install the +{label} build of the same kernel: pip install '{dist}=="
        f"{public_version(version)}' --index-url {kf.VARIANT_INDEX.format(label=label)}")


def _green_ctx_driver(facts: Facts) -> Finding | None:
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
    return verdict(
        Level.FAIL, f"{kernel[0]} {kernel[1]}'s common_ops links the CUDA green-context API "
        f"({', '.join(kf.GREEN_CTX_NEEDED)}); this driver ({shown}) lacks "
        f"{', '.join(lacking)}: import fails with 'undefined symbol: {first}'",
        f"upgrade the NVIDIA driver to >= {kf.GREEN_CTX_MIN_DRIVER_BRANCH} ({need_text}), or "
        f"install sgl-kernel <= 0.2.5 or >= {kf.GREEN_CTX_FIXED} built for your torch")


def _cudart_preload(facts: Facts) -> Finding | None:
    kernel = facts.kernel()
    if (kernel is None or not version_in(kernel[1], ">=0.3.11,<0.3.18.post3")
            or facts.torch_build != "cuda" or facts.cuda_home_has_libdir is not False):
        return None
    unpatched = verdict(
        Level.FAIL, f"{kernel[0]} {kernel[1]} preloads libcudart from CUDA home "
        f"({facts.cuda_home}, from {facts.cuda_home_from}) and raises RuntimeError('Could "
        "not find CUDA lib directory.') at import when it has no lib/, no lib64/ and no "
        "libcudart.so.12 (fixed in sgl-kernel 0.3.18.post3, PR #13089)",
        "point CUDA_HOME at a folder with lib/libcudart.so.12 (e.g. site-packages/nvidia/"
        "cuda_runtime, or a CUDA 12 toolkit), or upgrade to sgl-kernel >= 0.3.18.post3 built "
        "for your torch")
    if facts.cuda_home_from in ("CUDA_HOME", "CUDA_PATH"):
        return unpatched  # the patch never changes a home the user set
    return unless_patched(
        facts, "sgl-kernel-cuda-runtime-preload", unpatched,
        "sets CUDA_HOME to pip's CUDA runtime folder (site-packages/nvidia/cuda_runtime, which "
        "has a lib/) before sgl_kernel runs; without that wheel the import still fails, and "
        "the patch says so")


RULES: tuple[Rule, ...] = (
    Rule("sgl-kernel-missing-fused-marlin-moe", "https://github.com/sgl-project/sglang/issues/8654",
         "", _fused_marlin_moe, patch="sgl-kernel-fused-marlin-moe"),
    # not tied to the patch's gates: it fires only where the data says names are missing
    Rule("sgl-kernel-hybrid-ops", "https://github.com/sgl-project/sglang/pull/20277",
         "the installed kernel lacks names the installed sglang imports (read from the wheels)",
         missing_names),
    Rule("sgl-kernel-dist-renamed", "https://github.com/sgl-project/sglang/pull/20440",
         "sgl-kernel not installed", _dist_renamed, patch="sgl-kernel-dist-renamed"),
    Rule("sgl-kernel-not-installed", "https://github.com/sgl-project/sglang/issues/3687",
         "sglang >=0.4.3 with neither kernel distribution", _kernel_not_installed),
    Rule("sgl-kernel-cuda-major-variant", upstream.CUDA_MAJOR_VARIANT,
         "kernel CUDA major (DT_NEEDED libcudart, label or default build) != torch's",
         _cuda_major_variant),
    Rule("sgl-kernel-green-ctx-driver", upstream.GREEN_CTX_DRIVER,
         f"sgl-kernel {kf.GREEN_CTX_FIRST}–{kf.GREEN_CTX_LAST} with a driver < CUDA 12.5",
         _green_ctx_driver),
    Rule("sgl-kernel-cudart-preload", upstream.CUDART_PRELOAD,
         "sgl-kernel >=0.3.11,<0.3.18.post3, CUDA torch, CUDA home without lib/ or lib64/",
         _cudart_preload),
)
