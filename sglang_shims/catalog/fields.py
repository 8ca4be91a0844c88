"""Typed TOML tables described as data: what :mod:`.manifest` validates with, and what
:mod:`.schema` turns into the JSON Schema editors read.

A :class:`Table` lists its :class:`Field` s -- each a key, a TOML type, whether it must be
present, its default, and the rule its value must follow (a pattern or a set of choices,
with the message that names the field when it does not) -- plus the rules that span
several keys (exactly one of, at least one of, one needs another).  :func:`read` checks a
parsed TOML table against it; the schema is written from the same objects, so the editor
and ``sglang-shims check`` can never disagree on what a field is.  What a table cannot say
(a PEP 440 specifier that parses, an id equal to its folder's name) stays in code, in
:func:`sglang_shims.catalog.validate.parse`.

Frozen dataclasses: this module is imported only when a manifest is parsed from TOML (the
CLI, ``SGLANG_SHIMS_PATH`` folders), never when a process wakes from ``catalog.jsonl``, so
what ``dataclasses`` costs at import is never paid on the way to serving.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import re

STRING = "string"
STRINGS = "strings"  # an array of strings
TABLE = "table"
TABLES = "tables"  # an array of tables: [[name]]
MAP = "map"  # a table of free keys (matching ``keys``) to strings
KINDS = (STRING, STRINGS, TABLE, TABLES, MAP)
_PYTHON_TYPE: dict[str, type] = {STRING: str, STRINGS: list, TABLE: dict, TABLES: list,
                                 MAP: dict}


class TableError(ValueError):
    """A table that does not follow its description; the message names where and the field
    (:func:`sglang_shims.catalog.validate.parse` passes it on as a ``ManifestError``)."""


def fail(where: str, message: str) -> TableError:
    return TableError(f"{where}: {message}")


_compiled: dict[str, re.Pattern[str]] = {}


def matches(pattern: str, text: str) -> bool:
    """Does ``text`` match ``pattern`` (anchored at its start, as JSON Schema's are by
    their own ``^``)?  Compiled once per pattern."""
    found = _compiled.get(pattern)
    if found is None:
        import re

        found = _compiled[pattern] = re.compile(pattern)
    return found.match(text) is not None


@dataclass(frozen=True)
class Field:
    """One key of a table.

    ``pattern`` applies to a string, or to each item of an array of strings; ``choices``
    to a string; ``problem`` is the message when either rule fails (``{value!r}`` and
    ``{choices}`` are filled in).  ``table`` describes the value of a ``TABLE`` or each item
    of ``TABLES``; ``keys`` is the pattern of a ``MAP``'s keys.  ``check`` is a rule a
    pattern cannot state (it returns the problem, or ``None``); the schema cannot carry it.
    """

    key: str
    kind: str
    doc: str
    _: KW_ONLY
    required: bool = False
    default: Any = None
    pattern: str | None = None
    choices: tuple[str, ...] = ()
    problem: str = ""
    table: Table | None = None
    keys: str | None = None
    min_items: int = 0
    check: Callable[[Any], str | None] | None = None

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind
        assert (self.table is not None) == (self.kind in (TABLE, TABLES)), self.key

    def complaint(self, value: object) -> str:
        return self.problem.format(value=value, choices=self.choices)


@dataclass(frozen=True)
class Table:
    """A TOML table: its fields in the order a manifest writes them, and the rules over
    several of them.  A key counts as given in ``exactly_one`` / ``at_least_one`` /
    ``needs`` when its value is not empty (an empty list gives nothing).  ``needs`` holds
    ``(key, needed, message)``: ``key`` given without ``needed`` fails with ``message``."""

    name: str
    doc: str
    fields: tuple[Field, ...]
    _: KW_ONLY
    exactly_one: tuple[str, ...] = ()
    at_least_one: tuple[str, ...] = ()
    needs: tuple[tuple[str, str, str], ...] = ()
    problem: str = ""
    """The message when ``exactly_one`` or ``at_least_one`` fails."""

    def field(self, key: str) -> Field:
        return next(f for f in self.fields if f.key == key)


def _given(value: object) -> bool:
    if isinstance(value, (str, list, tuple, dict)):
        return len(value) > 0
    return value is not None


def read(table: Table, data: object, where: str) -> dict[str, Any]:
    """``data`` checked against ``table``: every field's value (its default when absent),
    or :class:`TableError` naming ``where`` and the field."""
    if not isinstance(data, dict):
        raise fail(where, f"{table.name} must be a table")
    out: dict[str, Any] = {}
    for field in table.fields:
        if field.key not in data:
            if field.required:
                raise fail(where, f"missing required field {field.key!r}")
            out[field.key] = field.default
            continue
        out[field.key] = _value(field, data[field.key], where)
    extra = sorted(set(data) - {f.key for f in table.fields})
    if extra:
        raise fail(where, f"unknown field(s) {extra}; check the spelling")
    given = [key for key in table.exactly_one if _given(out[key])]
    if table.exactly_one and len(given) != 1:
        raise fail(where, table.problem)
    if table.at_least_one and not any(_given(out[key]) for key in table.at_least_one):
        raise fail(where, table.problem)
    for key, needed, message in table.needs:
        if _given(out[key]) and not _given(out[needed]):
            raise fail(where, message)
    return out


def _of_type(value: object, wanted: type) -> bool:
    """``isinstance``, as a call: inline, mypy would narrow ``value`` to ``object``."""
    return isinstance(value, wanted)


def _value(field: Field, value: Any, where: str) -> Any:
    wanted = _PYTHON_TYPE[field.kind]
    if not _of_type(value, wanted):
        raise fail(where, f"field {field.key!r} must be {wanted.__name__},"
                   f" got {type(value).__name__}")
    if field.kind == STRING:
        if (field.choices and value not in field.choices) or (
                field.pattern is not None and not matches(field.pattern, value)):
            raise fail(where, field.complaint(value))
    elif field.kind == STRINGS:
        if not all(isinstance(v, str) for v in value):
            raise fail(where, f"field {field.key!r} must be a list of strings")
        if len(value) < field.min_items:
            raise fail(where, field.complaint(value))
        for item in value:
            if field.pattern is not None and not matches(field.pattern, item):
                raise fail(where, field.complaint(item))
        value = tuple(value)
    elif field.kind == TABLE:
        assert field.table is not None
        value = read(field.table, value, f"{where} [{field.key}]")
    elif field.kind == TABLES:
        assert field.table is not None
        value = [read(field.table, item, f"{where} [[{field.key}]] #{i + 1}")
                 for i, item in enumerate(value)]
    elif field.kind == MAP:
        for key, item in value.items():
            if not isinstance(item, str) or (field.keys is not None
                                             and not matches(field.keys, key)):
                raise fail(f"{where} [{field.key}]", field.complaint(key))
    if field.check is not None and (problem := field.check(value)):
        raise fail(where, problem)
    return value
