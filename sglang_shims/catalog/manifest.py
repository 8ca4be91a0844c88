"""Patch manifests: the declarative half of a patch, as values.

A patch folder holds ``manifest.toml`` and, optionally, ``patch.py``.  The manifest
says what the patch is for (id, summary, evidence), where it acts (target module,
before or after its body), when it may act (version and GPU gates), what it expects
to find there (fingerprints), when it is no longer needed (retire rules), whether it
is on by default and what happens if it fails (policy).

The value classes here are what a waking process builds from ``catalog.jsonl``; reading
TOML and validating it (:mod:`.validate`, strict, every message naming the file and the
field) is loaded only where a manifest is parsed: a ``SGLANG_SHIMS_PATH`` folder, the CLI,
the code generator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

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
        """Set the fields a :meth:`deferred` manifest was made without, all of them, once.

        Later calls change nothing (a complete manifest is immutable like any other): two
        threads may read a field of the same manifest at once, and both complete it; the
        values are the same, read from the same line."""
        if getattr(self, "_rest", None) is None:
            return
        if set(fields) != _DEFERRED:
            raise AttributeError(f"manifest {self.id!r} needs exactly {sorted(_DEFERRED)}")
        for name, value in fields.items():
            _set(self, name, value)
        _set(self, "_rest", None)

    if not TYPE_CHECKING:  # to a type checker every field is always set
        def __getattr__(self, name: str) -> Any:
            # reached only for a slot not set yet: a deferred manifest's other fields
            if name not in self._FIELDS:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute"
                                     f" {name!r}")
            rest = getattr(self, "_rest", None)
            if rest is not None:
                rest(self)
            # set now, by this thread or by another that was completing it meanwhile
            return object.__getattribute__(self, name)

    @property
    def roots(self) -> set[str]:
        return {self.target.partition(".")[0]}


_DEFERRED = frozenset(Manifest._FIELDS) - {*Manifest.HEAD, "source"}
