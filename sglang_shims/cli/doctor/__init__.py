"""``sglang-shims doctor``: what is installed, what will break, and what to do about it.

sglang fails at start-up, or worse at the first kernel launch, when its pieces drift
apart: a kernel built for another torch (undefined C++ symbols), a kernel with no
image for the GPU, a CUDA runtime library that is not on the loader's path, a
transformers that silently changed a config field.  Each of these can be told in
advance from versions, from the ELF headers of the kernel libraries and from one
``import sgl_kernel`` in a child process -- without a GPU and without importing the
kernel here, so a broken install cannot take the diagnosis down with it.

:func:`diagnose` never raises: every check runs on its own, and a check that fails
becomes a ``warn`` finding that says so.  Facts about the machine are gathered once
into :class:`Facts`; the known-bad combinations (:data:`RULES`) are pure functions of
it, so each can be tested with a hermetic :class:`~sglang_shims.engine.gates.Environment`.
"""

from __future__ import annotations

import io
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ...engine.gates import Environment, canonical, detect_gpus, satisfies
from . import kernel_facts as kf

if TYPE_CHECKING:
    from packaging.requirements import Requirement

PROJECT_URL = "https://github.com/sglang-shims/sglang-shims"
TRITON_FALLBACK = "SGLANG_SHIMS_ENABLE=sgl-kernel-triton-fallback"
PROBE_TIMEOUT = 60.0
ABI_URL = "https://github.com/sgl-project/sglang/issues/5247"


@dataclass(frozen=True)
class Finding:
    check: str
    """Short id: ``torch``, ``sgl-kernel-abi``, ``sgl-kernel-arch``, a rule id, ..."""
    level: str
    """``ok`` | ``info`` | ``warn`` | ``fail``."""
    detail: str
    """What was found, with versions."""
    remedy: str = ""
    """What to do, concretely (a pip command, an env var); empty when nothing is."""


# --------------------------------------------------------------------------- versions


def _parse(text: str | None) -> tuple[int, ...] | None:
    """The release numbers of a PEP 440 version (``2.9.1+cu130`` -> (2, 9, 1))."""
    if not text:
        return None
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text).release
    except InvalidVersion:
        return None


def _public(text: str) -> str:
    """The version without its local label: ``0.6.16+cu130`` -> ``0.6.16``."""
    return text.split("+", 1)[0]


def _label(text: str | None) -> str | None:
    return text.split("+", 1)[1].lower() if text and "+" in text else None


def _minor(text: str | None) -> tuple[int, int] | None:
    release = _parse(text)
    if release is None:
        return None
    return release[0], release[1] if len(release) > 1 else 0


def _in(text: str | None, spec: str) -> bool:
    """Is an installed version inside ``spec``?  False when absent or unparseable."""
    return bool(text) and satisfies(str(text), spec)[0]


def _between(text: str | None, first: str, last: str) -> bool:
    return _in(text, f">={first},<={last}") if text else False


def _sm(cap: tuple[int, int]) -> str:
    return f"sm_{cap[0]}{cap[1]}"


def _cuda_from_label(label: str | None) -> str | None:
    """``cu130`` -> ``13.0``, ``cu128`` -> ``12.8``; None for anything else."""
    match = re.fullmatch(r"cu(\d+)(\d)", label or "")
    return f"{match.group(1)}.{match.group(2)}" if match else None


# ------------------------------------------------------------------- ELF and fatbin


class BinaryFormatError(ValueError):
    """A file that is not the ELF or fatbin we can read; the message says where."""


ELF_MAGIC = b"\x7fELF"
SHT_DYNAMIC = 6
DT_NEEDED, DT_RPATH, DT_RUNPATH = 1, 15, 29
FATBIN_MAGIC = 0xBA55ED50
FATBIN_KIND_PTX, FATBIN_KIND_ELF = 1, 2
# Entry flags, read from nvcc 13.0 output (sm_80 / sm_90a / sm_100f / PTX, with and
# without compression) and from the published sgl-kernel 0.3.18 common_ops.
FLAG_ARCH_SPECIFIC = 0x100000  # sm_90a, sm_100a, sm_120a: one compute capability only
FLAG_FAMILY = 0x200000  # sm_100f: the family (10.x)
FLAG_COMPRESSED = 0x2000 | 0x8000  # LZ4 (older nvcc) | zstd (CUDA >= 12.8 --compress-mode)
MAX_SECTIONS = 1 << 16
MAX_ENTRIES = 1 << 20


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    offset: int
    size: int
    link: int


def _read(f: BinaryIO, offset: int, size: int) -> bytes:
    f.seek(offset)
    data = f.read(size)
    if len(data) != size:
        raise BinaryFormatError(f"truncated: wanted {size} bytes at offset {offset:#x}")
    return data


def _cstring(f: BinaryIO, offset: int, limit: int = 4096) -> str:
    f.seek(offset)
    raw = f.read(limit)
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def elf_sections(f: BinaryIO) -> list[Section]:
    """The section headers of a 64-bit little-endian ELF file, with names.

    Only headers are read (a few KB), never the sections themselves: a kernel
    library is 300-800 MB.  Extended numbering (``e_shnum == 0``) is followed.
    """
    ident = _read(f, 0, 64)
    if ident[:4] != ELF_MAGIC:
        raise BinaryFormatError("not an ELF file")
    if ident[4] != 2 or ident[5] != 1:
        raise BinaryFormatError("not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", ident, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ident, 0x3A)
    if shoff == 0:
        return []
    if shentsize < 64:
        raise BinaryFormatError(f"section header size {shentsize} < 64")

    def header(index: int) -> tuple[int, ...]:
        raw = _read(f, shoff + index * shentsize, 64)
        return struct.unpack_from("<IIQQQQIIQQ", raw)

    first = header(0)
    if shnum == 0:
        shnum = first[5]
    if shstrndx == 0xFFFF:
        shstrndx = first[6]
    if not 0 < shnum <= MAX_SECTIONS or shstrndx >= shnum:
        raise BinaryFormatError(f"implausible section count {shnum} / name index {shstrndx}")
    raw = _read(f, shoff, shnum * shentsize)
    heads = [struct.unpack_from("<IIQQQQIIQQ", raw, i * shentsize) for i in range(shnum)]
    names_at = heads[shstrndx][4]
    return [Section(_cstring(f, names_at + h[0], 256), h[1], h[4], h[5], h[6]) for h in heads]


def elf_dynamic(f: BinaryIO, sections: list[Section]) -> tuple[list[str], list[str]]:
    """(DT_NEEDED sonames, DT_RUNPATH/DT_RPATH entries) from the dynamic section."""
    needed: list[str] = []
    search: list[str] = []
    for section in sections:
        if section.type != SHT_DYNAMIC or not 0 <= section.link < len(sections):
            continue
        strtab = sections[section.link].offset
        raw = _read(f, section.offset, section.size - section.size % 16)
        for tag, value in struct.iter_unpack("<qQ", raw):
            if tag == 0:
                break
            if tag == DT_NEEDED:
                needed.append(_cstring(f, strtab + value))
            elif tag in (DT_RPATH, DT_RUNPATH):
                search.extend(p for p in _cstring(f, strtab + value).split(":") if p)
    return needed, search


@dataclass(frozen=True)
class FatbinEntry:
    """One image in a CUDA fatbin: SASS (a cubin) or PTX, for one architecture."""

    kind: int
    arch: int
    """``major * 10 + minor``: 80, 90, 100, 120, 121."""
    flags: int = 0

    @property
    def is_sass(self) -> bool:
        return self.kind == FATBIN_KIND_ELF

    @property
    def is_ptx(self) -> bool:
        return self.kind == FATBIN_KIND_PTX

    @property
    def variant(self) -> str:
        if self.flags & FLAG_ARCH_SPECIFIC:
            return "a"
        return "f" if self.flags & FLAG_FAMILY else ""

    @property
    def compressed(self) -> bool:
        return bool(self.flags & FLAG_COMPRESSED)

    @property
    def name(self) -> str:
        prefix = "sm" if self.is_sass else "compute" if self.is_ptx else f"kind{self.kind}"
        return f"{prefix}_{self.arch}{self.variant}"

    def runs_on(self, cap: tuple[int, int]) -> bool:
        """Can a GPU of compute capability ``cap`` run this image?

        SASS runs within its major at an equal or higher minor (sm_80 on 8.6);
        an ``a`` target only on its exact capability (sm_90a on 9.0 only); an ``f``
        target on its family (sm_100f on 10.x).  PTX is compiled by the driver for
        any later GPU, except ``a``/``f`` PTX which follows the same rules as SASS.
        """
        major, minor = divmod(self.arch, 10)
        if self.variant == "a":
            return (major, minor) == cap
        if self.is_sass or self.variant == "f":
            return major == cap[0] and minor <= cap[1]
        return self.is_ptx and (major, minor) <= cap


def _arch_key(name: str) -> tuple[int, str]:
    match = re.search(r"_(\d+)([a-z]?)$", name)
    return (int(match.group(1)), match.group(2)) if match else (0, name)


def arch_names(entries: Iterable[FatbinEntry], *, ptx: bool = False) -> list[str]:
    """Distinct SASS (or PTX) targets, in architecture order: ``sm_80, sm_90, sm_90a``."""
    names = {e.name for e in entries if (e.is_ptx if ptx else e.is_sass)}
    return sorted(names, key=_arch_key)


def _fatbin_at(f: BinaryIO, base: int, size: int) -> list[FatbinEntry]:
    """Walk the fatbin containers in ``[base, base + size)``, reading headers only."""
    entries: list[FatbinEntry] = []
    offset = 0
    while offset + 16 <= size:
        magic, _version, header_size, fat_size = struct.unpack("<IHHQ", _read(f, base + offset, 16))
        if magic != FATBIN_MAGIC:
            # Containers may be separated by alignment padding: zeros, nothing else.
            window = _read(f, base + offset, min(64, size - offset))
            skip = len(window) - len(window.lstrip(b"\0"))
            if skip == 0:
                raise BinaryFormatError(f"no fatbin header at offset {offset:#x}")
            offset += skip
            continue
        end = offset + header_size + fat_size
        if header_size < 16 or end > size:
            raise BinaryFormatError(f"fatbin container at {offset:#x} overruns its section")
        at = offset + header_size
        while at + 16 <= end:
            kind, _ver, entry_size, payload = struct.unpack("<HHIQ", _read(f, base + at, 16))
            if entry_size < 48 or at + entry_size + payload > end:
                raise BinaryFormatError(f"fatbin entry at {at:#x} has a bad size")
            head = _read(f, base + at, 48)
            arch = struct.unpack_from("<I", head, 28)[0]
            flags = struct.unpack_from("<Q", head, 40)[0]
            entries.append(FatbinEntry(kind, arch, flags))
            if len(entries) > MAX_ENTRIES:
                raise BinaryFormatError("more fatbin entries than any real library has")
            at += entry_size + payload
        offset = end
    return entries


def parse_fatbin(data: bytes) -> list[FatbinEntry]:
    """Entries of a fatbin blob (one or more containers, as in ``.nv_fatbin``)."""
    return _fatbin_at(io.BytesIO(data), 0, len(data))


@dataclass(frozen=True)
class LibraryInfo:
    """What a kernel library holds and needs, read from its ELF headers."""

    path: Path
    entries: tuple[FatbinEntry, ...]
    needed: tuple[str, ...]
    search_path: tuple[str, ...]
    """DT_RUNPATH / DT_RPATH entries with ``$ORIGIN`` expanded."""

    @property
    def sass(self) -> list[str]:
        return arch_names(self.entries)

    @property
    def ptx(self) -> list[str]:
        return arch_names(self.entries, ptx=True)

    def runs_on(self, cap: tuple[int, int]) -> list[FatbinEntry]:
        return [e for e in self.entries if e.runs_on(cap)]


def inspect_library(path: Path) -> LibraryInfo:
    """Read the fatbin entries and the dynamic section of one shared object."""
    with path.open("rb") as f:
        sections = elf_sections(f)
        entries: list[FatbinEntry] = []
        for section in sections:
            if section.name in (".nv_fatbin", "__nv_relfatbin") and section.size:
                entries.extend(_fatbin_at(f, section.offset, section.size))
        needed, search = elf_dynamic(f, sections)
    origin = str(path.parent)
    search = [s.replace("$ORIGIN", origin).replace("${ORIGIN}", origin) for s in search]
    return LibraryInfo(path, tuple(entries), tuple(needed), tuple(search))


# --------------------------------------------------------------------------- facts


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
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(what, why) for each fact that could not be gathered."""

    @property
    def caps(self) -> list[tuple[int, int]]:
        return list(self.env.capabilities or [])

    def version(self, dist: str) -> str | None:
        return self.env.version(dist)

    def kernel(self) -> tuple[str, str] | None:
        """(distribution, version) of the installed kernel, or None.

        With both ``sgl-kernel`` and ``sglang-kernel`` installed, the one whose
        version ``sgl_kernel/version.py`` carries is the one on disk.
        """
        found = [(d, v) for d in ("sgl-kernel", "sglang-kernel") if (v := self.version(d))]
        if len(found) > 1 and self.kernel_file_version:
            on_disk = [(d, v) for d, v in found if _public(v) == _public(self.kernel_file_version)]
            if on_disk:
                return on_disk[0]
        return found[-1] if found else None

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
        label = _cuda_from_label(_label(kernel[1]))
        if label:
            return int(label.split(".")[0]), f"local label +{_label(kernel[1])}"
        for first, last, major in kf.DEFAULT_CUDA_MAJOR:
            if _between(kernel[1], first, last):
                return major, f"the PyPI build of {kernel[1]} is a CUDA {major} build"
        return None


def _guard(facts: Facts, what: str, step: Callable[[], None]) -> None:
    try:
        step()
    except Exception as exc:
        facts.problems.append((what, f"{type(exc).__name__}: {exc}"))


def _run(cmd: list[str], timeout: float = 10.0) -> str | None:
    """stdout of a small helper program, or None if it is missing or fails."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


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
            env.capabilities, env.gpu_source = [], "not given (hermetic environment)"
        facts.torch_cuda = _cuda_from_label(_label(env.version("torch")))
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
        cuda = _cuda_from_label(_label(version))
        hip = "?" if (_label(version) or "").startswith("rocm") else None
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


def _gather_gpus(facts: Facts, use_torch: bool) -> None:
    """GPU capabilities: given, ``SGLANG_SHIMS_GPU_CAPABILITY``, torch, then nvidia-smi."""
    env = facts.env
    smi = shutil.which("nvidia-smi")
    rows: list[list[str]] = []
    if smi:
        out = _run([smi, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"])
        rows = [[c.strip() for c in line.split(",")] for line in (out or "").splitlines()]
        rows = [r for r in rows if len(r) == 3]
        if rows:
            facts.driver_version = rows[0][2]
    if env.capabilities is not None:
        return
    if os.environ.get("SGLANG_SHIMS_GPU_CAPABILITY", "").strip():
        env.capabilities, env.gpu_source = detect_gpus()
        return
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
        env.capabilities, env.gpu_source = caps, "nvidia-smi" if caps else "none (nvidia-smi)"
        return
    env.capabilities, env.gpu_source = detect_gpus()


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
        match = re.search(r"release (\d+\.\d+)", _run([facts.nvcc, "--version"]) or "")
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
        for line in (_run([ldconfig, "-p"], timeout=5) or "").splitlines():
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


def _kernel_dir_from_record(facts: Facts) -> Path | None:
    from importlib import metadata

    for dist in ("sgl-kernel", "sglang-kernel"):
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


# --------------------------------------------------------------------------- checks


def _check_versions(facts: Facts) -> list[Finding]:
    """Check 1: what is installed, with a word on the combinations that matter."""
    out: list[Finding] = []
    python_detail = f"Python {facts.python} ({sys.executable})"
    wanted = facts.requires_python.get("sglang", "")
    if wanted and not satisfies(facts.python, wanted)[0]:
        out.append(Finding("python", "fail",
                           f"{python_detail}; sglang {facts.version('sglang')} requires "
                           f"Python {wanted}", f"use a Python that matches {wanted}"))
    else:
        out.append(Finding("python", "ok", python_detail))
    sglang = facts.version("sglang")
    out.append(Finding("sglang", "ok", f"sglang {sglang}") if sglang
               else Finding("sglang", "info", "sglang is not installed"))
    out.append(_kernel_finding(facts))
    out.append(_torch_finding(facts))
    for dist in ("triton", "transformers"):
        version = facts.version(dist)
        out.append(Finding(dist, "ok", f"{dist} {version}") if version
                   else Finding(dist, "info", f"{dist} is not installed"))
    flashinfer = [(d, v) for d in ("flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache")
                  if (v := facts.version(d))]
    out.append(Finding("flashinfer", "ok", ", ".join(f"{d} {v}" for d, v in flashinfer))
               if flashinfer else
               Finding("flashinfer", "info", "flashinfer-python is not installed"))
    return out


def _kernel_finding(facts: Facts) -> Finding:
    old, new = facts.version("sgl-kernel"), facts.version("sglang-kernel")
    where = f" (files in {facts.kernel_dir})" if facts.kernel_dir else ""
    if old and new:
        disk = (f"; sgl_kernel/version.py says {facts.kernel_file_version}, so those files are"
                " the ones on disk") if facts.kernel_file_version else ""
        return Finding(
            "sgl-kernel", "warn",
            f"both sgl-kernel {old} and sglang-kernel {new} are installed: they install the "
            f"same sgl_kernel/ tree and whichever was installed last wins{disk}",
            "keep one: pip uninstall -y sgl-kernel sglang-kernel, then install the one your "
            "sglang pins (sgl-kernel up to sglang 0.5.9, sglang-kernel from 0.5.10)")
    if old or new:
        dist = "sgl-kernel" if old else "sglang-kernel"
        return Finding("sgl-kernel", "ok", f"{dist} {old or new}{where}")
    return Finding("sgl-kernel", "info", "no kernel distribution (sgl-kernel or sglang-kernel) "
                   "is installed")


def _torch_finding(facts: Facts) -> Finding:
    version = facts.version("torch")
    if not version:
        return Finding("torch", "info", "torch is not installed")
    build = {"cuda": f"CUDA {facts.torch_cuda}", "rocm": "ROCm build",
             "cpu": "CPU-only build"}.get(facts.torch_build, "build not determined")
    if facts.torch_error:
        return Finding("torch", "fail", f"torch {version} ({build}) fails to import: "
                       f"{facts.torch_error}", f"reinstall it: pip install --force-reinstall "
                       f"'torch=={_public(version)}'")
    torch_major = (_minor(facts.torch_cuda) or (0, 0))[0]
    driver_major = (facts.driver_cuda or 0) // 1000
    if facts.torch_build == "cuda" and facts.driver_cuda and driver_major < torch_major:
        driver = f"{driver_major}.{facts.driver_cuda % 1000 // 10}"
        return Finding(
            "torch", "fail",
            f"torch {version} is a CUDA {facts.torch_cuda} build; the NVIDIA driver "
            f"({facts.driver_version or '?'}) supports CUDA {driver} only, so torch cannot use "
            "the GPU",
            f"upgrade the driver to one for CUDA {torch_major}, or install a torch built for "
            f"CUDA {driver_major}: pip install 'torch=={_public(version)}' --index-url "
            f"https://download.pytorch.org/whl/cu{driver_major}8")
    if facts.torch_sees_gpu is False and facts.caps:
        return Finding("torch", "warn", f"torch {version} ({build}): torch.cuda.is_available() is "
                       f"False, but {facts.env.gpu_source} lists {len(facts.caps)} GPU(s)",
                       "check CUDA_VISIBLE_DEVICES and that the driver matches torch's CUDA")
    if facts.torch_build == "cpu" and facts.caps:
        return Finding("torch", "fail", f"torch {version} is a CPU-only build, and this machine "
                       "has NVIDIA GPUs", "install a CUDA build: pip install torch==" +
                       _public(version) + " --index-url https://download.pytorch.org/whl/cu128")
    return Finding("torch", "ok", f"torch {version} ({build})")


def _check_gpus(facts: Facts) -> list[Finding]:
    """Check 2: GPUs, compute capabilities, driver; mixed architectures warn."""
    caps = facts.caps
    driver = ""
    if facts.driver_version or facts.driver_cuda:
        cuda = (f", CUDA {facts.driver_cuda // 1000}.{facts.driver_cuda % 1000 // 10}"
                if facts.driver_cuda else "")
        driver = f"; driver {facts.driver_version or '?'}{cuda}"
    if not caps:
        return [Finding("gpu", "info", f"no GPU found ({facts.env.gpu_source or 'none'}){driver}")]
    names = facts.gpu_names if len(facts.gpu_names) == len(caps) else [""] * len(caps)
    shown = ", ".join(f"GPU{i} {(n + ' ') if n else ''}{_sm(c)} (cc {c[0]}.{c[1]})"
                      for i, (n, c) in enumerate(zip(names, caps, strict=True)))
    detail = f"{shown} [{facts.env.gpu_source}]{driver}"
    if len(set(caps)) > 1:
        return [Finding(
            "gpu", "warn",
            f"{detail}: mixed architectures. sgl_kernel picks its library and FlashInfer its "
            "JIT targets once per process, so one server spanning these GPUs can meet "
            "'no kernel image' on some of them (breakage #12 flashinfer-arch-list-env)",
            "run one server per architecture (CUDA_VISIBLE_DEVICES=<GPUs of one kind>), and "
            "set FLASHINFER_CUDA_ARCH_LIST to every architecture in use")]
    return [Finding("gpu", "ok", detail)]


def _kernel_builds(version: str) -> list[kf.KernelBuild]:
    label = _label(version)
    hits = [b for b in kf.KERNEL_BUILDS if _between(_public(version), b.first, b.last)]
    exact = [b for b in hits if b.label and b.label == label]
    return exact or [b for b in hits if b.label is None]


def _builds_for_torch(torch_version: str) -> list[kf.KernelBuild]:
    wanted = _minor(torch_version)
    return [b for b in kf.KERNEL_BUILDS if b.label is None and _minor(b.torch) == wanted]


def _sglang_pin_text(facts: Facts) -> str:
    """``sglang 0.5.5 pins torch==2.8.0, sgl-kernel==0.3.16.post5``, or empty."""
    sglang = facts.version("sglang")
    if not sglang or "sglang" not in facts.requires:
        return ""
    pins = sglang_pins(facts.requires["sglang"])
    keep = [p for p in pins if p.default and p.dist in ("torch", "sgl-kernel", "sglang-kernel")]
    return f"sglang {sglang} pins " + ", ".join(f"{p.dist}{p.spec}" for p in keep) if keep else ""


def _abi_remedy(facts: Facts, dist: str, version: str, built: str, torch_version: str) -> str:
    options = [f"pip install 'torch=={built}' (the torch {dist} {version} was built with)"]
    matching = _builds_for_torch(torch_version)
    if matching:
        newest = matching[-1]
        ranges = " or ".join(f"{b.dist} {b.first}–{b.last}" for b in matching)
        swap = (f"pip uninstall -y {dist} && " if newest.dist != dist else "")
        options.append(f"keep torch {torch_version} and install a kernel built for it: "
                       f"{swap}pip install '{newest.dist}=={newest.last}' ({ranges} were built "
                       f"with torch {newest.torch})")
    else:
        options.append(f"no published kernel was built with torch "
                       f"{'.'.join(map(str, _minor(torch_version) or ()))}, so change torch")
    pinned = _sglang_pin_text(facts)
    if pinned:
        options.append(f"or follow sglang's own pins: {pinned}")
    return "; ".join(options) + f". See {ABI_URL}"


def _check_abi(facts: Facts) -> list[Finding]:
    """Check 3a: was the kernel built for the installed torch (major.minor)?"""
    kernel = facts.kernel()
    if kernel is None:
        return []
    dist, version = kernel
    builds = _kernel_builds(version)
    if not builds:
        return [Finding("sgl-kernel-abi", "info", f"{dist} {version} is not in sglang-shims' "
                        "table of kernel builds; cannot tell which torch it was built with")]
    built = builds[0].torch
    torch_version = facts.version("torch")
    if not torch_version:
        return [Finding("sgl-kernel-abi", "fail", f"{dist} {version} was built against torch "
                        f"{built}, and torch is not installed: sgl_kernel cannot load",
                        f"pip install 'torch=={built}'")]
    if _minor(torch_version) != _minor(built):
        detail = (f"{dist} {version} was built against torch {built}; torch {torch_version} is "
                  "installed: loading it fails with an undefined-symbol error (the C++ ABI "
                  "changes between torch minors)")
        return [Finding("sgl-kernel-abi", "fail", detail,
                        _abi_remedy(facts, dist, version, built, torch_version))]
    note = "" if _public(torch_version) == built else (
        f"; torch {torch_version} is another patch release of the same minor")
    return [Finding("sgl-kernel-abi", "ok",
                    f"{dist} {version} was built against torch {built}{note}")]


# ------------------------------------------------------------------- import probe


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
    out = _run([tool, symbol], timeout=5) if tool else None
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
                "older than the CUDA the kernel was built for (breakage #7)", symbol, symbol)
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
        why = (" (CUDA runtime library missing: breakages #4/#5)" if cuda else "")
        return ImportFailure(kind, f"{lib} cannot be found by the dynamic loader{why}",
                             library=lib)
    if "Could not find CUDA lib directory" in text:
        return ImportFailure("cuda-lib-dir", "sgl_kernel found no lib/ or lib64/ under CUDA "
                             "home (breakage #4, sgl-kernel 0.3.11-0.3.18.post2)")
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


def _check_import(facts: Facts, enabled: bool) -> list[Finding]:
    """Check 3b: does ``import sgl_kernel`` work, and if not, why?"""
    if not enabled or facts.kernel_dir is None:
        return []
    start = time.monotonic()
    ok, output = probe_import(facts.kernel_dir.parent)
    took = time.monotonic() - start
    if ok:
        return [Finding("sgl-kernel-import", "ok",
                        f"import sgl_kernel succeeds in a fresh interpreter ({took:.1f} s)")]
    if ok is None:
        return [Finding("sgl-kernel-import", "warn", f"import sgl_kernel gave {output}",
                        "run python -c 'import sgl_kernel' by hand to see where it hangs")]
    return [import_failure_finding(facts, classify_import_error(output))]


def import_failure_finding(facts: Facts, failure: ImportFailure) -> Finding:
    """The finding (and remedy) for a failed ``import sgl_kernel``."""
    kernel = facts.kernel()
    name = f"{kernel[0]} {kernel[1]}" if kernel else "sgl_kernel"
    detail = f"import sgl_kernel ({name}) fails: {failure.summary}"
    remedy = "report the error output to sglang-shims with `sglang-shims doctor`'s findings"
    if failure.kind == "torch-abi":
        builds = _kernel_builds(kernel[1]) if kernel else []
        torch_version = facts.version("torch")
        if kernel and builds and torch_version:
            remedy = _abi_remedy(facts, kernel[0], kernel[1], builds[0].torch, torch_version)
        else:
            remedy = ("install the torch the kernel was built with, or the kernel built for your "
                      "torch")
    elif failure.kind == "driver-too-old":
        remedy = ("upgrade the NVIDIA driver (CUDA 12.4+ needs driver >= 550), or install a kernel "
                  f"whose common_ops does not link it (sgl-kernel <= 0.2.5 or >= "
                  f"{kf.GREEN_CTX_FIXED})")
    elif failure.kind == "cuda-runtime" and failure.library:
        remedy = _lib_remedy([failure.library])
    elif failure.kind == "library-missing" and failure.library.startswith(kf.TORCH_LIB_PREFIXES):
        remedy = ("reinstall torch (its own libraries are missing): pip install "
                  "--force-reinstall torch")
    elif failure.kind == "library-missing":
        remedy = _lib_remedy([failure.library])
    elif failure.kind == "dependency-missing":
        builds = _kernel_builds(kernel[1]) if kernel else []
        wanted = f"=={builds[0].torch}" if failure.library == "torch" and builds else ""
        remedy = f"pip install '{failure.library}{wanted}'"
    elif failure.kind == "cuda-lib-dir":
        remedy = ("set CUDA_HOME to a directory with lib64/libcudart.so.12 (a CUDA 12 toolkit, or "
                  "site-packages/nvidia/cuda_runtime), or upgrade to sgl-kernel >= 0.3.18.post3")
    elif failure.kind == "no-kernel-image":
        remedy = f"install a kernel built for this GPU, or {TRITON_FALLBACK}"
    elif failure.kind == "not-installed":
        remedy = "install the kernel your sglang pins (see sglang-pin)"
    return Finding("sgl-kernel-import", "fail", detail, remedy)


# --------------------------------------------------------------------- arch coverage


def loader_library(facts: Facts, cap: tuple[int, int] | None) -> tuple[str, LibraryInfo] | None:
    """The common_ops that sgl_kernel's loader picks: sm90/ on 9.0, sm100/ otherwise
    (no GPU included), then the flat layout of <= 0.3.12."""
    preferred = "sm90" if cap == (9, 0) else "sm100"
    for key in (preferred, ""):
        if key in facts.libraries:
            return key, facts.libraries[key]
    return None


def _rel(facts: Facts, path: Path) -> str:
    if facts.kernel_dir is not None:
        try:
            return str(path.relative_to(facts.kernel_dir.parent))
        except ValueError:
            pass
    return str(path)


def _holdings(info: LibraryInfo) -> str:
    ptx = f"; PTX {', '.join(info.ptx)}" if info.ptx else "; no PTX"
    return f"{', '.join(info.sass) or 'no SASS'}{ptx}"


def _check_arch(facts: Facts) -> list[Finding]:
    """Check 4: does the library the loader picks hold code for each GPU?"""
    if facts.kernel_dir is None:
        if facts.kernel() and not facts.env.hermetic:
            return [Finding("sgl-kernel-arch", "warn", "a kernel distribution is installed but "
                            "no sgl_kernel package was found on sys.path",
                            "reinstall the kernel distribution")]
        return []
    out = [Finding("sgl-kernel-arch", "warn", f"cannot read {where}: {why}")
           for where, why in facts.library_errors.items()]
    if not facts.libraries:
        if not facts.library_errors:
            out.append(Finding("sgl-kernel-arch", "fail", f"no common_ops library under "
                               f"{facts.kernel_dir}: import sgl_kernel will fail",
                               "reinstall the kernel distribution"))
        return out
    if not facts.caps:
        for _key, info in sorted(facts.libraries.items()):
            out.append(Finding("sgl-kernel-arch", "info", f"{_rel(facts, info.path)} holds "
                               f"{_holdings(info)} (no GPU found to check against)"))
        return out
    for cap in sorted(set(facts.caps)):
        picked = loader_library(facts, cap)
        if picked is None:
            out.append(Finding("sgl-kernel-arch", "fail", f"no common_ops library the loader "
                               f"would pick for {_sm(cap)} under {facts.kernel_dir}",
                               "reinstall the kernel distribution"))
            continue
        _key, info = picked
        hits = info.runs_on(cap)
        where = _rel(facts, info.path)
        if any(h.is_sass for h in hits):
            used = ", ".join(arch_names(hits))
            out.append(Finding("sgl-kernel-arch", "ok", f"{_sm(cap)} (cc {cap[0]}.{cap[1]}) "
                               f"loads {where}, which has SASS {used} for it"))
        elif hits:
            out.append(Finding("sgl-kernel-arch", "ok", f"{_sm(cap)} loads {where}: no SASS for "
                               f"it, but PTX {', '.join(arch_names(hits, ptx=True))} is compiled "
                               "by the driver at first use (slow first launch)"))
        else:
            hint = kf.ARCH_HINTS.get(cap, "")
            sass_note = f"; PTX: {', '.join(info.ptx)}" if info.ptx else ""
            out.append(Finding(
                "sgl-kernel-arch", "fail",
                f"no kernel image for {_sm(cap)} in {where}: it holds {', '.join(info.sass)}"
                f"{sass_note}. Every sgl_kernel op fails at launch with 'no kernel image is "
                "available for execution on the device' (breakage #14)",
                f"install a kernel build that contains {_sm(cap)}"
                f"{' (' + hint + ')' if hint else ''}, or use sglang-shims' Triton fallback "
                f"tier: {TRITON_FALLBACK}"))
    return out


# --------------------------------------------------------------------- CUDA libraries


def _lib_package(soname: str) -> str | None:
    """The pip requirement that provides a CUDA library: ``nvidia-cuda-nvrtc-cu12``."""
    match = re.fullmatch(r"(lib\w+?)\.so\.(\d+)(?:\.\d+)*", soname)
    if not match or match.group(1) not in kf.CUDA_LIB_PACKAGES:
        return None
    cu12, cu13 = kf.CUDA_LIB_PACKAGES[match.group(1)]
    return {"12": cu12, "13": f"'{cu13}==13.*'"}.get(match.group(2))


def _lib_remedy(sonames: Iterable[str]) -> str:
    """One remedy for several missing libraries: a pip command, and what pip cannot fix."""
    names = list(dict.fromkeys(sonames))
    packages = list(dict.fromkeys(p for n in names if (p := _lib_package(n))))
    parts = [f"pip install {' '.join(packages)}"] if packages else []
    parts += [kf.SYSTEM_LIB_PACKAGES[n] for n in names if n in kf.SYSTEM_LIB_PACKAGES]
    rest = [n for n in names if not _lib_package(n) and n not in kf.SYSTEM_LIB_PACKAGES]
    if rest:
        parts.append(f"install what provides {', '.join(rest)}")
    return "; ".join(parts) + ", or put the folders holding them on LD_LIBRARY_PATH"


def resolve_library(facts: Facts, soname: str, info: LibraryInfo | None = None
                    ) -> tuple[str, str]:
    """How the dynamic loader would find ``soname`` when sgl_kernel loads.

    Returns (state, where): ``loader`` (RUNPATH, LD_LIBRARY_PATH, ldconfig cache or a
    default directory), ``torch`` (``import torch`` has loaded it), ``cuda-home``
    (sgl_kernel itself preloads libcudart from CUDA home), ``off-path`` (it exists,
    e.g. in pip's nvidia folder, where the loader does not look and torch does not
    preload it), ``missing``.
    """
    search = [Path(p) for p in (info.search_path if info else ())]
    for folder in [*search, *facts.lib_dirs]:
        if (folder / soname).exists():
            return "loader", str(folder / soname)
    if soname in facts.ldconfig:
        return "loader", facts.ldconfig[soname]
    if not facts.ldconfig and not facts.env.hermetic:
        import ctypes.util

        stem = soname.split(".so", 1)[0].removeprefix("lib")
        if ctypes.util.find_library(stem) == soname:
            return "loader", soname
    if soname.startswith(kf.TORCH_LIB_PREFIXES) and facts.torch_dir is not None:
        candidate = facts.torch_dir / "lib" / soname
        if candidate.exists():
            return "torch", str(candidate)
    elsewhere = [d / soname for d in facts.pip_lib_dirs if (d / soname).exists()]
    if facts.torch_dir is not None and (facts.torch_dir / "lib" / soname).exists():
        elsewhere.insert(0, facts.torch_dir / "lib" / soname)
    if elsewhere and (soname in facts.torch_needed or _torch_preloads(facts, soname)):
        return "torch", str(elsewhere[0])
    if soname.startswith("libcudart.") and facts.cuda_home:
        for sub in ("lib", "lib64"):
            candidate = Path(facts.cuda_home) / sub / soname
            if candidate.exists():
                return "cuda-home", str(candidate)
    if facts.cuda_home:
        elsewhere += [Path(facts.cuda_home) / s / soname for s in ("lib64", "lib")
                      if (Path(facts.cuda_home) / s / soname).exists()]
    if elsewhere:
        return "off-path", str(elsewhere[0])
    return "missing", ""


def _torch_preloads(facts: Facts, soname: str) -> bool:
    """Does ``import torch`` load this library from pip's nvidia folders?"""
    torch = _minor(facts.version("torch"))
    if facts.torch_build != "cuda" or torch is None:
        return False
    stems: frozenset[str] = frozenset()
    for first, names in kf.TORCH_PRELOADS:
        if torch >= (_minor(first) or (0, 0)):
            stems = names
    return soname.split(".so", 1)[0] in stems


def _check_libs(facts: Facts) -> list[Finding]:
    """Check 5: can the loader find every library the kernel's common_ops needs?"""
    picked = loader_library(facts, facts.caps[0] if facts.caps else None)
    if picked is None:
        return []
    _key, info = picked
    where = _rel(facts, info.path)
    out: list[Finding] = []
    found: list[str] = []
    missing: list[str] = []
    off_path: list[tuple[str, str]] = []
    for soname in info.needed:
        if soname in kf.BASE_LIBS:
            continue
        if soname.startswith(kf.TORCH_LIB_PREFIXES) and facts.torch_dir is None:
            continue  # no torch at all: sgl-kernel-abi says so once
        state, path = resolve_library(facts, soname, info)
        if state == "missing" and soname == "libcuda.so.1":
            level = "fail" if facts.caps else "info"
            out.append(Finding("cuda-libs", level, f"{where} needs libcuda.so.1, the NVIDIA "
                               "driver library, and it is not installed",
                               "install the NVIDIA driver" if facts.caps else ""))
        elif state == "missing":
            missing.append(soname)
        elif state == "off-path":
            off_path.append((soname, path))
        else:
            found.append(f"{soname} ({'via import torch' if state == 'torch' else path})")
    if missing:
        shown = []
        for soname in missing:
            others = _other_majors(facts, soname)
            shown.append(f"{soname} (only {', '.join(others)} found)" if others else soname)
        variant = any(_other_majors(facts, s) for s in missing)
        out.append(Finding(
            "cuda-libs", "fail",
            f"{where} needs {', '.join(shown)}, which the dynamic loader cannot find: import "
            f"sgl_kernel fails with '{missing[0]}: cannot open shared object file' (breakages "
            f"#4/#5{'/#6: a kernel built for another CUDA major' if variant else ''})",
            _lib_remedy(missing)))
    if off_path:
        folders = ":".join(dict.fromkeys(str(Path(p).parent) for _s, p in off_path))
        out.append(Finding(
            "cuda-libs", "warn",
            f"{where} needs {', '.join(s for s, _p in off_path)}; found at "
            f"{', '.join(p for _s, p in off_path)}, but not on the loader's search path, and "
            "import torch does not load them (breakage #5)",
            f"export LD_LIBRARY_PATH={folders}:$LD_LIBRARY_PATH"))
    if not out:
        out.append(Finding("cuda-libs", "ok", f"{where} needs {len(found)} non-system "
                           f"libraries; all found: {'; '.join(found)}"))
    return out


def _other_majors(facts: Facts, soname: str) -> list[str]:
    stem = soname.split(".so", 1)[0] + ".so."
    dirs = [*facts.lib_dirs, *facts.pip_lib_dirs]
    if facts.cuda_home:
        dirs += [Path(facts.cuda_home) / "lib64", Path(facts.cuda_home) / "lib"]
    hits = {n for n in facts.ldconfig if n.startswith(stem)}
    for folder in dirs:
        if folder.is_dir():
            hits.update(p.name for p in folder.glob(stem + "*"))
    return sorted(h for h in hits if h != soname)


# ---------------------------------------------------------------- sglang's own pins


@dataclass(frozen=True)
class Pin:
    dist: str
    """Canonical name: ``flashinfer-python``."""
    spec: str
    extra: str
    """The extra that carries it: ``""`` for a plain dependency, ``srt``, ``cu130``, ..."""
    default: bool
    """True when ``pip install sglang`` / ``sglang[srt]`` installs it."""


PIN_DISTS = ("torch", "sgl-kernel", "sglang-kernel", "flashinfer-python", "flashinfer-cubin",
             "flashinfer-jit-cache", "transformers", "triton", "kernels")
DEFAULT_EXTRAS = ("", "srt")


def sglang_pins(lines: Iterable[str], dists: Iterable[str] = PIN_DISTS) -> list[Pin]:
    """sglang's version pins from its ``Requires-Dist`` lines.

    Old releases put the runtime under the ``srt`` extra, which pulls in
    ``sglang[runtime_common]``; those self-references are followed.  Pins under
    other extras (``blackwell``, ``cu130``) are kept as alternatives.
    """
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    wanted = {canonical(d) for d in dists}
    reqs: list[tuple[Requirement, str]] = []
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        reqs.append((req, _extra_of(req)))
    default = set(DEFAULT_EXTRAS)
    grew = True
    while grew:
        grew = False
        for req, extra in reqs:
            if canonicalize_name(req.name) == "sglang" and extra in default:
                new = {canonicalize_name(e) for e in req.extras} - default
                default |= new
                grew = grew or bool(new)
    pins = []
    for req, extra in reqs:
        name = canonical(req.name)
        if name in wanted and str(req.specifier):
            pins.append(Pin(name, str(req.specifier), extra, extra in default))
    return pins


def _extra_of(req: Requirement) -> str:
    """The extra a requirement belongs to ("" if none), judged on this platform."""
    from packaging.utils import canonicalize_name

    marker = req.marker
    if marker is None:
        return ""
    names = re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", str(marker))
    for extra in ["", *names]:
        try:
            if marker.evaluate({"extra": extra}):
                return str(canonicalize_name(extra)) if extra else ""
        except Exception:
            return "?"
    return "?"  # a platform marker that is false here


def _check_pins(facts: Facts) -> list[Finding]:
    """Check 7: installed torch / kernel / flashinfer / transformers vs sglang's pins."""
    sglang = facts.version("sglang")
    if not sglang:
        return []
    if "sglang" not in facts.requires:
        return [Finding("sglang-pin", "info", f"sglang {sglang}: its Requires-Dist was not read "
                        "(hermetic environment or missing metadata)")]
    pins = sglang_pins(facts.requires["sglang"])
    out: list[Finding] = []
    matched: list[str] = []
    for dist in PIN_DISTS:
        mine = [p for p in pins if p.dist == dist and p.default]
        if not mine:
            continue
        spec = ",".join(p.spec for p in mine)
        installed_as, version = dist, facts.version(dist)
        if version is None and dist in ("sgl-kernel", "sglang-kernel"):
            installed_as = "sglang-kernel" if dist == "sgl-kernel" else "sgl-kernel"
            version = facts.version(installed_as)
        if version is None:
            out.append(Finding("sglang-pin", "warn", f"sglang {sglang} requires {dist}{spec}; it "
                               "is not installed", f"pip install '{dist}{spec}'"))
            continue
        if all(satisfies(version, p.spec)[0] for p in mine):
            renamed = f" (installed as {installed_as})" if installed_as != dist else ""
            matched.append(f"{dist} {version}{renamed}")
            continue
        alternative = [p for p in pins if p.dist == dist and not p.default and p.extra != "?"
                       and satisfies(version, p.spec)[0]]
        if alternative:
            out.append(Finding("sglang-pin", "info", f"sglang {sglang} pins {dist}{spec}; "
                               f"{installed_as} {version} matches its [{alternative[0].extra}] "
                               f"extra instead ({dist}{alternative[0].spec})"))
            continue
        swap = f"pip uninstall -y {installed_as} && " if installed_as != dist else ""
        out.append(Finding("sglang-pin", "warn", f"sglang {sglang} pins {dist}{spec}; "
                           f"{installed_as} {version} is installed",
                           f"{swap}pip install '{dist}{spec}' (or an sglang release that pins "
                           f"{installed_as} {version})"))
    if matched:
        out.insert(0, Finding("sglang-pin", "ok", f"sglang {sglang}'s pins are met by "
                              + ", ".join(matched)))
    return out


# ----------------------------------------------------------------- known-bad rules

Verdict = tuple[str, str, str]
"""(level, detail, remedy) from a rule that fired."""


@dataclass(frozen=True)
class Rule:
    """A known-bad combination from ``shared/research/breakages.md``.

    ``judge`` is a pure function of :class:`Facts`: None when the combination is
    absent, otherwise the verdict; the rule adds the citation.
    """

    id: str
    breakage: int | None
    url: str
    trigger: str
    judge: Callable[[Facts], Verdict | None]

    def evaluate(self, facts: Facts) -> Finding | None:
        verdict = self.judge(facts)
        if verdict is None:
            return None
        level, detail, remedy = verdict
        cite = f"breakage #{self.breakage} {self.id}" if self.breakage else self.id
        return Finding(self.id, level, f"{detail} [{cite}: {self.url}]", remedy)


def _patch_on(facts: Facts, patch_id: str) -> tuple[bool, str]:
    """Would sglang-shims apply this built-in patch, per the toggles in the environment?"""
    from ..._bootstrap import PATCHES
    from ..._toggles import Toggles

    default = PATCHES.get(patch_id, ("", True, False))[1]
    return Toggles(dict(facts.environ)).decide(patch_id, default)


def _fused_marlin_moe(facts: Facts) -> Verdict | None:
    sglang, kernel = facts.version("sglang"), facts.kernel()
    if not (kernel and _in(sglang, ">=0.4.9.post3,<0.5.6") and _in(kernel[1], ">=0.3.18")):
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
    if not (_in(sglang, ">=0.4.6.post1,<0.5.10") and facts.version("sglang-kernel")
            and not facts.version("sgl-kernel")):
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
    if not _in(sglang, ">=0.4.3") or facts.kernel() is not None:
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
    torch_major = _minor(facts.torch_cuda)
    if kernel is None or known is None or torch_major is None or facts.torch_build != "cuda":
        return None
    major, how = known
    if major == torch_major[0]:
        return None
    dist, version = kernel
    label = "cu130" if torch_major[0] >= 13 else "cu129" if _in(version, ">=0.3.9") else "cu128"
    return ("warn", f"{dist} {version} is a CUDA {major} build ({how}) but torch "
            f"{facts.version('torch')} uses CUDA {facts.torch_cuda}: the kernel needs a second "
            f"CUDA runtime next to torch's and fails to import when libcudart.so.{major} is not "
            "installed",
            f"install the +{label} build of the same kernel: pip install '{dist}=="
            f"{_public(version)}' --index-url {kf.VARIANT_INDEX.format(label=label)}")


def _green_ctx_driver(facts: Facts) -> Verdict | None:
    kernel = facts.kernel()
    if kernel is None or not _between(_public(kernel[1]), kf.GREEN_CTX_FIRST, kf.GREEN_CTX_LAST):
        return None
    if facts.driver_cuda is not None:
        old = facts.driver_cuda < kf.GREEN_CTX_MIN_DRIVER
        shown = f"CUDA {facts.driver_cuda // 1000}.{facts.driver_cuda % 1000 // 10}"
    elif facts.driver_version and facts.driver_version.split(".")[0].isdigit():
        old = int(facts.driver_version.split(".")[0]) < kf.GREEN_CTX_MIN_DRIVER_BRANCH
        shown = f"driver {facts.driver_version}"
    else:
        return None
    if not old:
        return None
    return ("fail", f"{kernel[0]} {kernel[1]}'s common_ops links the CUDA green-context API "
            f"(cuGreenCtxDestroy, cuGreenCtxStreamCreate), which drivers older than CUDA 12.4 "
            f"lack; this one is {shown}: import fails with 'undefined symbol: cuGreenCtxDestroy'",
            f"upgrade the NVIDIA driver to >= 550 (CUDA 12.4), or install sgl-kernel <= 0.2.5 or "
            f">= {kf.GREEN_CTX_FIXED} built for your torch")


def _cudart_preload(facts: Facts) -> Verdict | None:
    kernel = facts.kernel()
    if (kernel is None or not _in(kernel[1], ">=0.3.11,<0.3.18.post3")
            or facts.torch_build != "cuda" or facts.cuda_home_has_libdir is not False):
        return None
    return ("fail", f"{kernel[0]} {kernel[1]} preloads libcudart from CUDA home "
            f"({facts.cuda_home}, from {facts.cuda_home_from}) and raises RuntimeError('Could "
            "not find CUDA lib directory.') at import when it has no lib/, no lib64/ and no "
            "libcudart.so.12 (fixed in sgl-kernel 0.3.18.post3, PR #13089)",
            "point CUDA_HOME at a folder with lib/libcudart.so.12 (e.g. site-packages/nvidia/"
            "cuda_runtime, or a CUDA 12 toolkit), or upgrade to sgl-kernel >= 0.3.18.post3 built "
            "for your torch")


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
    sglang, triton = facts.version("sglang"), facts.version("triton")
    if not (_in(sglang, "<0.4.9.post1") and _in(triton, ">=3.4")):
        return None
    return ("fail", f"sglang {sglang} imports default_cache_dir, default_dump_dir and "
            "default_override_dir from triton.runtime.cache at module level (sglang/srt/utils.py,"
            f" read in the 0.4.6-0.4.9 wheels); triton 3.4 removed them, and {triton} is "
            "installed: importing sglang.srt fails with ImportError",
            "pip install 'triton<3.4' with the torch it pairs with (torch <= 2.7), or upgrade "
            "sglang to >= 0.4.9.post1")


def _ptxas_blackwell(facts: Facts) -> Verdict | None:
    triton = facts.version("triton")
    if not triton or not facts.caps or facts.environ.get("TRITON_PTXAS_PATH"):
        return None
    for cap in sorted(set(facts.caps)):
        target = f"{_sm(cap)}a"
        if (cap in ((10, 3), (12, 1)) and _in(triton, "<3.6")) or (
                cap == (11, 0) and _in(triton, "<3.7")):
            need = "13.0" if cap == (11, 0) else "12.9"
            local = ""
            if facts.nvcc and facts.nvcc_version and _in(facts.nvcc_version, f">={need}"):
                local = f" (this machine has one: {Path(facts.nvcc).parent / 'ptxas'})"
            fix = ("pip install 'triton>=3.6' with the torch that pins it, or " if cap != (11, 0)
                   else "")
            return ("fail", f"GPU {_sm(cap)} needs ptxas to know {target}; triton {triton}'s "
                    "bundled ptxas does not (triton 3.4.0 and 3.6.0's 12.8 ptxas reject sm_103a "
                    "and sm_121a; 3.6.0's 12.9 ptxas-blackwell accepts them but not sm_110a), so "
                    f"every Triton kernel fails with \"Value '{target}' is not defined for option "
                    "'gpu-name'\"",
                    f"{fix}export TRITON_PTXAS_PATH=<a CUDA >= {need} ptxas>{local}")
        if cap[0] in (10, 12) and _in(triton, "<3.3"):
            return ("warn", f"GPU {_sm(cap)} needs a ptxas from CUDA >= 12.8; triton {triton} is "
                    "older than 3.3 (3.3.1 was the oldest checked; it ships a 12.8 "
                    "ptxas-blackwell), so its Triton kernels may fail to assemble",
                    "pip install 'triton>=3.3' with the torch that pins it, or export "
                    "TRITON_PTXAS_PATH=<a CUDA >= 12.8 ptxas>")
    return None


def _torch_lacks_arch(facts: Facts) -> Verdict | None:
    torch = facts.version("torch")
    if not torch or facts.torch_build != "cuda":
        return None
    for cap in sorted(set(facts.caps)):
        if facts.torch_arch_list:
            entries = [_entry_from_name(n) for n in facts.torch_arch_list]
            if any(e is not None and e.runs_on(cap) for e in entries):
                continue
            why = f"its arch list is {', '.join(facts.torch_arch_list)}"
        elif cap[0] >= 10 and facts.torch_cuda and _in(facts.torch_cuda, "<12.8"):
            why = f"it is a CUDA {facts.torch_cuda} build, and CUDA < 12.8 cannot build for it"
        else:
            continue
        return ("fail", f"torch {torch} has no code for {_sm(cap)}: {why}; every torch CUDA op "
                "fails with 'no kernel image is available for execution on the device'",
                f"install a torch built with CUDA >= 12.8: pip install 'torch=={_public(torch)}' "
                "--index-url https://download.pytorch.org/whl/cu128 (or cu129 / cu130)")
    return None


def _entry_from_name(name: str) -> FatbinEntry | None:
    match = re.fullmatch(r"(sm|compute)_(\d+)([af]?)", name)
    if not match:
        return None
    kind = FATBIN_KIND_ELF if match.group(1) == "sm" else FATBIN_KIND_PTX
    flags = {"a": FLAG_ARCH_SPECIFIC, "f": FLAG_FAMILY}.get(match.group(3), 0)
    return FatbinEntry(kind, int(match.group(2)), flags)


def _config_register(facts: Facts) -> Verdict | None:
    sglang, tf = facts.version("sglang"), facts.version("transformers")
    if _in(sglang, ">=0.4.3.post1,<0.4.4.post2") and _in(tf, ">=4.49"):
        return ("fail", f"sglang {sglang} registers its own Qwen2_5_VLConfig with "
                f"AutoImageProcessor at import; transformers {tf} ships Qwen2.5-VL, so import "
                "fails with \"ValueError: '<class ...Qwen2_5_VLConfig'>' is already used by a "
                "Transformers model\"",
                "pip install 'transformers==4.48.3' (what this sglang pins), or upgrade sglang "
                "to >= 0.4.4.post2")
    if _in(sglang, ">=0.5.11,<0.5.20") and _in(tf, ">=5.13"):
        return ("fail", f"sglang {sglang} registers 'qwen3_asr' with AutoConfig without "
                f"exist_ok; transformers {tf} ships that model type (from 5.13.0), so import "
                "fails with \"ValueError: 'qwen3_asr' is already used by a Transformers config\" "
                "(read in the wheels: sglang 0.5.11-0.5.19 register it, 0.5.20 passes exist_ok)",
                "pip install 'transformers<5.13' (this sglang pins 5.12.1 or older), or upgrade "
                "sglang to >= 0.5.20")
    return None


def _rope_theta(facts: Facts) -> Verdict | None:
    sglang, tf = facts.version("sglang"), facts.version("transformers")
    if not (_in(sglang, "<0.5.10rc0") and _in(tf, ">=5.0.0rc0")):
        return None
    pinned = next((p.spec for p in sglang_pins(facts.requires.get("sglang", []),
                                                ("transformers",)) if p.default), "")
    target = pinned if pinned and not _in(pinned.lstrip("="), ">=5.0.0rc0") else "==4.57.1"
    return ("fail", f"sglang {sglang} reads config.rope_theta with a default (getattr(config, "
            "'rope_theta', 10000) in llama.py, qwen3.py and ~50 other models); transformers "
            f"{tf} moves rope_theta into config.rope_parameters, so the default is used silently "
            "and outputs are wrong for every model whose RoPE base is not the default. The helper"
            " from PR #14745 (handle_rope_parameters) is in no published wheel; 0.5.10rc0 is the "
            "first release that reads config.rope_parameters (checked: sglang 0.5.3rc0-0.5.11 "
            "and 0.5.23 wheels)",
            f"pip install 'transformers{target}', or upgrade sglang to >= 0.5.10")


def _kernels_hub(facts: Facts) -> Verdict | None:
    kernels, tf = facts.version("kernels"), facts.version("transformers")
    if not (_in(kernels, ">=0.15") and _in(tf, ">=5.6,<5.9")):
        return None
    return ("fail", f"kernels {kernels} with transformers {tf}: importing "
            "transformers.models.llama.modeling_llama raises \"ValueError: Either a revision or a "
            "version must be specified.\" (transformers/integrations/hub_kernels.py), and sglang "
            "imports it while starting",
            "pip install 'kernels<0.15' (sglang's own pin since PR #26704), or pip uninstall -y "
            "kernels if nothing else needs it")


def _alloc_conf(facts: Facts) -> Verdict | None:
    new = facts.environ.get("PYTORCH_ALLOC_CONF", "").strip()
    old = facts.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").strip()
    torch = facts.version("torch")
    if new and old and new != old:
        return ("warn", f"PYTORCH_ALLOC_CONF={new!r} and PYTORCH_CUDA_ALLOC_CONF={old!r} differ; "
                "which one torch uses depends on its version (torch 2.9.1 reads only "
                "PYTORCH_CUDA_ALLOC_CONF for CUDA)",
                f"set both to the same value, e.g. export PYTORCH_CUDA_ALLOC_CONF={new!r}")
    if new and not old and _in(torch, "<2.10"):
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
           if (v := facts.version(d)) and _public(v) != _public(core)]
    if not bad:
        return None
    cu = (facts.torch_cuda or "12.9").replace(".", "")
    fixes = []
    for dist, _v in bad:
        if dist == "flashinfer-cubin":
            fixes.append(f"pip install 'flashinfer-cubin=={_public(core)}'")
        else:
            fixes.append(f"pip install 'flashinfer-jit-cache=={_public(core)}' --index-url "
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
    if not twelve or not _in(facts.nvcc_version, "<12.9"):
        return None
    return ("warn", f"FlashInfer JIT-compiles with the local nvcc ({facts.nvcc}, CUDA "
            f"{facts.nvcc_version}); for {_sm(twelve[0])} it needs CUDA >= 12.9 and otherwise "
            "fails with 'FlashInfer requires GPUs with sm75 or higher' (fixed by flashinfer PR "
            "#3633; the first release with it is not confirmed)",
            "point CUDA_HOME and PATH at a CUDA >= 12.9 toolkit")


RULES: tuple[Rule, ...] = (
    Rule("sgl-kernel-missing-fused-marlin-moe", 1,
         "https://github.com/sgl-project/sglang/issues/8654",
         "sglang >=0.4.9.post3,<0.5.6 with sgl-kernel/sglang-kernel >=0.3.18", _fused_marlin_moe),
    Rule("sgl-kernel-dist-renamed", None, "https://github.com/sgl-project/sglang/pull/20440",
         "sglang >=0.4.6.post1,<0.5.10 with only sglang-kernel installed", _dist_renamed),
    Rule("sgl-kernel-not-installed", 8, "https://github.com/sgl-project/sglang/issues/3687",
         "sglang >=0.4.3 with neither kernel distribution", _kernel_not_installed),
    Rule("sgl-kernel-cuda-major-variant", 6, "https://github.com/sgl-project/sglang/issues/29646",
         "kernel CUDA major (DT_NEEDED libcudart, label or default build) != torch's",
         _cuda_major_variant),
    Rule("sgl-kernel-green-ctx-driver", 7, "https://github.com/sgl-project/sglang/issues/8432",
         f"sgl-kernel {kf.GREEN_CTX_FIRST}–{kf.GREEN_CTX_LAST} with a driver < CUDA 12.4",
         _green_ctx_driver),
    Rule("sgl-kernel-cudart-preload", 4, "https://github.com/sgl-project/sglang/issues/18203",
         "sgl-kernel >=0.3.11,<0.3.18.post3, CUDA torch, CUDA home without lib/ or lib64/",
         _cudart_preload),
    Rule("torch-triton-pair-mismatch", 21, "https://github.com/triton-lang/triton/issues/7594",
         "installed triton outside torch's Requires-Dist triton pin", _torch_triton),
    Rule("triton-cache-symbols-removed", 19, "https://github.com/sgl-project/sglang/pull/7832",
         "sglang <0.4.9.post1 with triton >=3.4", _triton_cache_symbols),
    Rule("triton-ptxas-too-old-blackwell", 17, "https://github.com/triton-lang/triton/issues/8539",
         "GPU 10.3/12.1 with triton <3.6, 11.0 with triton <3.7, 10.x/12.x with triton <3.3; "
         "TRITON_PTXAS_PATH unset", _ptxas_blackwell),
    Rule("torch-wheel-lacks-sm120", 18, "https://github.com/pytorch/pytorch/issues/167244",
         "GPU not in torch's arch list, or cc >= 10 with a torch CUDA < 12.8", _torch_lacks_arch),
    Rule("tf-config-register-collision", 22, "https://github.com/sgl-project/sglang/issues/4629",
         "sglang >=0.4.3.post1,<0.4.4.post2 with transformers >=4.49; sglang >=0.5.11,<0.5.20 "
         "with transformers >=5.13", _config_register),
    Rule("tf5-rope-theta-moved", 24, "https://github.com/sgl-project/sglang/pull/14745",
         "sglang <0.5.10rc0 with transformers >=5.0.0rc0", _rope_theta),
    Rule("tf-kernels-hub-revision", 27, "https://github.com/sgl-project/sglang/pull/26704",
         "kernels >=0.15 with transformers >=5.6,<5.9", _kernels_hub),
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
    Rule("flashinfer-sm120-nvcc128", 13, "https://github.com/flashinfer-ai/flashinfer/pull/3633",
         "flashinfer with a 12.x GPU and a local nvcc < 12.9", _flashinfer_nvcc),
)


def _check_rules(facts: Facts) -> list[Finding]:
    out = []
    for rule in RULES:
        try:
            finding = rule.evaluate(facts)
        except Exception as exc:
            finding = _failed(rule.id, exc)
        if finding is not None:
            out.append(finding)
    return out


# ----------------------------------------------------------------------- entry point


def _failed(check: str, exc: BaseException) -> Finding:
    return Finding(check, "warn", f"this check itself failed ({type(exc).__name__}: {exc}); "
                   "the other checks are unaffected",
                   f"please report it at {PROJECT_URL}/issues with this output")


def diagnose(env: Environment | None = None, *, probe_import: bool = True,
             use_torch: bool = True) -> list[Finding]:
    """Diagnose the environment; never raises.

    ``env`` defaults to this interpreter's; a hermetic one is judged on its versions
    (and ``capabilities``) alone.  ``probe_import`` imports ``sgl_kernel`` in a child
    process (up to a minute, only when a kernel is installed); ``use_torch`` lets
    GPU detection import torch when it is installed.
    """
    try:
        facts = gather(env, use_torch=use_torch)
    except Exception as exc:
        return [_failed("doctor", exc)]
    findings = [Finding("doctor", "warn", f"could not read the {what}: {why}; checks that need "
                        "it are less precise") for what, why in facts.problems]
    checks: list[tuple[str, Callable[[Facts], list[Finding]]]] = [
        ("versions", _check_versions),
        ("gpu", _check_gpus),
        ("sgl-kernel-abi", _check_abi),
        ("sgl-kernel-import", lambda f: _check_import(f, probe_import and not f.env.hermetic)),
        ("sgl-kernel-arch", _check_arch),
        ("cuda-libs", _check_libs),
        ("known-bad", _check_rules),
        ("sglang-pin", _check_pins),
    ]
    for check_id, check in checks:
        try:
            findings.extend(check(facts))
        except Exception as exc:
            findings.append(_failed(check_id, exc))
    return findings
