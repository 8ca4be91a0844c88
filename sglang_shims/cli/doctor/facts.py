"""The facts every doctor check reads, gathered once and never raised from."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...engine.gates import Environment, detect_gpus
from ...patching.dists import KERNEL_DISTS
from ...patching.elf import (
    BinaryFormatError,
    LibraryInfo,
    elf_dynamic,
    elf_sections,
    inspect_library,
)
from . import kernel_facts as kf
from .deep_gemm_facts import DeepGemm, gather_deep_gemm
from .version_text import cuda_from_label, local_label, public_version, version_between


@dataclass
class Facts:
    """Everything the checks look at, gathered once; tests build one by hand.

    With a hermetic ``env`` nothing is read from this machine: the versions are the
    ones given, ``env.capabilities`` are the GPUs (none if not given), and every
    other field keeps the value the caller set.
    """

    env: Environment
    environ: Mapping[str, str] = field(default_factory=dict)
    requires: dict[str, list[str]] = field(default_factory=dict)
    """Canonical distribution -> its ``Requires-Dist`` lines (sglang, torch)."""
    requires_python: dict[str, str] = field(default_factory=dict)
    python: str = field(default_factory=platform.python_version)
    torch_cuda: str | None = None
    """``torch.version.cuda`` (``12.8``); None for a CPU or ROCm build, or unknown."""
    torch_build: str = ""
    """``cuda`` | ``rocm`` | ``cpu``; empty when it cannot be told."""
    torch_arch_list: list[str] | None = None
    torch_error: str = ""
    """Why ``import torch`` failed here, when it was tried and did."""
    torch_sees_gpu: bool | None = None
    torch_dir: Path | None = None
    torch_needed: frozenset[str] = frozenset()
    """Sonames that ``import torch`` loads (DT_NEEDED of its CUDA libraries)."""
    gpu_names: list[str] = field(default_factory=list)
    driver_version: str | None = None
    """The NVIDIA driver as ``nvidia-smi`` prints it: ``535.86.10``."""
    driver_cuda: int | None = None
    """``cuDriverGetVersion``: 12040 is CUDA 12.4."""
    nvcc: str | None = None
    nvcc_version: str | None = None
    cuda_home: str | None = None
    cuda_home_from: str = ""
    cuda_home_has_libdir: bool | None = None
    """What sgl-kernel 0.3.11-0.3.18.post2 demands of CUDA home: lib/, lib64/ or a
    libcudart.so.12 somewhere below it."""
    kernel_dir: Path | None = None
    kernel_file_version: str | None = None
    libraries: dict[str, LibraryInfo] = field(default_factory=dict)
    """``sm90`` / ``sm100`` / ``""`` (the flat layout) -> the common_ops found there."""
    library_errors: dict[str, str] = field(default_factory=dict)
    ldconfig: dict[str, str] = field(default_factory=dict)
    lib_dirs: list[Path] = field(default_factory=list)
    """Directories the dynamic loader searches (LD_LIBRARY_PATH, the defaults)."""
    pip_lib_dirs: list[Path] = field(default_factory=list)
    """``site-packages/nvidia/*/lib``: pip's CUDA libraries, not on the loader's path."""
    smi_problem: str = ""
    """Why ``nvidia-smi`` gave no answer (it hung, or failed): the GPUs are then unknown,
    not absent; empty when it answered or is not installed."""
    gpu_override_problem: str = ""
    """Why ``SGLANG_SHIMS_GPU_CAPABILITY`` could not be read; empty when it could."""
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(what, why) for each fact that could not be gathered."""
    deep_gemm: DeepGemm | None = None
    """The importable ``deep_gemm`` and what installed it; None when there is none."""

    @property
    def caps(self) -> list[tuple[int, int]]:
        return list(self.env.capabilities or [])

    def version(self, dist: str) -> str | None:
        return self.env.version(dist)

    def kernel(self) -> tuple[str, str] | None:
        """(distribution, version) of the installed kernel, or None.

        With both ``sgl-kernel`` and ``sglang-kernel`` installed, the one whose
        version ``sgl_kernel/version.py`` carries is the one on disk; without that file,
        the first of :data:`~sglang_shims.patching.KERNEL_DISTS`, as patches ask.
        """
        found = [(d, v) for d in KERNEL_DISTS if (v := self.version(d))]
        if len(found) > 1 and self.kernel_file_version:
            on_file = public_version(self.kernel_file_version)
            on_disk = [(d, v) for d, v in found if public_version(v) == on_file]
            if on_disk:
                return on_disk[0]
        return found[0] if found else None

    def kernel_cuda_major(self) -> tuple[int, str] | None:
        """(CUDA major the kernel was built for, how that is known)."""
        for info in self.libraries.values():
            for soname in info.needed:
                match = re.fullmatch(r"libcudart\.so\.(\d+)", soname)
                if match:
                    return int(match.group(1)), f"its common_ops links {soname}"
        kernel = self.kernel()
        if kernel is None:
            return None
        label = cuda_from_label(local_label(kernel[1]))
        if label:
            return int(label.split(".")[0]), f"local label +{local_label(kernel[1])}"
        for first, last, major in kf.DEFAULT_CUDA_MAJOR:
            if version_between(kernel[1], first, last):
                return major, f"the PyPI build of {kernel[1]} is a CUDA {major} build"
        return None


def _guard(facts: Facts, what: str, step: Callable[[], None]) -> None:
    try:
        step()
    except Exception as exc:
        facts.problems.append((what, f"{type(exc).__name__}: {exc}"))


def run_tool(cmd: list[str], timeout: float = 10.0) -> str | None:
    """stdout of a small helper program, or None if it is missing or fails."""
    return tool_output(cmd, timeout)[0]


def tool_output(cmd: list[str], timeout: float = 10.0) -> tuple[str | None, str]:
    """(stdout, "") of a small helper program, or (None, why it gave none).

    Why not ``subprocess.run``: on a timeout it kills the child and then waits for it
    and for its pipes, so a tool stuck in the driver, or one whose own child holds the
    pipe open, would hang doctor anyway.  Here the child starts a session of its own;
    on a timeout the whole session is killed and waited for one more second at most.
    """
    shown = " ".join([Path(cmd[0]).name, *cmd[1:]])
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace",
                                start_new_session=True)
    except OSError as exc:
        return None, f"`{shown}` could not be started ({exc.strerror or exc})"
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_session(proc)
        return None, f"`{shown}` timed out: no answer within {timeout:g} s"
    if proc.returncode != 0:
        last = (err.strip().splitlines() or out.strip().splitlines() or [""])[-1][:200]
        said = f": {last}" if last else ""
        return None, f"`{shown}` failed (exit status {proc.returncode}){said}"
    return out, ""


def _kill_session(proc: subprocess.Popen[str]) -> None:
    """Kill a timed-out tool and everything it started; never wait long for it."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    try:
        proc.communicate(timeout=1)
    except subprocess.TimeoutExpired:  # stuck in the kernel: left to the OS
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def _package_dir(name: str) -> Path | None:
    """Where a top-level package lives, found without importing it."""
    import importlib.util

    module = sys.modules.get(name)
    if module is not None and getattr(module, "__file__", None):
        return Path(str(module.__file__)).parent
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def gather(env: Environment | None = None, *, use_torch: bool = True) -> Facts:
    """Collect the facts; a part that fails is recorded in ``problems``, never raised."""
    env = env if env is not None else Environment()
    facts = Facts(env=env)
    if env.hermetic:
        if env.capabilities is None:
            env.capabilities, env.gpu_source = [], "none given to a hermetic environment"
        facts.torch_cuda = cuda_from_label(local_label(env.version("torch")))
        facts.torch_build = "cuda" if facts.torch_cuda else ""
        return facts
    facts.environ = dict(os.environ)
    _guard(facts, "package metadata", lambda: _gather_metadata(facts))
    _guard(facts, "torch build", lambda: _gather_torch(facts))
    _guard(facts, "GPUs", lambda: _gather_gpus(facts, use_torch))
    _guard(facts, "driver version", lambda: _gather_driver(facts))
    _guard(facts, "CUDA toolkit", lambda: _gather_cuda_home(facts))
    _guard(facts, "library search path", lambda: _gather_lib_dirs(facts))
    _guard(facts, "kernel files", lambda: _gather_kernel(facts))
    _guard(facts, "deep_gemm files", lambda: _gather_deep_gemm(facts))
    return facts


def _gather_metadata(facts: Facts) -> None:
    from importlib import metadata

    for dist in ("sglang", "torch"):
        if facts.version(dist):
            try:
                facts.requires[dist] = list(metadata.requires(dist) or [])
                if dist == "sglang":
                    wanted = metadata.metadata(dist).get_all("Requires-Python") or [""]
                    facts.requires_python[dist] = str(wanted[0])
            except metadata.PackageNotFoundError:
                pass


def _gather_torch(facts: Facts) -> None:
    """torch's CUDA version, from the live module or from ``torch/version.py``."""
    version = facts.version("torch")
    if not version:
        return
    facts.torch_dir = _package_dir("torch")
    torch = sys.modules.get("torch")
    live = getattr(torch, "version", None)
    if live is not None:
        cuda, hip = getattr(live, "cuda", None), getattr(live, "hip", None)
    elif facts.torch_dir and (facts.torch_dir / "version.py").is_file():
        text = (facts.torch_dir / "version.py").read_text(encoding="utf-8", errors="replace")
        cuda, hip = (_assigned(text, name) for name in ("cuda", "hip"))
    else:
        cuda = cuda_from_label(local_label(version))
        hip = "?" if (local_label(version) or "").startswith("rocm") else None
    facts.torch_cuda = str(cuda) if cuda else None
    facts.torch_build = "cuda" if cuda else "rocm" if hip else "cpu"
    if facts.torch_dir:
        lib = facts.torch_dir / "lib"
        needed: set[str] = set()
        for name in ("libtorch_global_deps.so", "libtorch_cuda.so", "libc10_cuda.so"):
            if (lib / name).is_file():
                with (lib / name).open("rb") as f:
                    needed.update(elf_dynamic(f, elf_sections(f))[0])
        facts.torch_needed = frozenset(needed)


def _assigned(source: str, name: str) -> str | None:
    """The string assigned to ``name`` at the top of a module, e.g. ``cuda = '12.8'``."""
    match = re.search(rf"^{name}\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)['\"]", source, re.MULTILINE)
    return match.group(1) if match else None


SMI_TIMEOUT = 10.0
"""Seconds ``nvidia-smi`` may take: it answers in well under one on a sound driver."""


def _gather_gpus(facts: Facts, use_torch: bool) -> None:
    """GPU capabilities: given, ``SGLANG_SHIMS_GPU_CAPABILITY``, torch, then nvidia-smi."""
    env = facts.env
    smi = shutil.which("nvidia-smi")
    rows: list[list[str]] = []
    if smi:
        out, facts.smi_problem = tool_output(
            [smi, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
            SMI_TIMEOUT)
        rows = [[c.strip() for c in line.split(",")] for line in (out or "").splitlines()]
        rows = [r for r in rows if len(r) == 3]
        if rows:
            facts.driver_version = rows[0][2]
    if env.capabilities is not None:
        return
    override = os.environ.get("SGLANG_SHIMS_GPU_CAPABILITY", "").strip()
    if override:
        try:
            env.capabilities = capability_override(override)
            env.gpu_source = "SGLANG_SHIMS_GPU_CAPABILITY"
            return
        except ValueError as exc:  # said by check_gpus; detect the real GPUs meanwhile
            facts.gpu_override_problem = str(exc)
    torch_here = "torch" in sys.modules or (use_torch and facts.torch_dir is not None)
    if torch_here and facts.torch_build != "cpu":
        try:
            if _gpus_from_torch(facts):
                return
        except Exception as exc:  # a broken torch must not hide the GPUs
            facts.torch_error = f"{type(exc).__name__}: {exc}"
    caps: list[tuple[int, int]] = []
    for name, cap, _driver in rows:
        major, _, minor = cap.partition(".")
        if major.isdigit() and minor.isdigit():
            caps.append((int(major), int(minor)))
            facts.gpu_names.append(name)
    if caps or smi:
        env.capabilities = caps
        env.gpu_source = ("nvidia-smi" if caps else "nvidia-smi gave no answer"
                          if facts.smi_problem else "nvidia-smi lists none")
        return
    looked = "; ".join([*(["torch sees none"] if facts.torch_sees_gpu is False else []),
                        "no nvidia-smi on PATH"])
    if facts.gpu_override_problem:
        env.capabilities, env.gpu_source = [], looked
        return
    env.capabilities, env.gpu_source = detect_gpus()
    if not env.capabilities and env.gpu_source == "none found":
        env.gpu_source = looked


CAPABILITY_FORM = "MAJOR.MINOR compute capabilities, comma-separated: 12.0 or 9.0,12.0"


def capability_override(text: str) -> list[tuple[int, int]]:
    """``SGLANG_SHIMS_GPU_CAPABILITY`` read strictly: a bad entry names the allowed form."""
    caps = []
    for part in text.replace(",", " ").split():
        match = re.fullmatch(r"(\d+)(?:\.(\d+))?", part)
        if match is None:
            raise ValueError(f"SGLANG_SHIMS_GPU_CAPABILITY={text!r}: {part!r} is not a compute "
                             f"capability; the allowed form is {CAPABILITY_FORM}")
        caps.append((int(match.group(1)), int(match.group(2) or 0)))
    return caps


def _gpus_from_torch(facts: Facts) -> bool:
    """Ask torch for the visible GPUs (initialises CUDA); False if it sees none."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "sm_120 is not compatible" is ours to say
        import torch

        facts.torch_sees_gpu = bool(torch.cuda.is_available())
        if not facts.torch_sees_gpu:
            return False
        count = torch.cuda.device_count()
        found = [tuple(torch.cuda.get_device_capability(i)) for i in range(count)]
        facts.env.capabilities = [(int(c[0]), int(c[1])) for c in found]
        facts.gpu_names = [str(torch.cuda.get_device_name(i)) for i in range(count)]
        facts.torch_arch_list = [str(a) for a in torch.cuda.get_arch_list()]
        facts.env.gpu_source = "torch.cuda"
        return True


def _gather_driver(facts: Facts) -> None:
    """``cuDriverGetVersion`` from libcuda: no GPU and no CUDA context needed."""
    import ctypes

    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return
    value = ctypes.c_int(0)
    if libcuda.cuDriverGetVersion(ctypes.byref(value)) == 0 and value.value > 0:
        facts.driver_cuda = value.value


def _gather_cuda_home(facts: Facts) -> None:
    """CUDA home as sgl_kernel finds it: CUDA_HOME, CUDA_PATH, ``which nvcc``, /usr/local/cuda."""
    environ = facts.environ
    nvcc = shutil.which("nvcc")
    home = environ.get("CUDA_HOME") or environ.get("CUDA_PATH")
    if home:
        facts.cuda_home_from = "CUDA_HOME" if environ.get("CUDA_HOME") else "CUDA_PATH"
    elif nvcc:
        home, facts.cuda_home_from = str(Path(nvcc).parent.parent), f"nvcc at {nvcc}"
    else:
        home, facts.cuda_home_from = "/usr/local/cuda", "the default"
    facts.cuda_home = home
    root = Path(home)
    facts.cuda_home_has_libdir = (root / "lib").is_dir() or (root / "lib64").is_dir() or any(
        _bounded_find(root, "libcudart.so.12"))
    candidate = root / "bin" / "nvcc"
    facts.nvcc = str(candidate) if candidate.is_file() else nvcc
    if facts.nvcc:
        match = re.search(r"release (\d+\.\d+)", run_tool([facts.nvcc, "--version"]) or "")
        facts.nvcc_version = match.group(1) if match else None


def _bounded_find(root: Path, name: str, limit: int = 20000) -> Iterable[Path]:
    seen = 0
    for folder, _dirs, files in os.walk(root):
        seen += len(files) + 1
        if name in files:
            yield Path(folder) / name
        if seen > limit:
            return


def _gather_lib_dirs(facts: Facts) -> None:
    """The loader's search path, its cache (``ldconfig -p``) and pip's nvidia dirs."""
    dirs = [p for p in facts.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    machine = platform.machine()
    dirs += [f"/lib/{machine}-linux-gnu", f"/usr/lib/{machine}-linux-gnu", "/lib64",
             "/usr/lib64", "/lib", "/usr/lib"]
    facts.lib_dirs = [Path(d) for d in dirs]
    ldconfig = shutil.which("ldconfig") or ("/sbin/ldconfig" if Path("/sbin/ldconfig").exists()
                                            else None)
    if ldconfig:
        for line in (run_tool([ldconfig, "-p"], timeout=5) or "").splitlines():
            match = re.match(r"\s+(\S+) \(([^)]*)\) => (\S+)", line)
            if match and (machine != "x86_64" or "x86-64" in match.group(2)):
                facts.ldconfig.setdefault(match.group(1), match.group(3))
    import site

    roots = [*site.getsitepackages(), site.getusersitepackages(), *sys.path]
    seen: set[Path] = set()
    for root in roots:
        nvidia = Path(root) / "nvidia"
        if nvidia in seen or not nvidia.is_dir():
            continue
        seen.add(nvidia)
        facts.pip_lib_dirs.extend(sorted(p for p in nvidia.glob("*/lib") if p.is_dir()))


def _gather_kernel(facts: Facts) -> None:
    """Locate ``sgl_kernel/`` without importing it and read its common_ops libraries."""
    folder = _package_dir("sgl_kernel")
    if folder is None:
        folder = _kernel_dir_from_record(facts)
    if folder is None or not folder.is_dir():
        return
    facts.kernel_dir = folder
    if (folder / "version.py").is_file():
        text = (folder / "version.py").read_text(encoding="utf-8", errors="replace")
        facts.kernel_file_version = _assigned(text, "__version__")
    for key, where in (("sm90", folder / "sm90"), ("sm100", folder / "sm100"), ("", folder)):
        found = sorted(where.glob("common_ops*.so")) if where.is_dir() else []
        if found:
            try:
                facts.libraries[key] = inspect_library(found[0])
            except (OSError, BinaryFormatError) as exc:
                facts.library_errors[key] = f"{found[0]}: {exc}"


def _gather_deep_gemm(facts: Facts) -> None:
    """Where ``deep_gemm`` comes from: sglang calls it, and three kinds of install write it."""
    facts.deep_gemm = gather_deep_gemm()


def _kernel_dir_from_record(facts: Facts) -> Path | None:
    from importlib import metadata

    for dist in KERNEL_DISTS:
        if not facts.version(dist):
            continue
        try:
            files = metadata.files(dist) or []
        except metadata.PackageNotFoundError:
            continue
        for entry in files:
            if str(entry).replace("\\", "/") == "sgl_kernel/__init__.py":
                return Path(str(entry.locate())).parent
    return None
