"""``doctor``: version checks, the ELF/fatbin reader, the import probe and every rule.

Rules are judged on hermetic environments (versions given, nothing read from this
machine); the binary readers on bytes built here and, when nvcc is installed, on
shared objects it compiles; the probe on a fake ``sgl_kernel`` that fails to import
the way a torch ABI mismatch does.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import textwrap
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from sglang_shims.cli import doctor  # its checks and rules, reached as doctor.checks.<name>
from sglang_shims.cli.doctor import Facts, Finding, Level, diagnose
from sglang_shims.cli.doctor.checks.probe import classify_import_error, probe_import
from sglang_shims.cli.doctor.requires import sglang_pins
from sglang_shims.engine.gates import Environment
from sglang_shims.patching import elf
from sglang_shims.patching.elf import (
    FLAG_ARCH_SPECIFIC,
    FLAG_FAMILY,
    BinaryFormatError,
    FatbinEntry,
    LibraryInfo,
    inspect_library,
    parse_fatbin,
)

from ...support.doctor import by_check, facts, hermetic, verdict
from ...support.run import REPO

LEVELS = set(Level)
ABI_SYMBOL = "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib"


# ------------------------------------------------------------------- acceptance


def test_acceptance_kernel_0_3_18_with_torch_2_14_1_fails_with_remedy() -> None:
    findings = diagnose(hermetic({"sgl-kernel": "0.3.18", "torch": "2.14.1"}))
    [abi] = by_check(findings, "sgl-kernel-abi")
    assert abi.level == "fail"
    assert abi.detail == (
        "sgl-kernel 0.3.18 was built against torch 2.8.0; torch 2.14.1 is installed: loading "
        "it fails with an undefined-symbol error (the C++ ABI changes between torch minors)")
    assert "pip install 'torch==2.8.0'" in abi.remedy
    assert "pip uninstall -y sgl-kernel && pip install 'sglang-kernel==0.4.10'" in abi.remedy
    assert all(f.level in LEVELS for f in findings)


def test_abi_remedy_names_sglangs_own_pins() -> None:
    requires = {"sglang": ["sgl-kernel==0.3.16.post5", "torch==2.8.0", "transformers==4.57.1"]}
    f = facts({"sgl-kernel": "0.3.18", "torch": "2.14.1", "sglang": "0.5.5"}, requires=requires)
    [abi] = doctor.checks.abi.check_abi(f)
    assert "sglang 0.5.5 pins sgl-kernel==0.3.16.post5, torch==2.8.0" in abi.remedy


@pytest.mark.parametrize(("kernel", "torch", "level", "built"), [
    ({"sglang-kernel": "0.4.5"}, "2.11.0", "ok", "2.11.0"),
    ({"sglang-kernel": "0.4.6.post1"}, "2.11.0", "fail", "2.13.0"),  # issue #36462
    ({"sglang-kernel": "0.4.9"}, "2.14.1+cu130", "ok", "2.14.1"),
    ({"sgl-kernel": "0.3.18+cu130"}, "2.9.0+cu130", "ok", "2.9.0"),  # label-specific build
    ({"sgl-kernel": "0.3.18"}, "2.9.0", "fail", "2.8.0"),
    ({"sgl-kernel": "0.3.21"}, "2.9.0", "ok", "2.9.1"),              # same minor
    ({"sgl-kernel": "0.2.7"}, "2.7.1", "ok", "2.7.1"),
    ({"sgl-kernel": "0.1.9"}, "2.5.1", "fail", "2.7.1"),             # read from the wheel
    ({"sgl-kernel": "0.0.9.post2"}, "2.5.1", "ok", "2.5.1"),         # gone from PyPI: pins
    ({"sgl-kernel": "0.0.8"}, "2.7.0", "fail", "2.5.1"),             # issue #5247
    ({"sgl-kernel": "0.0.3"}, "2.5.1", "info", ""),                  # before sglang's pins
])
def test_kernel_torch_table(kernel: dict[str, str], torch: str, level: str,
                            built: str) -> None:
    [abi] = doctor.checks.abi.check_abi(facts({**kernel, "torch": torch}))
    assert abi.level == level
    assert built in abi.detail


def test_torch_minor_without_any_kernel_build() -> None:
    [abi] = doctor.checks.abi.check_abi(facts({"sglang-kernel": "0.4.5", "torch": "2.12.0"}))
    assert abi.level == "fail"
    assert "no published kernel was built with torch 2.12" in abi.remedy


def test_kernel_without_torch_fails() -> None:
    [abi] = doctor.checks.abi.check_abi(facts({"sgl-kernel": "0.3.18"}))
    assert abi.level == "fail" and "torch is not installed" in abi.detail


# ------------------------------------------------------------ version findings


def test_both_kernel_distributions_warn() -> None:
    f = facts({"sgl-kernel": "0.3.21", "sglang-kernel": "0.4.5"}, kernel_file_version="0.4.5")
    [kernel] = by_check(doctor.checks.installed.check_versions(f), "sgl-kernel")
    assert kernel.level == "warn"
    assert "whichever was installed last wins" in kernel.detail
    assert "version.py says 0.4.5" in kernel.detail
    assert f.kernel() == ("sglang-kernel", "0.4.5")


def test_sglang_requires_python() -> None:
    f = facts({"sglang": "0.5.23"}, requires_python={"sglang": ">=3.11"}, python="3.10.14")
    [python] = by_check(doctor.checks.installed.check_versions(f), "python")
    assert python.level == "fail" and ">=3.11" in python.detail


def test_cpu_torch_on_gpu_machine_fails() -> None:
    f = facts({"torch": "2.9.1+cpu"}, caps=[(9, 0)], torch_build="cpu")
    [torch] = by_check(doctor.checks.installed.check_versions(f), "torch")
    assert torch.level == "fail" and "download.pytorch.org/whl/cu128" in torch.remedy


def test_torch_newer_than_driver_fails() -> None:
    f = facts({"torch": "2.11.0"}, caps=[(9, 0)], torch_build="cuda", torch_cuda="13.0",
              driver_cuda=12020, driver_version="535.86.10")
    [torch] = by_check(doctor.checks.installed.check_versions(f), "torch")
    assert torch.level == "fail" and "supports CUDA 12.2 only" in torch.detail
    assert "whl/cu128" in torch.remedy
    f.driver_cuda = 13000
    assert by_check(doctor.checks.installed.check_versions(f), "torch")[0].level == "ok"


def test_broken_torch_is_reported_and_gpus_still_found(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_facts: Facts) -> bool:
        raise ImportError("libtorch_cuda.so: cannot open shared object file")

    monkeypatch.setattr(doctor.facts, "_gpus_from_torch", broken)
    monkeypatch.delenv("SGLANG_SHIMS_GPU_CAPABILITY", raising=False)
    f = Facts(env=Environment(versions={"torch": "2.9.1"}), torch_dir=Path("/nonexistent"),
              torch_build="cuda", torch_cuda="12.8")
    doctor.facts._gather_gpus(f, use_torch=True)
    assert f.env.capabilities is not None  # nvidia-smi or "none found", never left unset
    [torch] = by_check(doctor.checks.installed.check_versions(f), "torch")
    assert torch.level == "fail" and "libtorch_cuda.so" in torch.detail


def test_mixed_gpu_architectures_warn() -> None:
    [gpu] = doctor.checks.gpu.check_gpus(facts(caps=[(9, 0), (12, 0)]))
    assert gpu.level == "warn" and "mixed architectures" in gpu.detail
    assert "CUDA_VISIBLE_DEVICES" in gpu.remedy
    [gpu] = doctor.checks.gpu.check_gpus(facts(caps=[(9, 0), (9, 0)]))
    assert gpu.level == "ok"


def test_gpu_override_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_SHIMS_GPU_CAPABILITY", "12.0,9.0")
    env = Environment()
    doctor.facts._gather_gpus(Facts(env=env), use_torch=False)
    assert env.capabilities == [(12, 0), (9, 0)]
    assert env.gpu_source == "SGLANG_SHIMS_GPU_CAPABILITY"


def test_bad_gpu_override_names_the_allowed_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """SGLANG_SHIMS_GPU_CAPABILITY=abc: one clear failing finding, detection goes on."""
    monkeypatch.setenv("SGLANG_SHIMS_GPU_CAPABILITY", "abc")
    f = Facts(env=Environment())
    doctor.facts._gather_gpus(f, use_torch=False)
    assert f.env.capabilities is not None  # detected without the override
    bad, *rest = doctor.checks.gpu.check_gpus(f)
    assert bad.level == "fail" and "SGLANG_SHIMS_GPU_CAPABILITY='abc'" in bad.detail
    assert "MAJOR.MINOR" in bad.detail and "9.0,12.0" in bad.detail
    assert "unset it" in bad.remedy
    assert rest and all("invalid literal" not in x.detail for x in rest)


def test_no_gpu_row_says_where_it_looked() -> None:
    f = facts()
    f.env.gpu_source = "torch sees none; no nvidia-smi on PATH"
    [gpu] = doctor.checks.gpu.check_gpus(f)
    assert gpu.detail == "no GPU found (torch sees none; no nvidia-smi on PATH)"
    gather_hermetic = doctor.facts.gather(hermetic())
    [gpu] = doctor.checks.gpu.check_gpus(gather_hermetic)
    assert "none found" not in gpu.detail and gpu.detail.count("(") == 1


# ---------------------------------------------------------------- hook activation


@pytest.mark.parametrize(("origin", "environ", "no_site", "pth", "level", "words"), [
    ("pth", {}, False, True, "ok", "installed by the .pth hook"),
    ("launch-site", {}, False, False, "ok", "the launcher's sitecustomize"),
    (None, {"SGLANG_SHIMS": " Off "}, False, True, "warn", "SGLANG_SHIMS=Off turns"),
    (None, {}, True, True, "warn", "python -S"),
    (None, {}, False, True, "fail", "did not install the import hook"),
    (None, {}, False, False, "fail", "no site-packages folder"),
])
def test_hook_state_is_told_apart(origin: str | None, environ: dict[str, str], no_site: bool,
                                  pth: bool, level: str, words: str) -> None:
    hook = doctor.checks.hook
    state = hook.HookState(origin is not None, origin, no_site)
    dirs = [Path("/site")] if pth else []
    found = hook.describe("hook", "this interpreter", state, environ, dirs)
    assert (found.check, found.level, words in found.detail) == ("hook", level, True), found
    assert bool(found.remedy) == (level != "ok")
    if level == "fail" and not pth:
        assert "sglang-shims launch" in found.remedy


def test_hook_is_checked_here_and_in_a_child() -> None:
    findings = diagnose(probe_import=False)
    [here] = by_check(findings, "hook")
    [child] = by_check(findings, "hook-child")
    assert here.level in LEVELS and child.level in LEVELS
    # the test process runs with the .pth processed or not; the child is a fresh python
    assert "interpreter" in here.detail and "process" in child.detail


# --------------------------------------------------------------------- fatbin


def fat_entry(kind: int, arch: int, flags: int = 0x11, payload: bytes = b"\x7fELF" + bytes(12),
              header_size: int = 64) -> bytes:
    head = struct.pack("<HHIQIIHHIIIQQQ", kind, 0x101, header_size, len(payload), 0, 0, 8, 1,
                       arch, 0, 0, flags, 0, 0)
    return head[:header_size] + bytes(max(0, header_size - len(head))) + payload


def container(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", elf.FATBIN_MAGIC, 1, 16, len(body)) + body


def test_fatbin_entries_and_variants() -> None:
    blob = container(
        fat_entry(2, 80),
        fat_entry(2, 90, 0x11 | FLAG_ARCH_SPECIFIC),
        fat_entry(2, 100, 0x1000011 | FLAG_FAMILY, header_size=96),
        fat_entry(1, 80, 0x8011),  # zstd-compressed PTX
    )
    entries = parse_fatbin(blob)
    assert [e.name for e in entries] == ["sm_80", "sm_90a", "sm_100f", "compute_80"]
    assert entries[3].compressed and not entries[0].compressed
    assert elf.arch_names(entries) == ["sm_80", "sm_90a", "sm_100f"]
    assert elf.arch_names(entries, ptx=True) == ["compute_80"]


def test_fatbin_several_containers_with_padding() -> None:
    blob = container(fat_entry(2, 80)) + bytes(8) + container() + container(fat_entry(2, 120))
    assert [e.name for e in parse_fatbin(blob)] == ["sm_80", "sm_120"]
    assert parse_fatbin(b"") == []
    assert parse_fatbin(bytes(40)) == []  # a zero tail is padding


@pytest.mark.parametrize("blob", [
    b"\x01\x02\x03\x04" + bytes(20),                              # no magic
    container(fat_entry(2, 80))[:-4],                              # truncated payload
    struct.pack("<IHHQ", elf.FATBIN_MAGIC, 1, 16, 4096) + bytes(64),  # container overruns
    container(struct.pack("<HHIQ", 2, 0x101, 32, 0) + bytes(16)),  # entry header too small
])
def test_fatbin_garbage_raises(blob: bytes) -> None:
    with pytest.raises(BinaryFormatError):
        parse_fatbin(blob)


@pytest.mark.parametrize(("name", "cap", "runs"), [
    ("sm_80", (8, 6), True),
    ("sm_80", (8, 9), True),
    ("sm_86", (8, 0), False),
    ("sm_80", (9, 0), False),
    ("sm_90a", (9, 0), True),
    ("sm_100a", (10, 0), True),
    ("sm_100a", (10, 3), False),
    ("sm_100f", (10, 3), True),
    ("sm_100f", (12, 0), False),
    ("sm_120a", (12, 0), True),
    ("sm_120a", (12, 1), False),
    ("sm_120", (12, 1), True),
    ("compute_80", (12, 0), True),
    ("compute_90", (8, 9), False),
    ("compute_90a", (10, 0), False),
])
def test_image_runs_on(name: str, cap: tuple[int, int], runs: bool) -> None:
    entry = doctor.rules.torch.entry_from_name(name)
    assert entry is not None and entry.name == name
    assert entry.runs_on(cap) is runs


# ------------------------------------------------------------------------ ELF


def make_elf(sections: list[tuple[str, int, bytes, int]], *, bits: int = 2) -> bytes:
    """A minimal 64-bit little-endian ELF: (name, type, data, link) per section, after
    the null section and .shstrtab (indices 0 and 1)."""
    every = [(".shstrtab", 3, b"", 0), *sections]
    names, name_at = b"\0", []
    for name, *_rest in every:
        name_at.append(len(names))
        names += name.encode() + b"\0"
    blobs = [names] + [data for _n, _t, data, _l in sections]
    body, offsets = b"", []
    for blob in blobs:
        offsets.append(64 + len(body))
        body += blob + bytes(-len(blob) % 8)
    headers = bytes(64)
    for (_name, kind, _data, link), at, offset, blob in zip(every, name_at, offsets, blobs,
                                                           strict=True):
        headers += struct.pack("<IIQQQQIIQQ", at, kind, 0, 0, offset, len(blob), link, 0, 8, 0)
    ident = b"\x7fELF" + bytes([bits, 1, 1]) + bytes(9)
    header = struct.pack("<16sHHIQQQIHHHHHH", ident, 3, 62, 1, 0, 0, 64 + len(body), 0, 64, 0, 0,
                         64, len(every) + 1, 1)
    return header + body + headers


def synthetic_library(tmp_path: Path, fatbin: bytes, needed: list[str], runpath: str = "",
                      name: str = "common_ops.abi3.so") -> Path:
    dynstr = b"\0"
    dynamic = b""
    for soname in needed:
        dynamic += struct.pack("<qQ", 1, len(dynstr))
        dynstr += soname.encode() + b"\0"
    if runpath:
        dynamic += struct.pack("<qQ", 29, len(dynstr))
        dynstr += runpath.encode() + b"\0"
    dynamic += struct.pack("<qQ", 0, 0)
    data = make_elf([(".dynstr", 3, dynstr, 0), (".dynamic", 6, dynamic, 2),
                     (".nv_fatbin", 1, fatbin, 0)])
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_elf_reader_sections_needed_runpath_fatbin(tmp_path: Path) -> None:
    fatbin = container(fat_entry(2, 80), fat_entry(2, 90, 0x11 | FLAG_ARCH_SPECIFIC))
    path = synthetic_library(tmp_path, fatbin, ["libcudart.so.12", "libnuma.so.1"],
                             runpath="$ORIGIN/../lib:/opt/x")
    info = inspect_library(path)
    assert info.sass == ["sm_80", "sm_90a"] and info.ptx == []
    assert info.needed == ("libcudart.so.12", "libnuma.so.1")
    assert info.search_path == (f"{tmp_path}/../lib", "/opt/x")
    with path.open("rb") as f:
        names = [s.name for s in elf.elf_sections(f)]
    assert names == ["", ".shstrtab", ".dynstr", ".dynamic", ".nv_fatbin"]


def test_elf_reader_rejects_other_files(tmp_path: Path) -> None:
    (tmp_path / "text.so").write_bytes(b"not an elf file at all" + bytes(64))
    (tmp_path / "elf32.so").write_bytes(make_elf([], bits=1))
    for name in ("text.so", "elf32.so"):
        with pytest.raises(BinaryFormatError):
            inspect_library(tmp_path / name)


def test_elf_reader_follows_extended_numbering(tmp_path: Path) -> None:
    """``e_shnum == 0`` and ``e_shstrndx == 0xFFFF``: the count and the names' index are in
    section 0's ``sh_size`` and ``sh_link`` (files with 65,280 sections or more)."""
    data = bytearray(make_elf([(".dynstr", 3, b"\0", 0)]))
    shoff, count = struct.unpack_from("<Q", data, 0x28)[0], struct.unpack_from("<H", data, 0x3C)[0]
    struct.pack_into("<HH", data, 0x3C, 0, 0xFFFF)
    struct.pack_into("<Q", data, shoff + 32, count)  # section 0's sh_size
    struct.pack_into("<I", data, shoff + 40, 1)  # section 0's sh_link: .shstrtab
    (tmp_path / "many.so").write_bytes(data)
    with (tmp_path / "many.so").open("rb") as f:
        assert [s.name for s in elf.elf_sections(f)] == ["", ".shstrtab", ".dynstr"]


def nvcc_path() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    default = Path("/usr/local/cuda/bin/nvcc")
    return str(default) if default.is_file() else None


def nvcc_compile(tmp_path: Path, *flags: str) -> Path:
    nvcc = nvcc_path()
    if nvcc is None:
        pytest.skip("nvcc is not installed: cannot compile a CUDA shared object")
    source = tmp_path / "k.cu"
    source.write_text("__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n"
                      "extern \"C\" void launch(float* x) { k<<<1, 32>>>(x); }\n")
    out = tmp_path / "k.so"
    proc = subprocess.run([nvcc, *flags, "-shared", "-Xcompiler", "-fPIC", str(source), "-o",
                           str(out)], capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    return out


def test_nvcc_compiled_library_reports_exactly_its_gencodes(tmp_path: Path) -> None:
    path = nvcc_compile(tmp_path, "-gencode", "arch=compute_80,code=sm_80",
                        "-gencode", "arch=compute_90a,code=sm_90a")
    info = inspect_library(path)
    assert info.sass == ["sm_80", "sm_90a"]
    assert info.ptx == []
    assert not any(n.startswith("libcudart") for n in info.needed)  # cudart is static by default


def test_nvcc_ptx_family_and_shared_cudart(tmp_path: Path) -> None:
    path = nvcc_compile(tmp_path, "-cudart", "shared",
                        "-gencode", "arch=compute_100f,code=sm_100f",
                        "-gencode", "arch=compute_90,code=compute_90")
    info = inspect_library(path)
    assert info.sass == ["sm_100f"]
    assert info.ptx == ["compute_90"]
    assert any(n.startswith("libcudart.so.") for n in info.needed)


# ----------------------------------------------------------------- arch coverage


def kernel_facts(tmp_path: Path, sass: list[FatbinEntry], caps: list[tuple[int, int]],
                 subdir: str = "sm100") -> Facts:
    blob = container(*(fat_entry(e.kind, e.arch, e.flags | 0x11) for e in sass))
    path = synthetic_library(tmp_path / "sgl_kernel" / subdir, blob, [])
    f = facts({"sgl-kernel": "0.3.8"}, caps=caps, kernel_dir=tmp_path / "sgl_kernel")
    f.libraries[subdir] = inspect_library(path)
    return f


def test_no_kernel_image_fails_with_triton_fallback(tmp_path: Path) -> None:
    images = [FatbinEntry(2, 80), FatbinEntry(2, 89), FatbinEntry(2, 90),
              FatbinEntry(2, 90, FLAG_ARCH_SPECIFIC)]
    [arch] = doctor.checks.arch.check_arch(kernel_facts(tmp_path, images, [(12, 0)]))
    assert arch.level == "fail"
    assert arch.detail.startswith("no kernel image for sm_120 in sgl_kernel/sm100/"
                                  "common_ops.abi3.so: it holds sm_80, sm_89, sm_90, sm_90a")
    assert "SGLANG_SHIMS_ENABLE=sgl-kernel-triton-fallback" in arch.remedy
    assert "+cu128" in arch.remedy


def test_loader_picks_sm90_only_on_hopper(tmp_path: Path) -> None:
    f = kernel_facts(tmp_path, [FatbinEntry(2, 90, FLAG_ARCH_SPECIFIC)], [(9, 0)], "sm90")
    f.libraries["sm100"] = LibraryInfo(tmp_path / "sgl_kernel/sm100/common_ops.abi3.so",
                                       (FatbinEntry(2, 80),), (), ())
    assert doctor.checks.arch.loader_library(f, (9, 0))[0] == "sm90"  # type: ignore[index]
    assert doctor.checks.arch.loader_library(f, (8, 6))[0] == "sm100"  # type: ignore[index]
    assert doctor.checks.arch.loader_library(f, None)[0] == "sm100"  # type: ignore[index]
    f.env.capabilities = [(9, 0), (8, 6), (12, 0)]
    found = {a.detail.split()[0]: a for a in doctor.checks.arch.check_arch(f)}
    assert found["sm_90"].level == "ok" and "sgl_kernel/sm90/" in found["sm_90"].detail
    assert found["sm_86"].level == "ok" and "sgl_kernel/sm100/" in found["sm_86"].detail
    assert found["no"].level == "fail" and "sm_120 in sgl_kernel/sm100/" in found["no"].detail


def test_arch_without_gpu_is_information(tmp_path: Path) -> None:
    [arch] = doctor.checks.arch.check_arch(kernel_facts(tmp_path, [FatbinEntry(2, 80)], []))
    assert arch.level == "info" and "sm_80; no PTX" in arch.detail


def test_ptx_covers_newer_gpu(tmp_path: Path) -> None:
    [arch] = doctor.checks.arch.check_arch(kernel_facts(tmp_path, [FatbinEntry(1, 80)], [(12, 0)]))
    assert arch.level == "ok" and "PTX compute_80" in arch.detail


# -------------------------------------------------------------- CUDA libraries


def lib_facts(tmp_path: Path, needed: list[str], torch: str = "2.9.1", **fields: Any) -> Facts:
    path = synthetic_library(tmp_path / "site" / "sgl_kernel" / "sm100", container(), needed)
    f = facts({"sgl-kernel": "0.3.21", "torch": torch}, kernel_dir=tmp_path / "site/sgl_kernel",
              torch_dir=tmp_path / "torch", torch_build="cuda", **fields)
    f.libraries["sm100"] = inspect_library(path)
    return f


def test_missing_cuda_library_fails_with_pip_remedy(tmp_path: Path) -> None:
    other = tmp_path / "cu13"
    other.mkdir()
    (other / "libcudart.so.13").touch()
    f = lib_facts(tmp_path, ["libc.so.6", "libcudart.so.12", "libnvrtc.so.12"], lib_dirs=[other])
    [libs] = doctor.checks.libs.check_libs(f)
    assert libs.level == "fail"
    assert "libcudart.so.12 (only libcudart.so.13 found), libnvrtc.so.12" in libs.detail
    assert "pip install nvidia-cuda-runtime-cu12 nvidia-cuda-nvrtc-cu12" in libs.remedy


def test_library_states(tmp_path: Path) -> None:
    loader, pip = tmp_path / "loader", tmp_path / "pip" / "nvidia" / "cuda_nvrtc" / "lib"
    for folder, name in ((loader, "libcudart.so.12"), (pip, "libnvrtc.so.12"),
                         (pip, "libcublas.so.12"), (tmp_path / "torch" / "lib", "libc10.so")):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).touch()
    needed = ["libcudart.so.12", "libnvrtc.so.12", "libcublas.so.12", "libc10.so"]
    # torch 2.7 neither links nor preloads nvrtc: pip's copy is off the loader's path
    f = lib_facts(tmp_path, needed, torch="2.7.1", lib_dirs=[loader], pip_lib_dirs=[pip],
                  torch_needed=frozenset({"libcublas.so.12"}))
    findings = doctor.checks.libs.check_libs(f)
    assert [x.level for x in findings] == ["warn"]
    assert "libnvrtc.so.12" in findings[0].detail and "libcublas" not in findings[0].detail
    assert findings[0].remedy == f"export LD_LIBRARY_PATH={pip}:$LD_LIBRARY_PATH"
    # torch 2.9 preloads nvrtc from pip's nvidia folder (torch/__init__.py _load_global_deps)
    f = lib_facts(tmp_path, needed, torch="2.9.1", lib_dirs=[loader], pip_lib_dirs=[pip],
                  torch_needed=frozenset({"libcublas.so.12"}))
    [ok] = doctor.checks.libs.check_libs(f)
    assert ok.level == "ok" and "libnvrtc.so.12 (via import torch)" in ok.detail
    assert "libcublas.so.12 (via import torch)" in ok.detail


def test_where_each_library_is_found(tmp_path: Path) -> None:
    """resolve_library's branches one by one: torch's own libraries from torch's folder,
    another library there is not torch's to load (torch 2.7 neither links nor preloads it),
    libcudart from CUDA home, which sgl_kernel preloads itself."""
    libs = tmp_path / "torch" / "lib"
    cuda = tmp_path / "cuda"
    for folder, name in ((libs, "libc10.so"), (libs, "libnvrtc.so.12"),
                         (cuda / "lib64", "libcudart.so.12")):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).touch()
    f = lib_facts(tmp_path, [], torch="2.7.1", cuda_home=str(cuda),
                  ldconfig={"libc.so.6": "/lib/libc.so.6"})
    resolve = doctor.checks.libs.resolve_library
    assert resolve(f, "libc10.so") == ("torch", str(libs / "libc10.so"))
    assert resolve(f, "libnvrtc.so.12") == ("off-path", str(libs / "libnvrtc.so.12"))
    assert resolve(f, "libcudart.so.12") == ("cuda-home", str(cuda / "lib64" / "libcudart.so.12"))
    assert resolve(f, "libcublas.so.12") == ("missing", "")


def test_without_torch_only_torchs_own_libraries_go_unreported(tmp_path: Path) -> None:
    """No torch installed: the kernel's torch libraries are sgl-kernel-abi's to report, once;
    a missing CUDA library is still this check's."""
    f = lib_facts(tmp_path, ["libc10.so", "libcudart.so.12"], ldconfig={"x": "y"})
    f.torch_dir = None
    [libs] = doctor.checks.libs.check_libs(f)
    assert libs.level == "fail" and "libcudart.so.12" in libs.detail
    assert "libc10" not in libs.detail
    f = lib_facts(tmp_path / "with", ["libc10.so"], ldconfig={"x": "y"})
    [libs] = doctor.checks.libs.check_libs(f)  # torch there, its library not: reported
    assert libs.level == "fail" and "libc10.so" in libs.detail


def test_a_library_pip_cannot_install_is_named_in_the_remedy() -> None:
    remedy = doctor.checks.libs.lib_remedy(["libcudart.so.12", "libfoo.so.1"])
    assert remedy.startswith("pip install nvidia-cuda-runtime-cu12; install what provides"
                             " libfoo.so.1, or put")
    assert "install what provides" not in doctor.checks.libs.lib_remedy(["libcudart.so.12"])


# ------------------------------------------------------------------- import probe


def fake_kernel(root: Path, message: str) -> Path:
    package = root / "sgl_kernel"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"raise ImportError({message!r})\n")
    return root


def test_probe_classifies_torch_abi_mismatch(tmp_path: Path) -> None:
    where = fake_kernel(tmp_path, "/site-packages/sgl_kernel/sm100/common_ops.abi3.so: "
                                  f"undefined symbol: {ABI_SYMBOL}")
    ok, output = probe_import(where, timeout=60)
    assert ok is False and ABI_SYMBOL in output
    failure = classify_import_error(output)
    assert failure.kind == "torch-abi" and failure.symbol == ABI_SYMBOL
    assert "this is a torch ABI mismatch, not a missing GPU arch" in failure.summary
    if shutil.which("c++filt"):
        assert failure.demangled.startswith("c10::cuda::c10_cuda_check_implementation(")


def test_diagnose_runs_the_probe_on_the_installed_kernel(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    where = fake_kernel(tmp_path, "common_ops.abi3.so: undefined symbol: " + ABI_SYMBOL)
    monkeypatch.syspath_prepend(str(where))
    env = Environment(versions={"sgl-kernel": "0.3.18", "torch": "2.14.1"}, capabilities=[])
    findings = diagnose(env, probe_import=True, use_torch=False)
    [probe] = by_check(findings, "sgl-kernel-import")
    assert probe.level == "fail"
    assert "this is a torch ABI mismatch, not a missing GPU arch" in probe.detail
    [abi] = by_check(findings, "sgl-kernel-abi")
    assert abi.level == "fail" and "pip install 'torch==2.8.0'" in abi.remedy
    assert probe.remedy == "the same as for sgl-kernel-abi above"  # said once


def test_probe_succeeds_and_times_out(tmp_path: Path) -> None:
    good = tmp_path / "good"
    (good / "sgl_kernel").mkdir(parents=True)
    (good / "sgl_kernel" / "__init__.py").write_text("")
    assert probe_import(good)[0] is True
    slow = tmp_path / "slow"
    (slow / "sgl_kernel").mkdir(parents=True)
    (slow / "sgl_kernel" / "__init__.py").write_text("import time\ntime.sleep(30)\n")
    assert probe_import(slow, timeout=1)[0] is None


@pytest.mark.parametrize(("text", "kind"), [
    ("ImportError: x.so: undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSsb", "torch-abi"),
    ("ImportError: x.so: undefined symbol: _ZNK3c106SymInt6sym_neERKS0_", "torch-abi"),
    ("ImportError: common_ops.abi3.so: undefined symbol: cuGreenCtxDestroy", "driver-too-old"),
    ("ImportError: libnvrtc.so.12: cannot open shared object file: No such file or directory",
     "cuda-runtime"),
    ("ImportError: libnuma.so.1: cannot open shared object file: No such file", "library-missing"),
    ("RuntimeError: Could not find CUDA lib directory.", "cuda-lib-dir"),
    ("RuntimeError: RMSNorm failed with error code no kernel image is available for execution",
     "no-kernel-image"),
    ("ModuleNotFoundError: No module named 'sgl_kernel'", "not-installed"),
    ("ModuleNotFoundError: No module named 'torch'", "dependency-missing"),
    ("ValueError: something else entirely", "unknown"),
])
def test_import_error_classification(text: str, kind: str) -> None:
    assert classify_import_error(text).kind == kind


def test_pre_cxx11_abi_is_named() -> None:
    if not shutil.which("c++filt"):
        pytest.skip("c++filt is not installed")
    failure = classify_import_error("undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSsb")
    assert "pre-C++11" in failure.summary


def test_a_missing_torch_library_asks_for_torch_again_not_for_the_library() -> None:
    """libc10.so missing: torch's own install is broken, which no system package fixes; any
    other missing library gets the install line for what provides it."""
    f = facts({"sgl-kernel": "0.3.21", "torch": "2.9.1"})
    own = doctor.checks.probe.import_failure_finding(f, classify_import_error(
        "ImportError: libc10.so: cannot open shared object file: No such file or directory"))
    assert own.remedy == "reinstall torch (its own libraries are missing): pip install " \
        "--force-reinstall torch"
    other = doctor.checks.probe.import_failure_finding(f, classify_import_error(
        "ImportError: libnuma.so.1: cannot open shared object file: No such file"))
    assert "reinstall torch" not in other.remedy and "libnuma" in other.remedy


def test_driver_failure_remedy() -> None:
    f = facts({"sgl-kernel": "0.2.7"})
    finding = doctor.checks.probe.import_failure_finding(f, classify_import_error(
        "undefined symbol: cuGreenCtxStreamCreate"))
    assert finding.level == "fail" and "0.3.6.post1" in finding.remedy


# ------------------------------------------------------------------ sglang pins

OLD_STYLE = [  # sglang 0.4.9.post2 METADATA, abridged
    'python-multipart; extra == "runtime-common"',
    'transformers==4.53.0; extra == "runtime-common"',
    'sglang[runtime_common]; extra == "srt"',
    'sgl-kernel==0.2.5; extra == "srt"',
    'torch==2.7.1; extra == "srt"',
    'flashinfer_python==0.2.7.post1; extra == "srt"',
    'sglang[runtime_common]; extra == "blackwell"',
    'torch==2.7.1; extra == "blackwell"',
    'vllm==0.6.7.dev2; extra == "srt-hip"',
]
NEW_STYLE = [  # sglang 0.5.4.post1 METADATA, abridged
    "flashinfer_python==0.4.1", "sgl-kernel==0.3.16.post4", "torch==2.8.0",
    "transformers==4.57.1", 'torch==2.9.0; extra == "cu130"',
]


def test_pins_follow_the_srt_extra() -> None:
    pins = {(p.dist, p.spec, p.default) for p in sglang_pins(OLD_STYLE)}
    assert ("transformers", "==4.53.0", True) in pins
    assert ("sgl-kernel", "==0.2.5", True) in pins
    assert ("flashinfer-python", "==0.2.7.post1", True) in pins
    assert ("torch", "==2.7.1", False) in pins  # blackwell's copy is an alternative


def test_pin_mismatch_warns_and_alternative_extra_informs() -> None:
    base = {"sglang": "0.5.4.post1", "flashinfer-python": "0.4.1", "transformers": "4.57.1"}
    f = facts({**base, "sgl-kernel": "0.3.16.post4", "torch": "2.9.0+cu130"},
              requires={"sglang": NEW_STYLE})
    levels = {x.level: x for x in doctor.checks.pins.check_pins(f)}
    assert set(levels) == {"ok", "info"}
    assert "[cu130]" in levels["info"].detail
    f = facts({**base, "sglang-kernel": "0.4.5", "torch": "2.8.0"}, requires={"sglang": NEW_STYLE})
    [warn] = [x for x in doctor.checks.pins.check_pins(f) if x.level == "warn"]
    assert "pins sgl-kernel==0.3.16.post4; sglang-kernel 0.4.5 is installed" in warn.detail
    assert warn.remedy.startswith("pip uninstall -y sglang-kernel && pip install "
                                  "'sgl-kernel==0.3.16.post4'")


def test_pinned_but_missing_warns() -> None:
    f = facts({"sglang": "0.5.4.post1", "torch": "2.8.0"}, requires={"sglang": NEW_STYLE})
    missing = [x.detail for x in doctor.checks.pins.check_pins(f) if x.level == "warn"]
    assert any("distributions that are not installed" in d and "transformers==4.57.1" in d
               for d in missing)


@pytest.mark.wheels
def test_pins_in_real_sglang_wheels() -> None:
    """Every cached sglang wheel from 0.4.6 on pins torch and a kernel, under some extra."""
    from sglang_shims.testing import wheels

    checked = 0
    for version in ("0.4.6.post1", "0.4.9.post2", "0.5.1", "0.5.5", "0.5.9", "0.5.10rc0"):
        wheel = wheels.fetch("sglang", version)  # cached; downloaded once if missing
        with zipfile.ZipFile(wheel) as archive:
            meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            text = archive.read(meta).decode()
        lines = [ln.split(": ", 1)[1] for ln in text.splitlines()
                 if ln.startswith("Requires-Dist: ")]
        default = {p.dist for p in sglang_pins(lines) if p.default}
        assert "torch" in default, version
        assert default & {"sgl-kernel", "sglang-kernel"}, version
        checked += 1
    assert checked == 6


@pytest.mark.wheels
def test_kernel_table_agrees_with_every_cached_sglang_release() -> None:
    """sglang pins a kernel and a torch together; the table must call that pair ok."""
    from sglang_shims.testing import wheels

    wheels.fetch("sglang", "0.5.1")  # at least one release with a tabled pair, whatever ran first
    checked = 0
    for wheel in sorted(wheels.cache_dir().glob("sglang-*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            text = archive.read(meta).decode()
        lines = [ln.split(": ", 1)[1] for ln in text.splitlines()
                 if ln.startswith("Requires-Dist: ")]
        pins = {p.dist: p.spec for p in sglang_pins(lines) if p.default}
        kernel = next(((d, pins[d]) for d in ("sgl-kernel", "sglang-kernel") if d in pins), None)
        if kernel is None or "torch" not in pins or not kernel[1].startswith("=="):
            continue
        versions = {kernel[0]: kernel[1][2:], "torch": pins["torch"].lstrip("=")}
        [abi] = doctor.checks.abi.check_abi(facts(versions))
        assert abi.level in ("ok", "info"), (wheel.name, abi.detail)
        checked += abi.level == "ok"
    assert checked


# ------------------------------------------------------------------------ rules


def test_rule_table_is_well_formed() -> None:
    ids = [r.id for r in doctor.rules.RULES]
    assert len(ids) == len(set(ids))
    for r in doctor.rules.RULES:
        assert r.url.startswith("https://github.com/") and r.describe()
        assert bool(r.wider) == (r.when is not None and r.patch is not None), r.id
        assert r.evaluate(facts()) is None, r.id  # nothing installed: nothing fires


def test_fused_marlin_moe() -> None:
    bad = {"sglang": "0.5.1", "sgl-kernel": "0.3.18"}
    found = verdict("sgl-kernel-missing-fused-marlin-moe", facts(bad))
    assert found is not None and found.level == "warn"
    assert found.detail.endswith("[sgl-kernel-missing-fused-marlin-moe: "
                                 "https://github.com/sgl-project/sglang/issues/8654]")
    off = facts(bad, environ={"SGLANG_SHIMS_DISABLE": "sgl-kernel-fused-marlin-moe"})
    assert verdict("sgl-kernel-missing-fused-marlin-moe", off).level == "fail"  # type: ignore[union-attr]
    assert verdict("sgl-kernel-missing-fused-marlin-moe",
                   facts({"sglang": "0.5.6", "sgl-kernel": "0.3.18"})) is None
    assert verdict("sgl-kernel-missing-fused-marlin-moe",
                   facts({"sglang": "0.5.1", "sgl-kernel": "0.3.17.post2"})) is None


def test_dist_renamed() -> None:
    requires = {"sglang": ["sgl-kernel==0.3.21"]}
    f = facts({"sglang": "0.5.9", "sglang-kernel": "0.4.1"}, requires=requires)
    found = verdict("sgl-kernel-dist-renamed", f)
    assert found is not None and found.level == "warn"
    assert "pip uninstall -y sglang-kernel && pip install 'sgl-kernel==0.3.21'" in found.remedy
    f.environ = {"SGLANG_SHIMS": "0"}
    assert verdict("sgl-kernel-dist-renamed", f).level == "fail"  # type: ignore[union-attr]
    assert verdict("sgl-kernel-dist-renamed",
                   facts({"sglang": "0.5.10", "sglang-kernel": "0.4.1"})) is None
    assert verdict("sgl-kernel-dist-renamed", facts(
        {"sglang": "0.5.9", "sglang-kernel": "0.4.1", "sgl-kernel": "0.3.21"})) is None


def test_kernel_not_installed() -> None:
    f = facts({"sglang": "0.5.5"}, requires={"sglang": ["sgl-kernel==0.3.16.post5"]},
              torch_build="cuda")
    found = verdict("sgl-kernel-not-installed", f)
    assert found is not None and found.level == "fail"
    assert found.remedy == "pip install 'sgl-kernel==0.3.16.post5'"
    assert verdict("sgl-kernel-not-installed", facts({"sglang": "0.4.2"})) is None


def test_cuda_major_variant() -> None:
    f = facts({"sgl-kernel": "0.3.21", "torch": "2.9.1+cu130"}, torch_cuda="13.0",
              torch_build="cuda")
    found = verdict("sgl-kernel-cuda-major-variant", f)
    assert found is not None and found.level == "warn"
    assert "--index-url https://docs.sglang.ai/whl/cu130/" in found.remedy
    f = facts({"sgl-kernel": "0.3.18+cu130", "torch": "2.9.0+cu130"}, torch_cuda="13.0",
              torch_build="cuda")
    assert verdict("sgl-kernel-cuda-major-variant", f) is None
    f.libraries["sm100"] = LibraryInfo(Path("x.so"), (), ("libcudart.so.12",), ())
    found = verdict("sgl-kernel-cuda-major-variant", f)
    assert found is not None and "links libcudart.so.12" in found.detail


def test_green_ctx_driver() -> None:
    found = verdict("sgl-kernel-green-ctx-driver",
                    facts({"sgl-kernel": "0.2.7"}, driver_cuda=12020))
    assert found is not None and found.level == "fail" and "CUDA 12.2" in found.detail
    found = verdict("sgl-kernel-green-ctx-driver",
                    facts({"sgl-kernel": "0.2.7"}, driver_version="535.86.10"))
    assert found is not None
    cases: tuple[tuple[dict[str, str], dict[str, Any]], ...] = (
        ({"sgl-kernel": "0.2.7"}, {"driver_cuda": 12050}),
        ({"sgl-kernel": "0.3.6.post1"}, {"driver_cuda": 12020}),
        ({"sgl-kernel": "0.2.5"}, {"driver_cuda": 12020}),
        ({"sgl-kernel": "0.2.7"}, {}))
    for versions, fields in cases:
        assert verdict("sgl-kernel-green-ctx-driver", facts(versions, **fields)) is None


def test_cudart_preload() -> None:
    base: dict[str, Any] = {"torch_build": "cuda", "cuda_home": "/usr/local/cuda",
                            "cuda_home_from": "the default"}
    found = verdict("sgl-kernel-cudart-preload",
                    facts({"sgl-kernel": "0.3.16"}, cuda_home_has_libdir=False, **base))
    assert found is not None and found.level == "fail" and "0.3.18.post3" in found.remedy
    assert verdict("sgl-kernel-cudart-preload",
                   facts({"sgl-kernel": "0.3.16"}, cuda_home_has_libdir=True, **base)) is None
    assert verdict("sgl-kernel-cudart-preload",
                   facts({"sgl-kernel": "0.3.18.post3"}, cuda_home_has_libdir=False,
                         **base)) is None


def test_cudart_preload_with_the_patch() -> None:
    """sgl-kernel 0.3.14 with a CUDA torch on a host without a toolkit (issue 11333): the
    preload patch sets CUDA_HOME to pip's runtime, so a warning; a CUDA_HOME the user set
    is never changed by it, so there the failure stands."""
    versions = {"sgl-kernel": "0.3.14", "torch": "2.8.0"}
    base: dict[str, Any] = {"torch_build": "cuda", "cuda_home": "/usr/local/cuda",
                            "cuda_home_has_libdir": False}
    found = verdict("sgl-kernel-cudart-preload", facts(versions, cuda_home_from="the default",
                                                        **base))
    assert found is not None and found.level == "warn"
    assert "patch sgl-kernel-cuda-runtime-preload" in found.detail
    assert "nvidia/cuda_runtime" in found.remedy
    found = verdict("sgl-kernel-cudart-preload", facts(versions, cuda_home_from="CUDA_HOME",
                                                        **base))
    assert found is not None and found.level == "fail" and "CUDA_HOME" in found.remedy
    off = facts(versions, cuda_home_from="the default",
                environ={"SGLANG_SHIMS_DISABLE": "sgl-kernel-cuda-runtime-preload"}, **base)
    found = verdict("sgl-kernel-cudart-preload", off)
    assert found is not None and found.level == "fail" and "is off" in found.detail


def test_torch_triton_pair() -> None:
    requires = {"torch": ["triton==3.4.0", 'pytorch-triton-rocm==3.4.0; platform_system == "Nope"']}
    found = verdict("torch-triton-pair-mismatch",
                    facts({"torch": "2.8.0", "triton": "3.5.1", "pytorch-triton-rocm": "1.0"},
                          requires=requires))
    assert found is not None and found.level == "warn"
    assert found.remedy == "pip install 'triton==3.4.0'"
    assert verdict("torch-triton-pair-mismatch",
                   facts({"torch": "2.8.0", "triton": "3.4.0"}, requires=requires)) is None


def test_triton_cache_symbols() -> None:
    found = verdict("triton-cache-symbols-removed", facts({"sglang": "0.4.9", "triton": "3.4.0"}))
    assert found is not None and found.level == "warn" and "pull/7832" in found.detail
    off = facts({"sglang": "0.4.9", "triton": "3.4.0"},
                environ={"SGLANG_SHIMS_DISABLE": "triton-cache-helpers-removed"})
    assert verdict("triton-cache-symbols-removed", off).level == "fail"  # type: ignore[union-attr]
    rocm = verdict("triton-cache-symbols-removed",
                   facts({"sglang": "0.4.6", "pytorch-triton-rocm": "3.4.0"}))
    assert rocm is not None and "pip install 'pytorch-triton-rocm<3.4'" in rocm.remedy
    for sglang, triton in (("0.4.9.post1", "3.4.0"), ("0.4.9", "3.3.1"), ("0.1.24", "3.4.0")):
        assert verdict("triton-cache-symbols-removed",
                       facts({"sglang": sglang, "triton": triton})) is None


@pytest.mark.parametrize(("cap", "triton", "env", "level"), [
    ((12, 1), "3.5.1", {}, "fail"),
    ((10, 3), "3.4.0", {}, "fail"),
    ((12, 1), "3.6.0", {}, None),
    ((11, 0), "3.6.0", {}, "fail"),
    ((12, 1), "3.5.1", {"TRITON_PTXAS_PATH": "/usr/local/cuda/bin/ptxas"}, None),
    ((12, 0), "3.2.0", {}, "warn"),
    ((12, 0), "3.4.0", {}, None),
    ((9, 0), "3.1.0", {}, None),
])
def test_ptxas_blackwell(cap: tuple[int, int], triton: str, env: dict[str, str],
                         level: str | None) -> None:
    found = verdict("triton-ptxas-too-old-blackwell",
                    facts({"triton": triton}, caps=[cap], environ=env))
    assert (found.level if found else None) == level


def test_torch_lacks_arch() -> None:
    old = facts({"torch": "2.6.0+cu124"}, caps=[(12, 0)], torch_cuda="12.4", torch_build="cuda")
    found = verdict("torch-wheel-lacks-sm120", old)
    assert found is not None and found.level == "fail" and "cu128" in found.remedy
    listed = facts({"torch": "2.9.1"}, caps=[(12, 0)], torch_cuda="12.8", torch_build="cuda",
                   torch_arch_list=["sm_80", "sm_90", "sm_100", "sm_120"])
    assert verdict("torch-wheel-lacks-sm120", listed) is None
    listed.torch_arch_list = ["sm_50", "sm_80", "sm_90"]
    assert verdict("torch-wheel-lacks-sm120", listed) is not None
    # a CUDA 12.4 build has code for Hopper: only sm_100 and newer need CUDA >= 12.8
    hopper = facts({"torch": "2.6.0+cu124"}, caps=[(9, 0)], torch_cuda="12.4",
                   torch_build="cuda")
    assert verdict("torch-wheel-lacks-sm120", hopper) is None


def test_config_register_collision() -> None:
    found = verdict("tf-qwen2-5-vl-config-register",
                    facts({"sglang": "0.4.4", "transformers": "4.49.0"}))
    assert found is not None and "Qwen2_5_VLConfig" in found.detail
    found = verdict("tf-config-register-collision",
                    facts({"sglang": "0.5.19", "transformers": "5.13.0"}))
    assert found is not None and "qwen3_asr" in found.detail and found.level == "warn"
    for rule_id in ("tf-qwen2-5-vl-config-register", "tf-config-register-collision"):
        for sglang, tf in (("0.4.4.post2", "4.50.0"), ("0.5.20", "5.13.0"), ("0.5.19", "5.12.1")):
            assert verdict(rule_id, facts({"sglang": sglang, "transformers": tf})) is None


def test_qwen2_5_vl_rule_quotes_the_first_error() -> None:
    """sglang 0.4.3.post1-post2 on transformers 4.49 fail on the removed mllama helper
    before the registration (met on the real wheels); 0.4.3.post3 defines the helper
    itself and meets the collision first.  With the patches on (the default) the rule
    warns and says what they do; with one off it fails and says how to turn it on."""
    env = {"sglang": "0.4.3.post2", "transformers": "4.49.0"}
    first = verdict("tf-qwen2-5-vl-config-register", facts(env))
    assert first is not None and first.level == "warn"
    assert ("ImportError: cannot import name 'is_valid_list_of_images' from "
            "'transformers.models.mllama.image_processing_mllama'") in first.detail
    assert ("tf449-mllama-valid-images-removed and tf449-qwen2-5-vl-register-collision (on)"
            " puts the helper back") in first.detail
    assert "transformers==4.48.3" in first.remedy and ">= 0.4.4.post2" in first.remedy
    off = verdict("tf-qwen2-5-vl-config-register",
                  facts(env, environ={"SGLANG_SHIMS_DISABLE": "tf449-mllama-valid-images-removed"}))
    assert off is not None and off.level == "fail"
    assert "patch tf449-mllama-valid-images-removed (" in off.detail
    assert off.remedy.startswith("turn the patch on (SGLANG_SHIMS_ENABLE="
                                 "tf449-mllama-valid-images-removed,"
                                 "tf449-qwen2-5-vl-register-collision); pip install")
    later = verdict("tf-qwen2-5-vl-config-register",
                    facts({"sglang": "0.4.3.post3", "transformers": "4.49.0"}))
    assert later is not None and later.level == "warn"
    assert "is_valid_list_of_images" not in later.detail
    assert "is already used by a Transformers model" in later.detail
    assert "tf449-qwen2-5-vl-register-collision (on) registers" in later.detail


def test_rope_theta_silent_wrong_output() -> None:
    machine = {"sglang": "0.5.6", "transformers": "5.0.0"}
    pins = {"sglang": ["transformers==4.57.1"]}
    off = {"SGLANG_SHIMS_DISABLE": "tf5-rope-theta-moved"}
    found = verdict("tf5-rope-theta-moved", facts(machine, requires=pins, environ=off))
    assert found is not None and found.level == "fail" and "is off" in found.detail
    assert "silently" in found.detail and "pull/14745" in found.detail
    assert found.remedy.startswith("turn the patch on (SGLANG_SHIMS_ENABLE=tf5-rope-theta-moved)")
    assert "pip install 'transformers==4.57.1'" in found.remedy
    # with the patch on (the default) the doctor says it is covered, as for fused_marlin_moe
    covered = verdict("tf5-rope-theta-moved", facts(machine, requires=pins))
    assert covered is not None and covered.level == "warn"
    assert "tf5-rope-theta-moved (on: default)" in covered.detail
    assert covered.remedy.startswith("pip install 'transformers==4.57.1'")
    own_pin = facts({"sglang": "0.5.6.post1", "transformers": "5.0.0rc0"},
                    requires={"sglang": ["transformers==5.0.0rc0"]})
    assert "transformers==4.57.1" in verdict("tf5-rope-theta-moved", own_pin).remedy  # type: ignore[union-attr]
    for sglang, tf in (("0.5.10rc0", "5.3.0"), ("0.5.9", "4.57.1")):
        assert verdict("tf5-rope-theta-moved",
                       facts({"sglang": sglang, "transformers": tf})) is None


def test_kernels_hub_revision() -> None:
    found = verdict("tf-kernels-hub-revision", facts({"kernels": "0.15.1",
                                                      "transformers": "5.8.1"}))
    assert found is not None and found.remedy.startswith("pip install 'kernels<0.15'")
    assert found.level == "fail"  # no sglang: the patch does not act, the break stands
    with_sglang = verdict("tf-kernels-hub-revision", facts(
        {"kernels": "0.15.1", "transformers": "5.8.1", "sglang": "0.5.11"}))
    assert with_sglang is not None and with_sglang.level == "warn"
    assert "kernels-revision-required (on: default)" in with_sglang.detail
    off = verdict("tf-kernels-hub-revision", facts(
        {"kernels": "0.15.1", "transformers": "5.8.1", "sglang": "0.5.11"},
        environ={"SGLANG_SHIMS_PATCH_KERNELS_REVISION_REQUIRED": "0"}))
    assert off is not None and off.level == "fail" and "is off" in off.detail
    # The break needs no sglang (the rule is wider than its patch); transformers 5.9-5.12.1
    # still build the entries (read from the wheels, see the patch's range).
    assert verdict("tf-kernels-hub-revision", facts({"kernels": "0.15.2",
                                                     "transformers": "5.12.1"})) is not None
    for kernels, tf in (("0.14.1", "5.8.1"), ("0.15.2", "5.13.0")):
        assert verdict("tf-kernels-hub-revision",
                       facts({"kernels": kernels, "transformers": tf})) is None


def test_alloc_conf() -> None:
    new, old = "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"
    seg = "expandable_segments:True"
    differ = verdict("alloc-conf-env-rename",
                     facts({"torch": "2.10.0"}, environ={new: seg, old: "x"}))
    assert differ is not None and differ.level == "warn"
    only_new = verdict("alloc-conf-env-rename", facts({"torch": "2.9.1"}, environ={new: seg}))
    assert only_new is not None and f"export {old}=" in only_new.remedy
    assert verdict("alloc-conf-env-rename", facts({"torch": "2.10.0"}, environ={new: seg})) is None
    assert verdict("alloc-conf-env-rename", facts({"torch": "2.9.1"}, environ={old: seg})) is None


def test_memory_saver_vs_expandable() -> None:
    env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    assert verdict("memory-saver-vs-expandable",
                   facts({"torch-memory-saver": "0.0.8"}, environ=env)) is not None
    assert verdict("memory-saver-vs-expandable", facts({}, environ=env)) is None


def test_flashinfer_mismatch_never_suggests_bypass() -> None:
    f = facts({"flashinfer-python": "0.6.10", "flashinfer-cubin": "0.6.8.post1",
               "flashinfer-jit-cache": "0.6.10+cu130"}, torch_cuda="13.0")
    found = verdict("flashinfer-cubin-jitcache-mismatch", f)
    assert found is not None and found.level == "fail"
    assert "flashinfer-cubin 0.6.8.post1" in found.detail
    assert "jit-cache" not in found.detail  # same public version: not a mismatch
    assert "pip install 'flashinfer-cubin==0.6.10'" in found.remedy
    assert "FLASHINFER_DISABLE_VERSION_CHECK" not in found.remedy
    f = facts({"flashinfer-python": "0.6.10", "flashinfer-jit-cache": "0.6.9+cu129"})
    found = verdict("flashinfer-cubin-jitcache-mismatch", f)
    assert found is not None and "--index-url https://flashinfer.ai/whl/cu" in found.remedy


def test_flashinfer_version_check_disabled() -> None:
    found = verdict("flashinfer-version-check-disabled",
                    facts(environ={"FLASHINFER_DISABLE_VERSION_CHECK": "1"}))
    assert found is not None and found.level == "warn"
    assert "[flashinfer-version-check-disabled: https://github.com/" in found.detail
    assert verdict("flashinfer-version-check-disabled",
                   facts(environ={"FLASHINFER_DISABLE_VERSION_CHECK": "0"})) is None


def test_flashinfer_nvcc() -> None:
    base = {"flashinfer-python": "0.6.3"}
    assert verdict("flashinfer-sm120-nvcc128", facts(base, caps=[(12, 0)], nvcc="/x/nvcc",
                                                     nvcc_version="12.8")) is not None
    assert verdict("flashinfer-sm120-nvcc128", facts(base, caps=[(12, 0)],
                                                     nvcc_version="12.9")) is None
    assert verdict("flashinfer-sm120-nvcc128", facts(base, caps=[(9, 0)],
                                                     nvcc_version="12.8")) is None
    # no flashinfer installed: nothing of it will compile, whatever the toolkit
    assert verdict("flashinfer-sm120-nvcc128", facts({}, caps=[(12, 0)], nvcc="/x/nvcc",
                                                     nvcc_version="12.8")) is None


def test_every_rule_finding_cites_its_source() -> None:
    f = facts({"sglang": "0.4.9", "triton": "3.4.0", "kernels": "0.15.1",
               "transformers": "5.8.1"})
    findings = doctor.checks.known_bad.check_rules(f)
    assert {x.check for x in findings} >= {"triton-cache-symbols-removed",
                                            "tf-kernels-hub-revision", "tf5-rope-theta-moved"}
    for x in findings:
        assert f"[{x.check}: https://" in x.detail and x.remedy


def test_citations_are_public_urls_or_files_in_this_repository() -> None:
    """A finding sends its reader to an upstream report (a URL) or to a page of this
    repository; no source of the doctor names a note the reader does not have."""
    import re

    root = Path(doctor.__file__).parent
    sources = {p: p.read_text(encoding="utf-8") for p in root.rglob("*.py")}
    assert len(sources) > 20  # the checks and the rules are all read
    for path, text in sources.items():
        assert not re.search(r"breakages? #", text), path
        for named in re.findall(r"[\w./-]+\.md\b", text):
            assert (REPO / named).is_file(), (path, named)


# --------------------------------------------------------------- robustness


def test_diagnose_on_this_machine_is_quick_and_never_raises() -> None:
    # Measured on an H200 with torch 2.11: 4.2 s, of which 3.2 s is `import torch`
    # (for the GPU query); 0.1 s with use_torch=False.  Without a GPU: 0.1 s.
    for use_torch, limit in ((False, 3.0), (True, 8.0)):
        start = time.monotonic()
        findings = diagnose(use_torch=use_torch)
        took = time.monotonic() - start
        assert took < limit, f"diagnose(use_torch={use_torch}) took {took:.1f} s"
        assert findings and all(isinstance(f, Finding) and f.level in LEVELS for f in findings)
        assert {"python", "sglang", "sgl-kernel", "torch", "gpu"} <= {f.check for f in findings}


def test_a_failing_check_becomes_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_facts: Facts) -> list[Finding]:
        raise RuntimeError("boom")

    monkeypatch.setattr(doctor.checks.gpu, "check_gpus", broken)
    fake = doctor.rules.Rule("x", "https://github.com/x", "t", broken)  # type: ignore[arg-type]
    monkeypatch.setattr(doctor.rules, "RULES", (fake,))
    findings = diagnose(hermetic({"sglang": "0.5.1"}))
    [gpu] = by_check(findings, "gpu")
    assert gpu.level == "warn" and "this check itself failed (RuntimeError: boom)" in gpu.detail
    assert by_check(findings, "x")[0].level == "warn"
    assert by_check(findings, "sglang")[0].level == "ok"


def test_gather_failure_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object, **_kwargs: object) -> Facts:
        raise OSError("disk on fire")

    monkeypatch.setattr(doctor, "gather", broken)
    [finding] = diagnose()
    assert finding.level == "warn" and "disk on fire" in finding.detail
    monkeypatch.undo()
    monkeypatch.setattr(doctor.facts, "_gather_lib_dirs", broken)
    findings = diagnose(probe_import=False)
    assert any(f.check == "doctor" and "library search path" in f.detail for f in findings)


def test_torch_version_file_is_read_without_import() -> None:
    source = textwrap.dedent("""\
        from typing import Optional
        __version__ = '2.9.1+cu128'
        cuda: Optional[str] = '12.8'
        hip: Optional[str] = None
    """)
    assert doctor.facts._assigned(source, "cuda") == "12.8"
    assert doctor.facts._assigned(source, "hip") is None


# ------------------------------------------------------------ rules vs their patches


def _around(spec: str) -> list[str | None]:
    """Versions at, just below and just above every bound in ``spec``; None: not installed."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    out: list[str | None] = [None, "0.0.1", "99.0"]
    for clause in SpecifierSet(spec):
        v = Version(clause.version)
        a, b, c = (*v.release, 0, 0)[:3]
        out += [str(v), f"{a}.{b}.{max(c - 1, 0)}", f"{a}.{b}.{c + 1}", f"{a}.{b + 1}.0"]
        if v.post is not None:
            out += [f"{a}.{b}.{c}.post{v.post + 1}", f"{a}.{b}.{c}.post{max(v.post - 1, 0)}"]
        if v.pre is None and v.post is None:
            out += [f"{v}rc0", f"{v}.post1", f"{v}.dev0"]
    return list(dict.fromkeys(out))


def _patch_rules() -> list[Any]:
    return [r for r in doctor.rules.RULES if r.patch is not None]


@pytest.mark.parametrize("rule_id", [r.id for r in _patch_rules()])
def test_rule_range_is_its_patchs_range(rule_id: str) -> None:
    """A rule tied to a patch fires exactly where the patch's manifest gates pass -- or,
    where the rule says its break is wider, everywhere they pass and somewhere else too.
    The gates come from the manifest on disk, read here with the catalog's own parser."""
    import itertools

    from sglang_shims.catalog.load import load
    from sglang_shims.engine.gates import check_gate

    rule = next(r for r in doctor.rules.RULES if r.id == rule_id)
    assert rule.patch is not None
    patch_gates = load().by_id()[rule.patch].requires
    gates = {g.dists[0]: g for g in (*patch_gates, *rule.gates())}
    grid = [_around(g.spec) for g in gates.values()]
    wider_somewhere = False
    for combo in itertools.product(*grid):
        f = facts(dict(zip(gates, combo, strict=True)))
        patch_acts = all(check_gate(g, f.env)[0] for g in patch_gates)
        fires = rule.evaluate(f) is not None
        if rule.when is None:
            assert fires == patch_acts, (combo, patch_acts)
        else:
            assert fires or not patch_acts, combo  # wider: never narrower than the patch
            wider_somewhere |= fires and not patch_acts
    assert rule.when is None or wider_somewhere, f"{rule_id}: `when` is not wider; drop it"


def test_serving_tier_remedy_without_sglang_is_install_sglang() -> None:
    """No sglang: the fallback does not apply because sglang is missing, and the remedy
    says so -- not "install a kernel built for this torch and GPU"."""
    from sglang_shims.catalog.load import load
    from sglang_shims.cli.doctor.checks.serving_tier import _not_applicable_remedy

    gates = load().by_id()["sgl-kernel-triton-fallback"].requires
    assert _not_applicable_remedy(hermetic({"torch": "2.9.1"}), gates).startswith(
        "install sglang itself")
    assert _not_applicable_remedy(hermetic({"sglang": "0.5.5"}), gates).startswith(
        "install torch")
    assert "kernel built for this torch" in _not_applicable_remedy(
        hermetic({"sglang": "0.5.20", "torch": "2.9.1"}), gates)


def test_the_serving_tier_follows_the_kernel_checks() -> None:
    """A kernel that loads serves, whatever else failed; one that the ABI, arch or import
    check failed leaves it to the fallback, which says why."""
    import types

    from sglang_shims.cli.doctor.checks.serving_tier import serving_tier

    view = types.SimpleNamespace(
        manifest=types.SimpleNamespace(id="sgl-kernel-triton-fallback", requires=()),
        enabled=True, judged=types.SimpleNamespace(state="would-apply", reason=""))
    result = types.SimpleNamespace(views=[view])
    env = hermetic({"sgl-kernel": "0.3.21", "triton": "3.5.0"})
    other = Finding("cuda-libs", Level.FAIL, "libnuma.so.1 missing")
    served = serving_tier([other], env, result)
    assert served.level == Level.INFO and served.detail == (
        "sgl-kernel 0.3.21 (ahead-of-time kernels) serves sgl_kernel")
    abi = Finding("sgl-kernel-abi", Level.FAIL, "built for torch 2.8")
    fallback = serving_tier([other, abi], env, result)
    assert fallback.level == Level.INFO and fallback.detail == (
        "sglang-shims' fallback kernels would serve sgl_kernel: Triton (JIT, compiled for this"
        " GPU); because sgl-kernel-abi: built for torch 2.8")


# Rules whose other tests check only that they fire: here each meets the machine of its
# report (versions, GPU, driver, toolkit, variables) and must say the error users see
# and a remedy that fixes it (the remedies are the reports' own fixes).
REALISTIC: list[tuple[str, dict[str, str | None], dict[str, Any], str, list[str], list[str]]] = [
    ("triton-ptxas-too-old-blackwell", {"triton": "3.4.0", "torch": "2.8.0"},
     {"caps": [(12, 1)], "nvcc": "/usr/local/cuda-12.9/bin/nvcc", "nvcc_version": "12.9"},
     "fail", ["Value 'sm_121a' is not defined for option 'gpu-name'"],
     ["TRITON_PTXAS_PATH", "/usr/local/cuda-12.9/bin/ptxas", "triton>=3.6"]),
    ("tf-config-register-collision", {"sglang": "0.5.19", "transformers": "5.13.0"}, {},
     "warn", ["'qwen3_asr' is already used by a Transformers config"],
     ["transformers<5.13", "sglang to >= 0.5.20"]),
    ("memory-saver-vs-expandable", {"torch-memory-saver": "0.0.8", "torch": "2.8.0"},
     {"environ": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}},
     "warn", ["pause() then releases nothing"], ["unset expandable_segments"]),
    ("flashinfer-version-check-disabled", {"flashinfer-python": "0.4.1"},
     {"environ": {"FLASHINFER_DISABLE_VERSION_CHECK": "1"}},
     "warn", ["FLASHINFER_DISABLE_VERSION_CHECK=1"],
     ["unset FLASHINFER_DISABLE_VERSION_CHECK", "matching versions"]),
    ("flashinfer-sm120-nvcc128", {"flashinfer-python": "0.4.1"},
     {"caps": [(12, 0)], "nvcc": "/usr/local/cuda-12.8/bin/nvcc", "nvcc_version": "12.8"},
     "warn", ["FlashInfer requires GPUs with sm75 or higher"], ["CUDA >= 12.9 toolkit"]),
    # sglang PR 8090: cuGreenCtxStreamCreate needs a CUDA 12.5 driver; 12.4 has the others
    ("sgl-kernel-green-ctx-driver", {"sgl-kernel": "0.3.0", "torch": "2.7.1"},
     {"caps": [(9, 0)], "driver_cuda": 12040},
     "fail", ["undefined symbol: cuGreenCtxStreamCreate"], ["upgrade the NVIDIA driver",
                                                             "(CUDA 12.5)"]),
]


@pytest.mark.parametrize(("rule_id", "versions", "fields", "level", "details", "remedies"),
                         REALISTIC, ids=[case[0] for case in REALISTIC])
def test_rule_verdict_and_remedy_in_a_realistic_environment(
        rule_id: str, versions: dict[str, str | None], fields: dict[str, Any], level: str,
        details: list[str], remedies: list[str]) -> None:
    found = verdict(rule_id, facts(versions, **fields))
    assert found is not None, rule_id
    assert found.level == level, found
    for text in details:
        assert text in found.detail, (text, found.detail)
    for text in remedies:
        assert text in found.remedy, (text, found.remedy)


@pytest.mark.parametrize(("versions", "cap", "fields", "level", "details", "remedies"), [
    # triton issue 8539's machine (DGX Spark, triton 3.5) under sglang: the patch sets the
    # variable to the toolkit's ptxas, so the rule says warn and names the patch
    ({"sglang": "0.5.5", "triton": "3.5.1"}, (12, 1),
     {"nvcc": "/usr/local/cuda-13.0/bin/nvcc", "nvcc_version": "13.0"}, "warn",
     ["sglang-shims' patch triton-ptxas-blackwell (on:",
      "points TRITON_PTXAS_PATH at /usr/local/cuda-13.0/bin/ptxas"],
     ["export TRITON_PTXAS_PATH=<a CUDA >= 12.9 ptxas>"]),
    # no toolkit known: the patch searches and fails loudly without one; still warn
    ({"sglang": "0.5.5", "triton": "3.5.1"}, (12, 1), {}, "warn",
     ["triton-ptxas-blackwell", "where none exists it fails loudly"], ["triton>=3.6"]),
    # turned off: the break stands, and the remedy turns it on
    ({"sglang": "0.5.5", "triton": "3.5.1"}, (12, 1),
     {"environ": {"SGLANG_SHIMS_DISABLE": "triton-ptxas-blackwell"}}, "fail",
     ["triton-ptxas-blackwell is off"], ["SGLANG_SHIMS_ENABLE=triton-ptxas-blackwell"]),
    # triton 3.4 refuses a CUDA 13 ptxas, and sm_110a needs one: the patch cannot help
    ({"sglang": "0.5.5", "triton": "3.4.0"}, (11, 0),
     {"nvcc": "/usr/local/cuda-13.0/bin/nvcc", "nvcc_version": "13.0"}, "fail",
     ["Value 'sm_110a' is not defined"], ["export TRITON_PTXAS_PATH=<a CUDA >= 13.0 ptxas>"]),
    # triton 3.6 reads TRITON_PTXAS_BLACKWELL_PATH for sm_100+ and ignores TRITON_PTXAS_PATH
    ({"triton": "3.6.0"}, (11, 0), {"environ": {"TRITON_PTXAS_PATH": "/opt/x/ptxas"}}, "fail",
     ["Value 'sm_110a' is not defined"], ["export TRITON_PTXAS_BLACKWELL_PATH="]),
])
def test_ptxas_rule_under_the_patch(versions: dict[str, str], cap: tuple[int, int],
                                    fields: dict[str, Any], level: str, details: list[str],
                                    remedies: list[str]) -> None:
    """triton-ptxas-too-old-blackwell says what the patch triton-ptxas-blackwell does where
    it acts (warn), fails where it cannot (off; sm_110a on a triton that refuses CUDA 13),
    and names the variable the installed triton reads."""
    found = verdict("triton-ptxas-too-old-blackwell", facts(versions, caps=[cap], **fields))
    assert found is not None and found.level == level, found
    for text in details:
        assert text in found.detail, (text, found.detail)
    for text in remedies:
        assert text in found.remedy, (text, found.remedy)


@pytest.mark.parametrize(("torch", "wanted", "unwanted"), [
    # sglang 0.5.1 pins sgl-kernel 0.3.5, built with torch 2.8.0 (the table); on torch 2.9.1
    # it does not load, so the remedy names 0.3.18.post1, the first kernel built with
    # torch 2.9.1 whose exports (the data) cover what 0.5.1 imports, fused_marlin_moe aside
    ("2.9.1", ["pip uninstall -y sglang-kernel && pip install 'sgl-kernel==0.3.18.post1'",
               "built with torch 2.9.1", "but fused_marlin_moe",
               "sgl-kernel==0.3.5 was built with torch 2.8.0 and does not load on 2.9.1"],
     ["install 'sgl-kernel==0.3.5' (", "the build for your torch"]),
    # on the pin's own torch the pin is the remedy
    ("2.8.0", ["pip install 'sgl-kernel==0.3.5' (built with torch 2.8.0)"], ["0.3.18"]),
    # no kernel built for torch 2.13 covers 0.5.1's names: said, with the pin and its torch
    ("2.13.0", ["no published kernel built for torch 2.13 exports every name sglang 0.5.1",
                "pip install 'sgl-kernel==0.3.5' with torch 2.8.0"], ["(built with torch 2.13"]),
])
def test_hybrid_ops_remedy_names_a_kernel_built_for_the_installed_torch(
        torch: str, wanted: list[str], unwanted: list[str]) -> None:
    f = facts({"sglang": "0.5.1", "sglang-kernel": "0.4.5", "torch": torch})
    found = verdict("sgl-kernel-hybrid-ops", f)
    assert found is not None and found.level == "warn", found
    assert "does not export" in found.detail
    for text in wanted:
        assert text in found.remedy, (text, found.remedy)
    for text in unwanted:
        assert text not in found.remedy, (text, found.remedy)
    off = verdict("sgl-kernel-hybrid-ops",
                  facts({"sglang": "0.5.1", "sglang-kernel": "0.4.5", "torch": torch},
                        environ={"SGLANG_SHIMS_DISABLE": "sgl-kernel-missing-symbols"}))
    assert off is not None and off.level == "fail" and wanted[0] in off.remedy, off


def test_flashinfer_arch_list_env() -> None:
    """sglang issue 10933: flashinfer 0.3.1+ reads FLASHINFER_CUDA_ARCH_LIST only (0.2.14.post1
    read TORCH_CUDA_ARCH_LIST; read from the installed wheels).  The remedy turns the torch
    list into flashinfer's spelling: spaces, no +PTX, 'a' on 9.0 and newer."""
    found = verdict("flashinfer-arch-list-env",
                    facts({"flashinfer-python": "0.4.1"},
                          environ={"TORCH_CUDA_ARCH_LIST": "8.0;9.0;10.0+PTX"}))
    assert found is not None and found.level == "warn"
    assert "reads only FLASHINFER_CUDA_ARCH_LIST" in found.detail
    assert found.remedy.startswith('export FLASHINFER_CUDA_ARCH_LIST="8.0 9.0a 10.0a"')
    for versions, environ in (
            ({"flashinfer-python": "0.2.14.post1"}, {"TORCH_CUDA_ARCH_LIST": "9.0"}),
            ({"flashinfer-python": "0.4.1"}, {"TORCH_CUDA_ARCH_LIST": "9.0",
                                              "FLASHINFER_CUDA_ARCH_LIST": "9.0a"}),
            ({"flashinfer-python": "0.4.1"}, {}),
            ({}, {"TORCH_CUDA_ARCH_LIST": "9.0"})):
        assert verdict("flashinfer-arch-list-env", facts(versions, environ=environ)) is None


def test_hybrid_ops_remedy_on_a_cuda13_torch_names_the_variant_build() -> None:
    """sglang 0.5.5 pins sgl-kernel 0.3.16.post5: the PyPI file is a CUDA 12 build for torch
    2.8, its +cu130 variant was built with torch 2.9.0 (the table's label row).  On torch
    2.9.0+cu130 the pin is the remedy, from the cu130 index."""
    found = verdict("sgl-kernel-hybrid-ops",
                    facts({"sglang": "0.5.5", "sglang-kernel": "0.4.5", "torch": "2.9.0+cu130"}))
    assert found is not None
    assert ("pip install 'sgl-kernel==0.3.16.post5' --index-url https://docs.sglang.ai/whl/cu130/"
            " (built with torch 2.9.0)") in found.remedy, found.remedy
    plain = verdict("sgl-kernel-hybrid-ops",
                    facts({"sglang": "0.5.5", "sglang-kernel": "0.4.5", "torch": "2.8.0+cu128"}))
    assert plain is not None and "--index-url" not in plain.remedy
    assert "pip install 'sgl-kernel==0.3.16.post5' (built with torch 2.8.0)" in plain.remedy
