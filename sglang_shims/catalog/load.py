"""Finding patch folders and reading them: built-in ones and ``SGLANG_SHIMS_PATH``.

Built-in patches ship inside the wheel as ``sglang_shims/patches/<id>/`` and are read
with ``importlib.resources``; in a source checkout (and an editable install) they
live in ``patches/`` beside the package.  Extra folders named by
``SGLANG_SHIMS_PATH`` are refused when another user could have written them --
loading one runs its code in every sglang process.  Nothing is ever loaded from the
current directory unless it is named explicitly.  The checks (:mod:`sglang_shims._trust`)
are imported where such a folder or file is read: a process that reads only the built-in
catalog never loads them.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from . import data as _data
from .manifest import Manifest, ManifestError

MANIFEST = "manifest.toml"
PACKAGE = _data.PACKAGE


class Catalog:
    """The manifests read, ``errors`` (folder or id -> why it could not be loaded) and
    warnings.  A plain class: a dataclass costs a few hundred microseconds at every
    wake-up."""

    __slots__ = ("errors", "manifests", "warnings")

    def __init__(self, manifests: list[Manifest] | None = None,
                 errors: dict[str, str] | None = None,
                 warnings: list[str] | None = None) -> None:
        self.manifests = [] if manifests is None else manifests
        self.errors = {} if errors is None else errors
        self.warnings = [] if warnings is None else warnings

    def by_id(self) -> dict[str, Manifest]:
        return {m.id: m for m in self.manifests}


def builtin_root(warnings: list[str] | None = None) -> Path:
    """The folder holding the built-in patches, in a wheel or in a checkout.

    A package on disk (every pip install) has them in its own ``patches`` folder, which is
    what importlib.resources would answer; that folder is used as it is, since asking
    importlib.resources costs about 0.5 ms at every wake-up.  Otherwise (a checkout, a
    frozen or zipped install) importlib.resources is asked; if it fails (it has, in frozen
    or damaged installs), the folder next to this file is used and the failure is reported.
    """
    here = PACKAGE
    if (here / "patches").is_dir():
        return here / "patches"
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
    """Why code in ``folder`` may not be trusted, or None if it may.

    The folder and every folder above it are judged (:func:`sglang_shims._trust.chain_problem`):
    anyone who can write or rename one of them could have written the patches.
    """
    from .. import _trust

    return _trust.chain_problem(folder)


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
        roots.append(Path(os.path.realpath(path)))
    return roots, warnings


def _at_most(lines: list[str], keep: int, what: str) -> list[str]:
    """The first ``keep`` lines and one that counts the rest: a variable with thousands of
    entries costs one screen of warnings in every process, not thousands of lines."""
    if len(lines) <= keep + 1:
        return lines
    return [*lines[:keep], f"... and {len(lines) - keep} more {what}"]


def code_name_problem(code: str) -> str | None:
    """Why a manifest's ``code`` is not a plain file name inside its patch folder."""
    seps = {"/", os.sep, os.altsep or "/"}
    if not code or code in (".", "..") or any(sep in code for sep in seps) or "\0" in code:
        return (f"code = {code!r} must be a plain file name inside the patch folder (no"
                " directory, no '..', no absolute path)")
    return None


def extra_problem(folder: Path, code: str | None) -> str | None:
    """Why a patch folder from ``SGLANG_SHIMS_PATH`` may not run: the folder, its manifest
    and its code file must each be a real entry (no link), owned by you or root and
    writable by nobody else, and ``code`` must name a file inside the folder."""
    from .. import _trust

    problem = _trust.entry_problem(folder, folder=True) or _trust.entry_problem(
        folder / MANIFEST, folder=False)
    if problem or code is None:
        return problem
    return code_name_problem(code) or _trust.entry_problem(folder / code, folder=False)


def _read_extra_manifest(folder: Path) -> str:
    """The manifest's text, read without following a link, from a file only you or root
    could have written (raises :class:`sglang_shims._trust.NotPrivate` otherwise)."""
    from .. import _trust

    return _trust.read_file(folder / MANIFEST, root_too=True).decode("utf-8")


def _unseen_target(text: str, manifest: Manifest) -> str | None:
    """Why interpreter start-up would not see this extra manifest's target, or None.

    Start-up learns which imports must wake the engine by reading only the head of each
    extra manifest (``_bootstrap.extra_targets``).  A ``[target]`` that reader does not
    find there would never wake anything while ``list`` said the patch applies, so the
    manifest is refused, with the reason, wherever it is read.
    """
    from .._bootstrap import EXTRA_HEAD, _target_of

    head = text.encode("utf-8")[:EXTRA_HEAD].decode("utf-8", "replace")
    seen = _target_of(head)
    if seen == manifest.target:
        return None
    where = ("it lies past the first 64 KiB, which is all start-up reads" if seen is None
             and _target_of(text) == manifest.target else
             "start-up's reader of the [target] module line cannot read it there")
    return (f"[target] module {manifest.target!r} would never wake the engine: {where};"
            " put the [target] table near the top as a plain `module = \"...\"` line")


def _engine_target(manifest: Manifest) -> str | None:
    """Why an extra patch's target cannot be patched from outside, or None."""
    from .._bootstrap import engine_runs_on

    if not engine_runs_on(manifest.target):
        return None
    return (f"its target {manifest.target} is part of the standard library or of what"
            " sglang-shims itself runs on (packaging, wrapt, tomli): the engine imports it"
            " while it wakes, so a patch on it could not act before its body runs")


def _patch_folders(root: Path) -> list[Path]:
    """Subfolders holding a manifest (a link to one counts: it is refused by name later)."""
    try:
        return sorted(p for p in root.iterdir()
                      if p.is_symlink() or os.path.lexists(p / MANIFEST))
    except OSError:
        return []


def load(extra_path: str | None = None, include_builtin: bool = True,
         toml: bool = False) -> Catalog:
    """Read every manifest; a broken one is recorded in ``errors``, never raised.

    The built-in patches come from the generated ``catalog.jsonl`` unless ``toml`` (what
    ``codegen`` does) or the JSON cannot be used: then their TOML is parsed as well.
    """
    catalog = Catalog()
    sources: list[tuple[Path, str]] = []
    seen: dict[str, str] = {}
    if include_builtin:
        root = builtin_root(catalog.warnings)
        checkout = not root.is_relative_to(PACKAGE)
        shipped = None if toml else _data.read(root, check_digest=checkout)
        if shipped is None:
            if not toml and not checkout:
                from .._bootstrap import remedy

                catalog.warnings.append(
                    f"the built-in catalog {_data.CATALOG} cannot be read; the manifests"
                    f" are read instead. To fix it, {remedy()}")
            sources.append((root, "builtin"))
        else:
            catalog.manifests += shipped
            # each one's folder, as a string: reading ``m.folder`` would parse every patch
            seen.update((m.id, f"{root}{os.sep}{m.id}") for m in shipped)
    roots, refused = extra_roots(extra_path)
    catalog.warnings += _at_most(refused, 3, "SGLANG_SHIMS_PATH entries refused")
    sources.extend((root, str(root)) for root in roots)
    if sources:
        _read_folders(catalog, sources, seen)
    return catalog


def _read_folders(catalog: Catalog, sources: list[tuple[Path, str]], seen: dict[str, str]
                  ) -> None:
    """Parse the manifests of ``sources`` (root, source) into ``catalog``: the built-ins of a
    checkout whose JSON is stale or unreadable, and ``SGLANG_SHIMS_PATH`` folders."""
    from .. import _trust
    from .validate import load_text

    for root, source in sources:
        for folder in _patch_folders(root):
            where = str(folder / MANIFEST)
            extra = source != "builtin"
            try:
                if extra and (problem := extra_problem(folder, None)):
                    catalog.errors[folder.name] = f"refused: {problem}"
                    continue
                text = (_read_extra_manifest(folder) if extra
                        else (folder / MANIFEST).read_text(encoding="utf-8"))
                manifest = load_text(text, where, folder, source)
            except _trust.NotPrivate as exc:
                catalog.errors[folder.name] = f"refused: {exc}"
                continue
            except UnicodeDecodeError as exc:
                catalog.errors[folder.name] = (f"manifest invalid: {where} is not UTF-8 text"
                                               f" (byte {exc.start})")
                continue
            except (ManifestError, OSError) as exc:
                catalog.errors[folder.name] = f"manifest invalid: {exc}"
                continue
            if extra and (problem := _unseen_target(text, manifest)):
                catalog.errors[folder.name] = f"manifest invalid: {where}: {problem}"
                continue
            if extra and (problem := _engine_target(manifest)):
                catalog.errors[folder.name] = f"refused: {problem}"
                continue
            if manifest.code is not None and (problem := (
                    extra_problem(folder, manifest.code) if extra
                    else code_name_problem(manifest.code))):
                catalog.errors[folder.name] = f"refused: {problem}"
                continue
            if manifest.id in seen:
                catalog.warnings.append(
                    f"patch id {manifest.id!r} in {folder} is already defined by "
                    f"{seen[manifest.id]}; the first one is used")
                continue
            seen[manifest.id] = str(folder)
            catalog.manifests.append(manifest)


def load_code(manifest: Manifest) -> ModuleType:
    """Execute a patch's ``patch.py`` as ``sglang_shims.patches.<id>`` and return it."""
    assert manifest.folder is not None and manifest.code is not None
    if problem := code_name_problem(manifest.code):
        raise ImportError(problem)
    path = manifest.folder / manifest.code
    name = "sglang_shims.patches." + manifest.id.replace("-", "_").replace(".", "_")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load patch code {path}")
    # Code from SGLANG_SHIMS_PATH runs from the bytes that passed the trust check (read
    # without following links), not from a second read of the path by the loader.
    verified = None
    if manifest.source != "builtin":
        from .. import _trust

        try:
            verified = _trust.read_file(path, root_too=True)
        except OSError as exc:
            raise ImportError(f"patch code {path} refused: {exc}") from None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        if verified is None:
            spec.loader.exec_module(module)
        else:
            exec(compile(verified, str(path), "exec"), module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    wanted = ("unusable", "provide") if manifest.when == "instead" else ("apply",)
    missing = [f for f in wanted if not callable(getattr(module, f, None))]
    if missing:
        sys.modules.pop(name, None)
        raise ImportError(f"{path} defines no {', '.join(f + '(ctx)' for f in missing)}")
    return module
