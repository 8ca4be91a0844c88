"""Where the importable ``deep_gemm`` comes from, read without importing it.

Three kinds of install put a ``deep_gemm`` package on the path, and sglang expects one of
them per release: sgl-kernel / sglang-kernel bundle one (up to sglang-kernel 0.4.5), sglang
0.5.12 and later pin ``sgl-deep-gemm`` (sglang's own build of it), and users and vendor
images build DeepGEMM from source.  A source build leaves what its ``setup.py`` writes: a
``deep_gemm`` distribution versioned ``<__version__>+<short commit>`` (``2.4.2+7f2a703``),
``__version__`` in ``deep_gemm/__init__.py``, or -- an editable install or a checkout on
``PYTHONPATH`` -- the checkout's ``.git`` beside the package.  All of them write the same
folder, so the last install wins and the others' metadata stays behind: which
distributions list ``deep_gemm/__init__.py`` is read from their RECORD, and which of them
is on disk from the file itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...engine.gates import canonical
from ...patching.dists import KERNEL_DISTS
from .requires import sglang_pins

SGLANG_BUILD = "sgl-deep-gemm"
SOURCE_DIST = "deep-gemm"
"""The distribution name DeepGEMM's own ``setup.py`` gives a source build."""


@dataclass(frozen=True)
class DeepGemm:
    """The ``deep_gemm`` package Python would import, and what installed it."""

    folder: str
    owners: tuple[tuple[str, str], ...] = ()
    """(canonical distribution, version) of each install whose RECORD lists this
    ``deep_gemm/__init__.py``; several when one install overwrote another's files."""
    version: str | None = None
    """``__version__`` in ``deep_gemm/__init__.py`` (the kernels' bundled copies have none)."""
    commit: str | None = None
    """The DeepGEMM commit of a source build: a ``+<hex>`` local label, or the HEAD of the
    checkout the package sits in."""
    editable: bool = False

    @property
    def kind(self) -> str:
        """``kernel`` | ``sgl-deep-gemm`` | ``source``: who put the copy on disk here.

        With several owners the file decides: DeepGEMM's own ``__init__.py`` carries a
        ``__version__`` equal to a source build's public version, the kernels' bundled
        copies carry none.  A copy no distribution lists (a checkout on the path) and an
        editable install are source builds.
        """
        dists = {d for d, _ in self.owners}
        if self.editable or not dists:
            return "source"
        source = self.owner(SOURCE_DIST)
        if source is not None and (len(dists) == 1 or self.version == source.partition("+")[0]):
            return "source"
        if SGLANG_BUILD in dists:
            return SGLANG_BUILD
        return "kernel" if dists & set(KERNEL_DISTS) else "source"

    def owner(self, dist: str) -> str | None:
        """The version of ``dist`` among the owners, if it is one."""
        return next((v for d, v in self.owners if d == canonical(dist)), None)

    def shown(self) -> str:
        """``DeepGEMM 2.4.2 (commit 7f2a703), built from source at /path``, and the like."""
        what = {"kernel": "the copy bundled with " + ", ".join(
                    f"{d} {v}" for d, v in self.owners if d in KERNEL_DISTS),
                SGLANG_BUILD: f"sgl-deep-gemm {self.owner(SGLANG_BUILD)}",
                "source": "a source build of DeepGEMM"}[self.kind]
        version = f" {self.version}" if self.version and self.kind == "source" else ""
        commit = f" (commit {self.commit})" if self.commit else ""
        return f"{what}{version}{commit} at {self.folder}"


def expected_build(requires: list[str], kernel: tuple[str, str] | None
                   ) -> tuple[str, str, str] | None:
    """(kind, in words, the install that puts it back) of the ``deep_gemm`` an sglang with
    these ``Requires-Dist`` lines calls: its ``sgl-deep-gemm`` pin, else the copy bundled
    with the kernel it pins (or, unpinned, the installed ``kernel``)."""
    pins = [p for p in sglang_pins(requires, (SGLANG_BUILD, *KERNEL_DISTS)) if p.default]
    build = next((p for p in pins if p.dist == SGLANG_BUILD), None)
    if build is not None:
        return (SGLANG_BUILD, f"sgl-deep-gemm{build.spec}",
                f"pip install --force-reinstall --no-deps 'sgl-deep-gemm{build.spec}'")
    wanted = next((f"{p.dist}{p.spec}" for p in pins), None)
    if wanted is None and kernel is not None:
        wanted = f"{kernel[0]}=={kernel[1]}"
    if wanted is None:
        return None
    return ("kernel", f"the copy bundled with {wanted}",
            f"pip install --force-reinstall --no-deps '{wanted}'")


def _local_commit(version: str) -> str | None:
    label = version.partition("+")[2]
    return label if re.fullmatch(r"[0-9a-f]{7,40}", label) else None


def _git_head(folder: Path) -> str | None:
    """The short HEAD commit of the git checkout that holds ``folder``, read from files."""
    for root in (folder.parent, folder.parent.parent):
        git = root / ".git"
        if not (git / "HEAD").is_file():
            continue
        head = (git / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
        if head.startswith("ref: "):
            ref = git / head[5:]
            head = ref.read_text(encoding="utf-8").strip() if ref.is_file() else ""
        return head[:7] if re.fullmatch(r"[0-9a-f]{40}", head) else None
    return None


def _owners(init: Path) -> tuple[list[tuple[str, str]], bool]:
    """The installs whose RECORD lists ``init``, and whether one is an editable source."""
    import json
    from importlib import metadata

    owners: list[tuple[str, str]] = []
    editable = False
    for dist in metadata.distributions():
        name = canonical(dist.metadata["Name"] or "")
        if name not in KERNEL_DISTS and "gemm" not in name:
            continue  # a RECORD is read only where a deep_gemm can be: torch's has 10,000 lines
        files = dist.files or []
        if any(str(f).replace("\\", "/") == "deep_gemm/__init__.py"
               and Path(str(f.locate())).resolve() == init for f in files):
            owners.append((name, dist.version))
        elif name in (SOURCE_DIST, SGLANG_BUILD):
            direct = dist.read_text("direct_url.json") or "{}"
            if json.loads(direct).get("dir_info", {}).get("editable"):
                owners.append((name, dist.version))
                editable = True
    return sorted(set(owners)), editable


def gather_deep_gemm() -> DeepGemm | None:
    """The ``deep_gemm`` on this interpreter's path, or None when there is none."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("deep_gemm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))).resolve()
    init = folder / "__init__.py"
    text = init.read_text(encoding="utf-8", errors="replace") if init.is_file() else ""
    match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    owners, editable = _owners(init)
    commit = next((c for _, v in owners if (c := _local_commit(v))), None) or _git_head(folder)
    return DeepGemm(str(folder), tuple(owners), match.group(1) if match else None, commit,
                    editable)
