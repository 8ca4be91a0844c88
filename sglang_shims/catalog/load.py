"""Finding patch folders and reading them: built-in ones and ``SGLANG_SHIMS_PATH``.

Built-in patches ship inside the wheel as ``sglang_shims/patches/<id>/`` and are read
with ``importlib.resources``; in a source checkout (and an editable install) they
live in ``patches/`` beside the package.  Extra folders named by
``SGLANG_SHIMS_PATH`` are refused when another user could have written them --
loading one runs its code in every sglang process.  Nothing is ever loaded from the
current directory unless it is named explicitly.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from .manifest import Manifest, ManifestError, load_text

MANIFEST = "manifest.toml"


@dataclass
class Catalog:
    manifests: list[Manifest] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    """Folder (or id) -> why it could not be loaded."""
    warnings: list[str] = field(default_factory=list)

    def by_id(self) -> dict[str, Manifest]:
        return {m.id: m for m in self.manifests}


def builtin_root(warnings: list[str] | None = None) -> Path:
    """The folder holding the built-in patches, in a wheel or in a checkout.

    importlib.resources is asked first; if it fails (it has, in frozen or damaged
    installs), the folder next to this file is used and the failure is reported.
    """
    here = Path(__file__).resolve().parents[1]  # the sglang_shims package
    try:
        if sys.version_info >= (3, 11):
            from importlib.resources import files
        else:  # pragma: no cover
            from importlib_resources import files
        shipped = files("sglang_shims").joinpath("patches")
        if shipped.is_dir():
            return Path(str(shipped))
    except Exception as exc:
        if warnings is not None:
            warnings.append(f"importlib.resources failed ({type(exc).__name__}: {exc});"
                            f" reading the built-in patches from {here / 'patches'}")
        if (here / "patches").is_dir():
            return here / "patches"
    return here.parent / "patches"


def unsafe_reason(folder: Path) -> str | None:
    """Why ``folder`` may not be trusted with code, or None if it may."""
    try:
        info = folder.stat()
    except OSError as exc:
        return f"cannot stat it ({exc.strerror})"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    if info.st_mode & stat.S_IWOTH:
        return "it is world-writable"
    if hasattr(os, "getuid") and info.st_uid not in (os.getuid(), 0):
        return f"it is owned by uid {info.st_uid}, not by you (uid {os.getuid()}) or root"
    return None


def extra_roots(value: str | None) -> tuple[list[Path], list[str]]:
    """Parse ``SGLANG_SHIMS_PATH``; return the usable folders and a warning per refusal."""
    roots: list[Path] = []
    warnings: list[str] = []
    for raw in (value or "").split(os.pathsep):
        part = raw.strip()
        if not part:
            continue
        path = Path(part)
        if not path.is_absolute():
            warnings.append(f"SGLANG_SHIMS_PATH entry {part!r} is relative; only absolute"
                            " paths are accepted, so nothing is read from the current directory")
            continue
        reason = unsafe_reason(path)
        if reason:
            warnings.append(f"SGLANG_SHIMS_PATH entry {part!r} refused: {reason}")
            continue
        roots.append(path)
    return roots, warnings


def _patch_folders(root: Path) -> list[Path]:
    try:
        return sorted(p for p in root.iterdir() if (p / MANIFEST).is_file())
    except OSError:
        return []


def load(extra_path: str | None = None, include_builtin: bool = True) -> Catalog:
    """Read every manifest; a broken one is recorded in ``errors``, never raised."""
    catalog = Catalog()
    sources: list[tuple[Path, str]] = []
    if include_builtin:
        sources.append((builtin_root(catalog.warnings), "builtin"))
    roots, refused = extra_roots(extra_path)
    catalog.warnings += refused
    sources.extend((root, str(root)) for root in roots)
    seen: dict[str, str] = {}
    for root, source in sources:
        for folder in _patch_folders(root):
            if source != "builtin" and (reason := unsafe_reason(folder)):
                catalog.warnings.append(f"patch folder {folder} refused: {reason}")
                continue
            where = str(folder / MANIFEST)
            try:
                manifest = load_text((folder / MANIFEST).read_text(encoding="utf-8"), where,
                                     folder, source)
            except (ManifestError, OSError, UnicodeDecodeError) as exc:
                catalog.errors[folder.name] = str(exc)
                continue
            if manifest.id in seen:
                catalog.warnings.append(
                    f"patch id {manifest.id!r} in {folder} is already defined by "
                    f"{seen[manifest.id]}; the first one is used")
                continue
            seen[manifest.id] = str(folder)
            catalog.manifests.append(manifest)
    return catalog


def load_code(manifest: Manifest) -> ModuleType:
    """Execute a patch's ``patch.py`` as ``sglang_shims.patches.<id>`` and return it."""
    assert manifest.folder is not None and manifest.code is not None
    path = manifest.folder / manifest.code
    name = "sglang_shims.patches." + manifest.id.replace("-", "_").replace(".", "_")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load patch code {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    wanted = ("unusable", "provide") if manifest.when == "instead" else ("apply",)
    missing = [f for f in wanted if not callable(getattr(module, f, None))]
    if missing:
        sys.modules.pop(name, None)
        raise ImportError(f"{path} defines no {', '.join(f + '(ctx)' for f in missing)}")
    return module
