"""Patch manifests: the declarative half of a patch, parsed and validated.

A patch folder holds ``manifest.toml`` and, optionally, ``patch.py``.  The manifest
says what the patch is for (id, summary, evidence), where it acts (target module,
before or after its body), when it may act (version and GPU gates), what it expects
to find there (fingerprints), when it is no longer needed (retire rules), whether it
is on by default and what happens if it fails (policy).  Validation is strict and
every message names the file and the field, because a typo in a gate must never
silently turn a patch off.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

# Validation patterns, compiled on first use (:func:`_matches`): the engine reads the
# built-in manifests from catalog.json, validated when it was generated, and never needs them.
PATTERNS = {
    "id": r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$",
    "module": r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$",
    "symbol": r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$",
    "dist": r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
}
WHEN = ("before", "after", "instead")
POLICIES = ("optional", "required")
_compiled: dict[str, Any] = {}
_set = object.__setattr__


def _matches(kind: str, text: str) -> bool:
    """Does ``text`` match the :data:`PATTERNS` entry ``kind``?"""
    pattern = _compiled.get(kind)
    if pattern is None:
        import re

        pattern = _compiled[kind] = re.compile(PATTERNS[kind])
    return pattern.match(text) is not None


class ManifestError(ValueError):
    """A manifest that cannot be used; the message names the file and the field."""


class _Value:
    """Base of the manifest's value types: immutable, compared and hashed by their fields.

    Plain classes with ``__slots__`` rather than frozen dataclasses: creating the five
    dataclasses cost about 3 ms at every wake-up (each generates and compiles its methods),
    more than the rest of the engine's modules together.  ``_FIELDS`` lists the fields in
    order; ``_UNCOMPARED`` those left out of ``==``, ``hash`` (where they were left out
    before: where a manifest was read from is not what it says).
    """

    __slots__: tuple[str, ...] = ()
    _FIELDS: tuple[str, ...] = ()
    _UNCOMPARED: frozenset[str] = frozenset()

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in self._FIELDS if f not in self._UNCOMPARED)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS)
        return f"{type(self).__name__}({shown})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a {type(self).__name__} is"
                             " immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a {type(self).__name__} is"
                             " immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        # copy and pickle would restore the fields through __setattr__, which refuses
        return _rebuild, (type(self), tuple(getattr(self, f) for f in self._FIELDS))

    def as_data(self) -> dict[str, Any]:
        """Every field as JSON-ready data (tuples become lists, nested values dicts)."""
        return {f: _data(getattr(self, f)) for f in self._FIELDS}


def _rebuild(cls: type[_Value], values: tuple[Any, ...]) -> _Value:
    value = cls.__new__(cls)
    for name, item in zip(cls._FIELDS, values, strict=True):
        _set(value, name, item)
    return value


def _data(value: object) -> Any:
    if isinstance(value, _Value):
        return value.as_data()
    if isinstance(value, (tuple, list)):
        return [_data(v) for v in value]
    if isinstance(value, dict):
        return {k: _data(v) for k, v in value.items()}
    return value


class Gate(_Value):
    """A PEP 440 specifier over one distribution, or the first installed of several.

    ``"sgl-kernel | sglang-kernel" = ">=0.3.18"`` reads: whichever of the two is
    installed (first listed wins) must satisfy the specifier.  An empty specifier
    only asks that the distribution be installed.
    """

    __slots__ = _FIELDS = ("dists", "spec")
    dists: tuple[str, ...]
    spec: str

    def __init__(self, dists: tuple[str, ...], spec: str) -> None:
        _set(self, "dists", dists)
        _set(self, "spec", spec)

    @property
    def label(self) -> str:
        return " | ".join(self.dists)


class Fingerprint(_Value):
    """What a patch expects to find in a module's source before it acts.

    ``module`` may name alternatives, ``"a | b"``: the first that exists is read
    (code that moved between releases, e.g. sglang.srt.utils -> utils.common).
    Exactly one kind is set: ``anchors`` (exact texts that must occur), ``sha256``
    (accepted hashes of one function's normalised source) or ``imports`` (a
    module-level ``from X import names`` statement).
    """

    __slots__ = _FIELDS = ("module", "anchors", "function", "sha256", "import_from",
                           "import_names")
    module: str
    anchors: tuple[str, ...]
    function: str | None
    sha256: tuple[str, ...]
    import_from: str | None
    import_names: tuple[str, ...]

    def __init__(self, module: str, anchors: tuple[str, ...] = (), function: str | None = None,
                 sha256: tuple[str, ...] = (), import_from: str | None = None,
                 import_names: tuple[str, ...] = ()) -> None:
        _set(self, "module", module)
        _set(self, "anchors", anchors)
        _set(self, "function", function)
        _set(self, "sha256", sha256)
        _set(self, "import_from", import_from)
        _set(self, "import_names", import_names)

    def with_module(self, module: str) -> Fingerprint:
        """The same fingerprint for one of its alternative modules."""
        return Fingerprint(module, self.anchors, self.function, self.sha256, self.import_from,
                           self.import_names)

    @property
    def modules(self) -> tuple[str, ...]:
        return tuple(m.strip() for m in self.module.split("|"))

    @property
    def kind(self) -> str:
        if self.anchors:
            return "anchors"
        if self.sha256:
            return "sha256"
        return "imports"

    def describe(self) -> str:
        if self.anchors:
            return f"{self.module} contains {len(self.anchors)} anchor text(s)"
        if self.sha256:
            return f"{self.module}:{self.function} source hash in {list(self.sha256)}"
        return f"{self.module} does `from {self.import_from} import {', '.join(self.import_names)}`"


class Retire(_Value):
    """When the problem is gone upstream, the patch becomes a logged no-op.

    Any one rule suffices: a symbol exported (``"module:name"``), a distribution
    installed, or every version gate in ``versions`` satisfied.
    """

    __slots__ = _FIELDS = ("description", "exported", "installed", "versions")
    description: str
    exported: tuple[str, ...]
    installed: tuple[str, ...]
    versions: tuple[Gate, ...]

    def __init__(self, description: str, exported: tuple[str, ...] = (),
                 installed: tuple[str, ...] = (), versions: tuple[Gate, ...] = ()) -> None:
        _set(self, "description", description)
        _set(self, "exported", exported)
        _set(self, "installed", installed)
        _set(self, "versions", versions)


class Provide(_Value):
    """A name supplied on the target module as a lazy proxy when it is missing."""

    __slots__ = _FIELDS = ("name", "exported_by", "remedy", "provider_dists", "substitute")
    name: str
    exported_by: str
    remedy: str
    provider_dists: tuple[str, ...]
    substitute: str | None

    def __init__(self, name: str, exported_by: str, remedy: str,
                 provider_dists: tuple[str, ...] = (), substitute: str | None = None) -> None:
        _set(self, "name", name)
        _set(self, "exported_by", exported_by)
        _set(self, "remedy", remedy)
        _set(self, "provider_dists", provider_dists)
        _set(self, "substitute", substitute)


class Manifest(_Value):
    """One patch's manifest; ``folder`` and ``source`` say where it was read from."""

    __slots__ = _FIELDS = ("id", "summary", "evidence", "target", "when", "default", "policy",
                           "retire", "changes", "requires", "gpu", "fingerprints", "provides",
                           "code", "range_note", "test_with", "folder", "source")
    _UNCOMPARED = frozenset({"test_with", "folder"})
    id: str
    summary: str
    evidence: tuple[str, ...]
    target: str
    when: str
    default: bool
    policy: str
    retire: Retire
    changes: str
    requires: tuple[Gate, ...]
    gpu: str | None
    fingerprints: tuple[Fingerprint, ...]
    provides: tuple[Provide, ...]
    code: str | None
    range_note: str
    test_with: dict[str, str]
    folder: Path | None
    source: str

    def __init__(self, *, id: str, summary: str, evidence: tuple[str, ...], target: str,
                 when: str, default: bool, policy: str, retire: Retire, changes: str = "",
                 requires: tuple[Gate, ...] = (), gpu: str | None = None,
                 fingerprints: tuple[Fingerprint, ...] = (), provides: tuple[Provide, ...] = (),
                 code: str | None = None, range_note: str = "",
                 test_with: dict[str, str] | None = None, folder: Path | None = None,
                 source: str = "builtin") -> None:
        for name, value in (("id", id), ("summary", summary), ("evidence", evidence),
                            ("target", target), ("when", when), ("default", default),
                            ("policy", policy), ("retire", retire), ("changes", changes),
                            ("requires", requires), ("gpu", gpu),
                            ("fingerprints", fingerprints), ("provides", provides),
                            ("code", code), ("range_note", range_note),
                            ("test_with", {} if test_with is None else test_with),
                            ("folder", folder), ("source", source)):
            _set(self, name, value)

    @property
    def roots(self) -> set[str]:
        return {self.target.partition(".")[0]}


def _fail(where: str, message: str) -> ManifestError:
    return ManifestError(f"{where}: {message}")


class _Reader:
    """Pulls typed fields out of a TOML table and remembers which keys were used."""

    def __init__(self, table: dict[str, Any], where: str) -> None:
        self.table = table
        self.where = where
        self.used: set[str] = set()

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ..., ) -> Any:
        self.used.add(key)
        if key not in self.table:
            if default is ...:
                raise _fail(self.where, f"missing required field {key!r}")
            return default
        value = self.table[key]
        if not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
            raise _fail(self.where, f"field {key!r} must be {names}, got {type(value).__name__}")
        return value

    def strings(self, key: str, default: Any = ...) -> tuple[str, ...]:
        value = self.get(key, list, default)
        if not isinstance(value, list):
            return tuple(value)
        if not all(isinstance(v, str) for v in value):
            raise _fail(self.where, f"field {key!r} must be a list of strings")
        return tuple(value)

    def finish(self) -> None:
        extra = sorted(set(self.table) - self.used)
        if extra:
            raise _fail(self.where, f"unknown field(s) {extra}; check the spelling")


def parse_gates(table: dict[str, Any], where: str) -> tuple[Gate, ...]:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    gates = []
    for key, spec in table.items():
        if not isinstance(spec, str):
            raise _fail(where, f"gate {key!r} must be a specifier string like '>=0.5,<0.6'")
        dists = tuple(d.strip() for d in key.split("|"))
        bad = [d for d in dists if not _matches("dist", d)]
        if bad:
            raise _fail(where, f"gate {key!r} names an invalid distribution {bad[0]!r}")
        try:
            SpecifierSet(spec)
        except InvalidSpecifier as exc:
            raise _fail(where, f"gate {key!r}: invalid specifier {spec!r} ({exc})") from None
        gates.append(Gate(dists, spec.strip()))
    return tuple(gates)


def _parse_fingerprint(table: Any, where: str) -> Fingerprint:
    if not isinstance(table, dict):
        raise _fail(where, "each [[fingerprint]] must be a table")
    r = _Reader(table, where)
    module = r.get("module", str)
    if not all(_matches("module", m.strip()) for m in module.split("|")):
        raise _fail(where, f"fingerprint module {module!r} is not a module name"
                    " (or 'a | b': the first of them that exists)")
    module = " | ".join(m.strip() for m in module.split("|"))
    anchors = r.strings("anchors", ())
    function = r.get("function", str, None)
    sha = r.strings("sha256", ())
    imports = r.get("imports", dict, None)
    r.finish()
    kinds = [bool(anchors), bool(sha), imports is not None]
    if sum(kinds) != 1:
        raise _fail(where, "a fingerprint needs exactly one of 'anchors', 'sha256', 'imports'")
    if sha and not function:
        raise _fail(where, "a 'sha256' fingerprint needs 'function' (a qualified name)")
    if imports is not None:
        ir = _Reader(imports, where + " imports")
        src = ir.get("from", str)
        names = ir.strings("names")
        ir.finish()
        return Fingerprint(module, import_from=src, import_names=names)
    if any(not a for a in anchors):
        raise _fail(where, "an anchor must not be empty")
    return Fingerprint(module, anchors=anchors, function=function, sha256=sha)


def _parse_retire(table: Any, where: str) -> Retire:
    if not isinstance(table, dict):
        raise _fail(where, "[retire] must be a table")
    r = _Reader(table, where)
    description = r.get("when", str)
    exported = r.strings("exported", ())
    installed = r.strings("installed", ())
    versions = parse_gates(r.get("versions", dict, {}), where + " versions")
    r.finish()
    for sym in exported:
        if not _matches("symbol", sym):
            raise _fail(where, f"exported {sym!r} must look like 'module:name'")
    if not (exported or installed or versions):
        raise _fail(where, "needs at least one rule: 'exported', 'installed' or 'versions'")
    return Retire(description, exported, installed, versions)


def _parse_provide(table: Any, where: str) -> Provide:
    if not isinstance(table, dict):
        raise _fail(where, "each [[provide]] must be a table")
    r = _Reader(table, where)
    name = r.get("name", str)
    out = Provide(
        name=name,
        exported_by=r.get("exported_by", str),
        remedy=r.get("remedy", str),
        provider_dists=r.strings("provider_dists", ()),
        substitute=r.get("substitute", str, None),
    )
    r.finish()
    if not name.isidentifier():
        raise _fail(where, f"provide name {name!r} is not an identifier")
    if out.substitute is not None and not _matches("symbol", out.substitute):
        raise _fail(where, f"substitute {out.substitute!r} must look like 'module:name'")
    return out


def parse(data: dict[str, Any], where: str, folder: Path | None = None,
          source: str = "builtin") -> Manifest:
    """Build a :class:`Manifest` from parsed TOML, or raise :class:`ManifestError`."""
    r = _Reader(data, where)
    patch_id = r.get("id", str)
    if not _matches("id", patch_id):
        raise _fail(where, f"id {patch_id!r} must be lower-case letters, digits, '-' and '.'")
    if folder is not None and folder.name != patch_id:
        raise _fail(where, f"id {patch_id!r} must equal its folder name {folder.name!r}")
    summary = r.get("summary", str).strip()
    if not summary or "\n" in summary:
        raise _fail(where, "summary must be one non-empty line")
    evidence = r.strings("evidence")
    if not evidence or not all(e.startswith("https://") for e in evidence):
        raise _fail(where, "evidence must list at least one https:// URL (issue, PR or commit)")
    default_raw = r.get("default", str, "on")
    if default_raw not in ("on", "off"):
        raise _fail(where, f"default must be 'on' or 'off', got {default_raw!r}")
    policy = r.get("policy", str, "optional")
    if policy not in POLICIES:
        raise _fail(where, f"policy must be one of {POLICIES}, got {policy!r}")
    target_t = r.get("target", dict)
    tr = _Reader(target_t, where + " [target]")
    target = tr.get("module", str)
    when = tr.get("when", str, "after")
    tr.finish()
    if not _matches("module", target):
        raise _fail(where, f"target module {target!r} is not a module name")
    if when not in WHEN:
        raise _fail(where, f"target.when must be one of {WHEN}, got {when!r}")
    requires = parse_gates(r.get("requires", dict, {}), where + " [requires]")
    gpu_t = r.get("gpu", dict, None)
    gpu = None
    if gpu_t is not None:
        gr = _Reader(gpu_t, where + " [gpu]")
        gpu = gr.get("capability", str)
        gr.finish()
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            SpecifierSet(gpu)
        except InvalidSpecifier:
            raise _fail(where, f"gpu.capability {gpu!r} must look like '>=12.0'") from None
    fps = tuple(_parse_fingerprint(t, f"{where} [[fingerprint]] #{i + 1}")
                for i, t in enumerate(r.get("fingerprint", list, [])))
    retire = _parse_retire(r.get("retire", dict), where + " [retire]")
    provides = tuple(_parse_provide(t, f"{where} [[provide]] #{i + 1}")
                     for i, t in enumerate(r.get("provide", list, [])))
    code = r.get("code", str, None)
    range_t = r.get("range", dict, {})
    rr = _Reader(range_t, where + " [range]")
    range_note = rr.get("established", str, "")
    test_with = rr.get("test_with", dict, {})
    rr.finish()
    if not all(isinstance(v, str) for v in test_with.values()):
        raise _fail(where, "range.test_with maps distribution names to version strings")
    changes = r.get("changes", str, "").strip()
    r.finish()
    if code is None and folder is not None and (folder / "patch.py").is_file():
        code = "patch.py"
    if code is None and not provides:
        raise _fail(where, "a patch needs code (patch.py) or at least one [[provide]]")
    if when == "instead" and code is None:
        raise _fail(where, "a patch that stands in for its target (when = 'instead') needs"
                    " patch.py with unusable(ctx) and provide(ctx)")
    return Manifest(
        id=patch_id, summary=summary, evidence=evidence, target=target, when=when,
        default=default_raw == "on", policy=policy, retire=retire, changes=changes,
        requires=requires, gpu=gpu, fingerprints=fps, provides=provides, code=code,
        range_note=range_note, test_with=test_with, folder=folder, source=source,
    )


def load_text(text: str, where: str, folder: Path | None = None,
              source: str = "builtin") -> Manifest:
    # imported here: a process reads the built-in manifests from catalog.json, and parses
    # TOML only for SGLANG_SHIMS_PATH folders
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(where, f"not valid TOML ({exc})") from None
    return parse(data, where, folder, source)
