"""``manifest.toml`` -> :class:`~.manifest.Manifest`: TOML read, every field checked.

Validation is strict and every message names the file and the field, because a typo in a
gate must never silently turn a patch off.  What a manifest may hold is written once, as
data: the field table (:func:`table`), which :func:`parse` checks a manifest against and
from which ``catalog.schema`` writes the JSON Schema editors validate with.

Apart from :mod:`.manifest` (the values), because a waking process never parses TOML: it
reads the built-in manifests from ``catalog.jsonl``, validated when it was generated.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .manifest import (
    PATTERNS,
    POLICIES,
    WHEN,
    Fingerprint,
    Gate,
    Manifest,
    ManifestError,
    Provide,
    Retire,
    matches,
)

if TYPE_CHECKING:
    from pathlib import Path

    from . import fields


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
