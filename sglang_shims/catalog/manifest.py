"""Patch manifests: the declarative half of a patch, parsed and validated.

A patch folder holds ``manifest.toml`` and, optionally, ``patch.py``.  The manifest
says what the patch is for (id, summary, evidence), where it acts (target module,
before or after its body), when it may act (version and GPU gates), what it expects
to find there (fingerprints), when it is no longer needed (retire rules), whether it
is on by default and what happens if it fails (policy).  Validation is strict and
every message names the file and the field, because a typo in a gate must never
silently turn a patch off.

What a manifest may hold is written once, as data: the field table (:func:`table`), which
:func:`parse` checks a manifest against and from which ``catalog.schema`` writes the JSON
Schema editors validate with.  The value classes below are what a waking process builds
from ``catalog.jsonl``; the table is built only when TOML is parsed.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from . import fields

# Validation patterns, compiled on first use (:func:`matches`): the engine reads the
# built-in manifests from catalog.jsonl, validated when it was generated, and never needs them.
PATTERNS = {
    "id": r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$",
    "module": r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$",
    "symbol": r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$",
    "dist": r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
}
WHEN = ("before", "after", "instead")
POLICIES = ("optional", "required")
_set = object.__setattr__


def matches(kind: str, text: str) -> bool:
    """Does ``text`` match the :data:`PATTERNS` entry ``kind``?"""
    from .fields import matches as _matches

    return _matches(PATTERNS[kind], text)


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

    ``"sglang-kernel | sgl-kernel" = ">=0.3.18"`` reads: whichever of the two is
    installed (first listed wins, so the kernel's names are listed in the order of
    ``sglang_shims.patching.KERNEL_DISTS``) must satisfy the specifier.  An empty specifier
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
    """One patch's manifest; ``folder`` and ``source`` say where it was read from.

    A manifest read from the built-in catalog may hold only its :data:`HEAD` (what the
    engine reads of every patch when it wakes) until another field is first read: then
    ``_rest`` sets every other field at once (``catalog.data``), so that a process parses
    only the patches whose targets it imports.  Seen from outside it is the same value.
    """

    _FIELDS = ("id", "summary", "evidence", "target", "when", "default", "policy", "retire",
               "changes", "requires", "gpu", "fingerprints", "provides", "code", "range_note",
               "test_with", "folder", "source")
    __slots__ = (*_FIELDS, "_rest")
    HEAD = ("id", "target", "when", "default", "policy", "summary")
    """The fields every waking engine reads of every patch (its records, its watch table)."""
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

    @classmethod
    def deferred(cls, head: tuple[Any, ...], source: str,
                 rest: Callable[[Manifest], None]) -> Manifest:
        """A manifest of which only the :data:`HEAD` fields (``head``, in that order) and
        ``source`` are set; ``rest(manifest)`` sets the others (with :meth:`complete`)
        when one of them is first read."""
        manifest = cls.__new__(cls)
        for name, value in zip(cls.HEAD, head, strict=True):
            _set(manifest, name, value)
        _set(manifest, "source", source)
        _set(manifest, "_rest", rest)
        return manifest

    def complete(self, fields: dict[str, Any]) -> None:
        """Set the fields a :meth:`deferred` manifest was made without, all of them (once:
        a complete manifest is immutable like any other)."""
        if getattr(self, "_rest", None) is None:
            raise AttributeError(f"manifest {self.id!r} is complete")
        if set(fields) != _DEFERRED:
            raise AttributeError(f"manifest {self.id!r} needs exactly {sorted(_DEFERRED)}")
        for name, value in fields.items():
            _set(self, name, value)
        _set(self, "_rest", None)

    if not TYPE_CHECKING:  # to a type checker every field is always set
        def __getattr__(self, name: str) -> Any:
            # reached only for a slot not set yet: a deferred manifest's other fields
            try:
                rest = object.__getattribute__(self, "_rest")
            except AttributeError:
                rest = None
            if rest is None or name not in self._FIELDS:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute"
                                     f" {name!r}")
            rest(self)
            return object.__getattribute__(self, name)

    @property
    def roots(self) -> set[str]:
        return {self.target.partition(".")[0]}


_DEFERRED = frozenset(Manifest._FIELDS) - {*Manifest.HEAD, "source"}


def _fail(where: str, message: str) -> ManifestError:
    return ManifestError(f"{where}: {message}")


# -- the field table: what a manifest may hold ------------------------------------------
# The one description of a manifest: :func:`parse` checks a manifest against it, and
# ``catalog.schema`` writes ``patches/manifest.schema.json`` from it for editors.

def _alternatives(pattern: str) -> str:
    """``a | b | ...`` of what ``pattern`` (anchored) matches, spaces allowed around ``|``."""
    one = pattern[1:-1]
    return rf"^\s*{one}(\s*\|\s*{one})*\s*$"


def _specifier_problem(spec: str) -> str | None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        SpecifierSet(spec)
    except InvalidSpecifier:
        return f"gpu.capability {spec!r} must look like '>=12.0'"
    return None


_TABLE: fields.Table | None = None


def table() -> fields.Table:
    """The manifest's field table, built on first use: a process reads its built-in
    manifests from catalog.jsonl and never parses one."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _build_table()
    return _TABLE


def _build_table() -> fields.Table:
    from .fields import MAP, STRING, STRINGS, TABLE, TABLES, Field, Table

    module = PATTERNS["module"]
    gates = ("{} gate: a distribution name, or 'a | b' (the first installed of them), mapped"
             " to a PEP 440 specifier; \"\" asks only that it be installed")
    gate_problem = ("gate {value!r} must map a distribution name (or 'a | b') to a specifier"
                    " string like '>=0.5,<0.6'")
    target = Table("[target]", "Where the patch acts.", (
        Field("module", STRING, "The module whose import runs the patch.", required=True,
              pattern=module, problem="target module {value!r} is not a module name"),
        Field("when", STRING, "Run the patch before or after the module's body (or"
              " 'instead': it may stand in for a module that cannot be imported).",
              default="after", choices=WHEN,
              problem="target.when must be one of {choices}, got {value!r}"),
    ))
    imports = Table("imports", "A module-level `from X import names` statement.", (
        Field("from", STRING, "The module imported from.", required=True),
        Field("names", STRINGS, "The names imported.", required=True),
    ))
    fingerprint = Table("fingerprint", "What the patch expects to find in a module's source"
                        " before it acts; exactly one of anchors, sha256, imports.", (
        Field("module", STRING, "The module whose source is read; 'a | b': the first of"
              " them that exists.", required=True, pattern=_alternatives(module),
              problem="fingerprint module {value!r} is not a module name (or 'a | b': the"
                      " first of them that exists)"),
        Field("anchors", STRINGS, "Exact texts that must occur in the source.", default=(),
              pattern=r"[\s\S]", problem="an anchor must not be empty"),
        Field("function", STRING, "A qualified name, for sha256.", default=None),
        Field("sha256", STRINGS, "Accepted hashes of the function's normalised source"
              " (`sglang-shims fingerprint MODULE:QUALNAME` prints it).", default=()),
        Field("imports", TABLE, imports.doc, default=None, table=imports),
    ), exactly_one=("anchors", "sha256", "imports"),
        needs=(("sha256", "function",
                "a 'sha256' fingerprint needs 'function' (a qualified name)"),),
        problem="a fingerprint needs exactly one of 'anchors', 'sha256', 'imports'")
    retire = Table("[retire]", "When the problem is gone upstream and the patch becomes a"
                   " logged no-op: any one rule suffices.", (
        Field("when", STRING, "The rule in words, shown by `sglang-shims explain`.",
              required=True),
        Field("exported", STRINGS, "Retire when one of these 'module:name' exists.",
              default=(), pattern=PATTERNS["symbol"],
              problem="exported {value!r} must look like 'module:name'"),
        Field("installed", STRINGS, "Retire when one of these distributions is installed.",
              default=()),
        Field("versions", MAP, gates.format("Retire when every"), default={},
              keys=_alternatives(PATTERNS["dist"]), problem=gate_problem),
    ), at_least_one=("exported", "installed", "versions"),
        problem="needs at least one rule: 'exported', 'installed' or 'versions'")
    provide = Table("provide", "A name supplied on the target module, as a proxy that"
                    " explains itself when called, when the module lacks it.", (
        Field("name", STRING, "The missing name.", required=True,
              pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
              problem="provide name {value!r} is not an identifier"),
        Field("exported_by", STRING, "Which versions exported it.", required=True),
        Field("remedy", STRING, "What the user should install.", required=True),
        Field("provider_dists", STRINGS, "The distributions whose version the message"
              " names (the first installed).", default=()),
        Field("substitute", STRING, "'module:name' serving the call instead.", default=None,
              pattern=PATTERNS["symbol"],
              problem="substitute {value!r} must look like 'module:name'"),
    ))
    gpu = Table("[gpu]", "A GPU gate, evaluated only when the version gates pass.", (
        Field("capability", STRING, "A specifier over the compute capability, e.g. '>=12.0'.",
              required=True, check=_specifier_problem),
    ))
    range_table = Table("[range]", "How the version range was found.", (
        Field("established", STRING, "How the range was read from the published wheels"
              " (a built-in patch writes this in its README.md instead).", default=""),
        Field("test_with", MAP, "Versions the release matrix assumes for other"
              " distributions: name -> version.", default={},
              problem="range.test_with maps distribution names to version strings"),
    ))
    return Table("manifest", "A patch's manifest.toml (sglang-shims).", (
        Field("id", STRING, "The patch id: its folder's name.", required=True,
              pattern=PATTERNS["id"],
              problem="id {value!r} must be lower-case letters, digits, '-' and '.'"),
        Field("summary", STRING, "What breaks, for whom: one line.", required=True,
              pattern=r"^\s*\S[^\n]*\s*$", problem="summary must be one non-empty line"),
        Field("evidence", STRINGS, "https:// URLs of the issue, pull request or commit that"
              " show the break (at least one).", required=True, min_items=1,
              pattern=r"^https://",
              problem="evidence must list at least one https:// URL (issue, PR or commit)"),
        Field("default", STRING, "Whether the patch is on unless a toggle says otherwise.",
              default="on", choices=("on", "off"),
              problem="default must be 'on' or 'off', got {value!r}"),
        Field("policy", STRING, "What a failure does: 'optional' logs it, 'required'"
              " stops the target's import.", default="optional", choices=POLICIES,
              problem="policy must be one of {choices}, got {value!r}"),
        Field("changes", STRING, "What the patch changes (a built-in patch writes this in"
              " its README.md instead).", default=""),
        Field("code", STRING, "The code file, when it is not patch.py.", default=None),
        Field("target", TABLE, target.doc, required=True, table=target),
        Field("requires", MAP, gates.format("A version"), default={},
              keys=_alternatives(PATTERNS["dist"]), problem=gate_problem),
        Field("gpu", TABLE, gpu.doc, default=None, table=gpu),
        Field("range", TABLE, range_table.doc, default={}, table=range_table),
        Field("fingerprint", TABLES, fingerprint.doc, default=[], table=fingerprint),
        Field("retire", TABLE, retire.doc, required=True, table=retire),
        Field("provide", TABLES, provide.doc, default=[], table=provide),
    ))


def parse_gates(table: dict[str, Any], where: str) -> tuple[Gate, ...]:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    gates = []
    for key, spec in table.items():
        if not isinstance(spec, str):
            raise _fail(where, f"gate {key!r} must be a specifier string like '>=0.5,<0.6'")
        dists = tuple(d.strip() for d in key.split("|"))
        bad = [d for d in dists if not matches("dist", d)]
        if bad:
            raise _fail(where, f"gate {key!r} names an invalid distribution {bad[0]!r}")
        try:
            SpecifierSet(spec)
        except InvalidSpecifier as exc:
            raise _fail(where, f"gate {key!r}: invalid specifier {spec!r} ({exc})") from None
        gates.append(Gate(dists, spec.strip()))
    return tuple(gates)


def parse(data: dict[str, Any], where: str, folder: Path | None = None,
          source: str = "builtin") -> Manifest:
    """Build a :class:`Manifest` from parsed TOML, or raise :class:`ManifestError`.

    :func:`table` checks every field; what it cannot state is checked here: the id is
    its folder's name, the gates' specifiers parse, the patch has something to do."""
    from .fields import TableError, read

    try:
        raw = read(table(), data, where)
    except TableError as exc:
        raise ManifestError(str(exc)) from None
    patch_id = raw["id"]
    if folder is not None and folder.name != patch_id:
        raise _fail(where, f"id {patch_id!r} must equal its folder name {folder.name!r}")
    retire = raw["retire"]
    code = raw["code"]
    if code is None and folder is not None and (folder / "patch.py").is_file():
        code = "patch.py"
    provides = tuple(Provide(p["name"], p["exported_by"], p["remedy"], p["provider_dists"],
                             p["substitute"]) for p in raw["provide"])
    when = raw["target"]["when"]
    if code is None and not provides:
        raise _fail(where, "a patch needs code (patch.py) or at least one [[provide]]")
    if when == "instead" and code is None:
        raise _fail(where, "a patch that stands in for its target (when = 'instead') needs"
                    " patch.py with unusable(ctx) and provide(ctx)")
    return Manifest(
        id=patch_id, summary=raw["summary"].strip(), evidence=raw["evidence"],
        target=raw["target"]["module"], when=when, default=raw["default"] == "on",
        policy=raw["policy"], changes=raw["changes"].strip(),
        retire=Retire(retire["when"], retire["exported"], retire["installed"],
                      parse_gates(retire["versions"], where + " [retire] [versions]")),
        requires=parse_gates(raw["requires"], where + " [requires]"),
        gpu=raw["gpu"]["capability"] if raw["gpu"] else None,
        fingerprints=tuple(_fingerprint(f) for f in raw["fingerprint"]), provides=provides,
        code=code, range_note=raw["range"].get("established", ""),
        test_with=dict(raw["range"].get("test_with", {})), folder=folder, source=source,
    )


def _fingerprint(raw: dict[str, Any]) -> Fingerprint:
    module = " | ".join(m.strip() for m in raw["module"].split("|"))
    imports = raw["imports"]
    if imports is not None:
        return Fingerprint(module, import_from=imports["from"], import_names=imports["names"])
    return Fingerprint(module, anchors=raw["anchors"], function=raw["function"],
                       sha256=raw["sha256"])


def load_text(text: str, where: str, folder: Path | None = None,
              source: str = "builtin") -> Manifest:
    # imported here: a process reads the built-in manifests from catalog.jsonl, and parses
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
