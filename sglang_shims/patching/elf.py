"""ELF sections, DT_NEEDED and CUDA fatbin headers, read with the stdlib only."""

from __future__ import annotations

import io
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO


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
