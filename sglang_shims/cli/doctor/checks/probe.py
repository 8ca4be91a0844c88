"""``import sgl_kernel`` in a child process, and why it failed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import kernel_facts as kf
from .. import upstream
from ..facts import Facts, run_tool
from ..finding import TRITON_FALLBACK, Finding, Level
from .abi import abi_remedy
from .libs import lib_remedy

PROBE_TIMEOUT = 60.0


@dataclass(frozen=True)
class ImportFailure:
    """Why ``import sgl_kernel`` failed, read from the child's error output."""

    kind: str
    """``torch-abi`` | ``driver-too-old`` | ``cuda-runtime`` | ``library-missing`` |
    ``cuda-lib-dir`` | ``no-kernel-image`` | ``not-installed`` | ``dependency-missing`` |
    ``unknown``."""
    summary: str
    symbol: str = ""
    demangled: str = ""
    library: str = ""


TORCH_SYMBOL = re.compile(r"^_ZN[KVRO]*(?:3c10|5torch|2at|6caffe2)")
TORCH_NAMESPACES = ("c10::", "torch::", "at::", "caffe2::")


def demangle(symbol: str) -> str:
    """``c++filt`` the symbol; the input unchanged if that is not possible."""
    if not symbol.startswith("_Z"):
        return symbol
    tool = shutil.which("c++filt")
    out = run_tool([tool, symbol], timeout=5) if tool else None
    return out.strip() if out and out.strip() else symbol


def classify_import_error(text: str) -> ImportFailure:
    """Classify the error output of a failed ``import sgl_kernel``."""
    symbol_match = re.search(r"undefined symbol: ([^\s'\",)]+)", text)
    if symbol_match:
        symbol = symbol_match.group(1)
        readable = demangle(symbol)
        if TORCH_SYMBOL.match(symbol) or readable.startswith(TORCH_NAMESPACES):
            abi = ""
            if "__cxx11" in readable or "[abi:cxx11]" in readable:
                abi = "; the name uses the C++11 std::string ABI"
            elif "std::string" in readable or "std::basic_string<" in readable:
                abi = "; the name uses the pre-C++11 std::string ABI (a much older torch)"
            return ImportFailure(
                "torch-abi",
                f"undefined symbol {readable} from torch: this is a torch ABI mismatch, not a "
                f"missing GPU arch (the kernel was built against another torch){abi}",
                symbol, readable)
        if re.fullmatch(r"cu[A-Z]\w*", symbol) and not symbol.startswith("cuda"):
            return ImportFailure(
                "driver-too-old",
                f"undefined symbol {symbol} is a CUDA driver API function: the NVIDIA driver is "
                f"older than the CUDA the kernel was built for ({upstream.GREEN_CTX_DRIVER})",
                symbol, symbol)
        if re.fullmatch(r"(cuda|nvrtc|cublas)[A-Z]\w*", symbol):
            return ImportFailure(
                "cuda-runtime",
                f"undefined symbol {symbol}: the CUDA runtime library loaded is older than the "
                "one the kernel was built with", symbol, symbol)
        return ImportFailure("unknown", f"undefined symbol {readable}", symbol, readable)
    lib_match = re.search(r"(lib[\w.+-]+?\.so(?:\.\d+)*): cannot open shared object file", text)
    if lib_match:
        lib = lib_match.group(1)
        cuda = re.match(r"lib(cudart|nvrtc|cublas|cublasLt|cufft|curand|cusparse|nvJitLink)\.",
                        lib)
        kind = "cuda-runtime" if cuda else "library-missing"
        why = (f" (CUDA runtime library missing: {upstream.CUDART_PRELOAD},"
               f" {upstream.NVRTC_MISSING})" if cuda else "")
        return ImportFailure(kind, f"{lib} cannot be found by the dynamic loader{why}",
                             library=lib)
    if "Could not find CUDA lib directory" in text:
        return ImportFailure("cuda-lib-dir", "sgl_kernel found no lib/ or lib64/ under CUDA "
                             "home (sgl-kernel 0.3.11-0.3.18.post2; "
                             f"{upstream.CUDART_PRELOAD})")
    if "no kernel image is available" in text:
        return ImportFailure("no-kernel-image", "no kernel image for this GPU's architecture")
    module = re.search(r"No module named '([\w.]+)'", text)
    if module and module.group(1).split(".")[0] == "sgl_kernel":
        return ImportFailure("not-installed", "sgl_kernel is not importable")
    if module:
        name = module.group(1).split(".")[0]
        return ImportFailure("dependency-missing", f"it imports {name}, which is not installed",
                             library=name)
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return ImportFailure("unknown", lines[-1][:300] if lines else "no error output")


def probe_import(where: Path | None = None, *, timeout: float = PROBE_TIMEOUT,
                 python: str | None = None) -> tuple[bool | None, str]:
    """Import ``sgl_kernel`` in a fresh interpreter: (True/False, or None on timeout; output).

    ``where`` is the folder holding ``sgl_kernel/``; it is put first on ``sys.path``
    so that the package read from disk is the one imported.  ``SGLANG_SHIMS=0``
    keeps our own patches out of the way: the question is whether the kernel loads.
    """
    lines = ["import sys"]
    if where is not None:
        lines.append(f"sys.path.insert(0, {str(where)!r})")
    lines.append("import sgl_kernel")
    env = dict(os.environ, SGLANG_SHIMS="0", PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run([python or sys.executable, "-c", "\n".join(lines)],
                              capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=str(where) if where else None, check=False)
    except subprocess.TimeoutExpired:
        return None, f"no answer within {timeout:.0f} s"
    return proc.returncode == 0, (proc.stderr or "") + (proc.stdout or "")


def check_import(facts: Facts, enabled: bool,
                 announce: Callable[[str], None] | None = None) -> list[Finding]:
    """Does ``import sgl_kernel`` work, and if not, why?

    ``announce`` is told before the child starts: it can take up to a minute.
    """
    if not enabled or facts.kernel_dir is None:
        return []
    if announce is not None:
        announce(f"checking: importing sgl_kernel in a child process (up to "
                 f"{PROBE_TIMEOUT:.0f} s; --no-probe skips)")
    start = time.monotonic()
    ok, output = probe_import(facts.kernel_dir.parent)
    took = time.monotonic() - start
    if ok:
        return [Finding("sgl-kernel-import", Level.OK,
                        f"import sgl_kernel succeeds in a fresh interpreter ({took:.1f} s)")]
    if ok is None:
        return [Finding("sgl-kernel-import", Level.WARN, f"import sgl_kernel gave {output}",
                        "run python -c 'import sgl_kernel' by hand to see where it hangs")]
    return [import_failure_finding(facts, classify_import_error(output))]


def import_failure_finding(facts: Facts, failure: ImportFailure) -> Finding:
    """The finding (and remedy) for a failed ``import sgl_kernel``."""
    kernel = facts.kernel()
    name = f"{kernel[0]} {kernel[1]}" if kernel else "sgl_kernel"
    detail = f"import sgl_kernel ({name}) fails: {failure.summary}"
    remedy = "report the error output to sglang-shims with `sglang-shims doctor`'s findings"
    if failure.kind == "torch-abi":
        builds = kf.kernel_builds(kernel[1]) if kernel else []
        torch_version = facts.version("torch")
        if kernel and builds and torch_version:
            remedy = abi_remedy(facts, kernel[0], kernel[1], builds[0].torch, torch_version)
        else:
            remedy = ("install the torch the kernel was built with, or the kernel built for your "
                      "torch")
    elif failure.kind == "driver-too-old":
        remedy = ("upgrade the NVIDIA driver (CUDA 12.4+ needs driver >= 550), or install a kernel "
                  f"whose common_ops does not link it (sgl-kernel <= 0.2.5 or >= "
                  f"{kf.GREEN_CTX_FIXED})")
    elif failure.kind == "cuda-runtime" and failure.library:
        remedy = lib_remedy([failure.library])
    elif failure.kind == "library-missing" and failure.library.startswith(kf.TORCH_LIB_PREFIXES):
        remedy = ("reinstall torch (its own libraries are missing): pip install "
                  "--force-reinstall torch")
    elif failure.kind == "library-missing":
        remedy = lib_remedy([failure.library])
    elif failure.kind == "dependency-missing":
        builds = kf.kernel_builds(kernel[1]) if kernel else []
        wanted = f"=={builds[0].torch}" if failure.library == "torch" and builds else ""
        remedy = f"pip install '{failure.library}{wanted}'"
    elif failure.kind == "cuda-lib-dir":
        remedy = ("set CUDA_HOME to a directory with lib64/libcudart.so.12 (a CUDA 12 toolkit, or "
                  "site-packages/nvidia/cuda_runtime), or upgrade to sgl-kernel >= 0.3.18.post3")
    elif failure.kind == "no-kernel-image":
        remedy = f"install a kernel built for this GPU, or {TRITON_FALLBACK}"
    elif failure.kind == "not-installed":
        remedy = "install the kernel your sglang pins (see sglang-pin)"
    return Finding("sgl-kernel-import", Level.FAIL, detail, remedy)
