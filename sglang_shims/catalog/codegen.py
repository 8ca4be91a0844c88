"""Generate what start-up and waking read without parsing manifests.

Interpreter start may only import ``sys`` and ``os``, and waking up should not parse 28
TOML files, so this module renders, from the validated built-in manifests:

* the watch table inside ``_bootstrap.py`` (between its BEGIN/END markers): ``TARGETS``,
  ``OFF_BY_DEFAULT``, ``REQUIRED``, ``STAND_INS``;
* the watched roots inside ``_activation/_sglang_shims_start.py`` (between its BEGIN/END
  markers): the top-level packages whose first import wakes the bootstrap;
* ``catalog/catalog.jsonl``: every built-in manifest, read by the engine when it wakes;
* ``patches/manifest.schema.json``: the manifest's JSON Schema, for editors (:mod:`.schema`);
* ``_activation/sglang_shims.pth``: a comment line and the line ``import
  _sglang_shims_start``, which is all that ``site`` compiles at every start;
* ``_activation/sglang_shims.start``: the PEP 829 entry point, the same module's ``start``.

``python -m sglang_shims.catalog.codegen --write`` regenerates them; ``--check`` exits 1 if
any is stale (the test suite runs the check).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import data as _data
from . import load as _catalog
from . import schema as _schema

PACKAGE = Path(__file__).resolve().parents[1]
BOOTSTRAP = PACKAGE / "_bootstrap.py"
START_MODULE = PACKAGE / "_activation" / "_sglang_shims_start.py"
PTH = PACKAGE / "_activation" / "sglang_shims.pth"
START = PACKAGE / "_activation" / "sglang_shims.start"
BEGIN = "# BEGIN GENERATED WATCH TABLE\n"
END = "# END GENERATED WATCH TABLE\n"
ROOTS_BEGIN = "# BEGIN GENERATED ROOTS\n"
ROOTS_END = "# END GENERATED ROOTS\n"
WIDTH = 100

PTH_COMMENT = (
    "# sglang-shims (https://github.com/sglang-shims/sglang-shims): import-time fixes for sglang."
    " The next line imports _sglang_shims_start (beside this file, nothing of the package); it"
    " puts a finder on sys.meta_path that loads sglang_shims._bootstrap only when one of"
    " {roots} is imported. SGLANG_SHIMS=0 turns it off; `pip uninstall sglang-shims` removes"
    " this file.\n")
PTH_LINE = "import _sglang_shims_start\n"
"""The import is the call: the module starts watching when imported under its own name.
Anything more on this line is compiled at every interpreter start (``_sglang_shims_start``'s
docstring says what that costs)."""
START_ENTRY = "_sglang_shims_start:start\n"


def _tuple(names: list[str]) -> str:
    return "(" + ", ".join(f'"{n}"' for n in names) + ("," if len(names) == 1 else "") + ")"


def _set(names: set[str] | list[str]) -> str:
    return "frozenset({" + ", ".join(f'"{n}"' for n in sorted(names)) + "})" if names \
        else "frozenset()"


def _declare(name: str, ids: list[str]) -> str:
    """``NAME = frozenset({...})``; an empty one is annotated, for mypy's sake."""
    if not ids:
        return f"{name}: frozenset[str] = frozenset()\n"
    text = f"{name} = {_set(ids)}\n"
    if len(text) > WIDTH:
        text = f"{name} = frozenset({{\n" + "".join(f'    "{i}",\n' for i in ids) + "})\n"
    return text


def render_table(catalog: _catalog.Catalog) -> str:
    """The generated block of ``_bootstrap.py``: data a reader can read, no positions."""
    builtin = sorted((m for m in catalog.manifests if m.source == "builtin"), key=lambda m: m.id)
    lines = [BEGIN, "# patch id -> the module whose import triggers it\n", "TARGETS = {\n"]
    for m in builtin:
        entry = f'    "{m.id}": "{m.target}",\n'
        if len(entry) > WIDTH:
            entry = f'    "{m.id}":\n        "{m.target}",\n'
        lines.append(entry)
    lines.append("}\n")
    for name, ids, why in (
            ("OFF_BY_DEFAULT", [m.id for m in builtin if not m.default],
             "on only when a toggle turns them on"),
            ("REQUIRED", [m.id for m in builtin if m.policy == "required"],
             "policy = \"required\": a failure stops the import"),
            ("STAND_INS", [m.id for m in builtin if m.when == "instead"],
             "may stand in for their whole target module")):
        lines += [f"# {why}\n", _declare(name, ids)]
    lines.append("# stand-in patch id -> (target, its version gates): checked by the finder\n"
                 "# before it offers a module that is not installed (Watcher.admits)\n"
                 "STAND_IN_GATES = {\n")
    for m in builtin:
        if m.when == "instead":
            gates = tuple((" | ".join(g.dists), g.spec) for g in m.requires)
            line = f"    {m.id!r}: {(m.target, gates)!r},\n".replace("'", '"')
            if len(line) > 100:  # the repository's line length: one gate a line
                line = (f"    {m.id!r}: ({m.target!r}, (\n".replace("'", '"')
                        + "".join(f"        {g!r},\n".replace("'", '"') for g in gates)
                        + "    )),\n")
            lines.append(line)
    lines += ["}\n", END]
    return "".join(lines)


def roots_of(catalog: _catalog.Catalog) -> list[str]:
    return sorted({m.target.partition(".")[0] for m in catalog.manifests
                   if m.source == "builtin"})


def render_roots(roots: list[str]) -> str:
    """The generated block of ``_sglang_shims_start.py``."""
    return (ROOTS_BEGIN + "# the top-level packages that hold a built-in patch's target\n"
            f"ROOTS = {_tuple(roots)}\n" + ROOTS_END)


def pth_text(roots: list[str]) -> str:
    return PTH_COMMENT.format(roots=", ".join(roots)) + PTH_LINE


def _splice(path: Path, begin: str, end: str, block: str) -> str:
    """The text of ``path`` with what lies between its ``begin`` and ``end`` markers (the
    markers included) replaced by ``block``."""
    text = path.read_text(encoding="utf-8")
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    return head + block + tail


def expected(catalog: _catalog.Catalog) -> dict[Path, str]:
    """The generated files' intended contents."""
    builtin = [m for m in catalog.manifests if m.source == "builtin"]
    roots = roots_of(catalog)
    return {
        BOOTSTRAP: _splice(BOOTSTRAP, BEGIN, END, render_table(catalog)),
        START_MODULE: _splice(START_MODULE, ROOTS_BEGIN, ROOTS_END, render_roots(roots)),
        _data.CATALOG: _data.render(builtin, _catalog.builtin_root()),
        _schema.path(_catalog.builtin_root()): _schema.render(),
        PTH: pth_text(roots),
        START: START_ENTRY,
    }


def stale(catalog: _catalog.Catalog | None = None) -> list[Path]:
    catalog = catalog or _catalog.load(toml=True)
    out = []
    for path, content in expected(catalog).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != content:
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sglang_shims.catalog.codegen",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate the files")
    parser.add_argument("--check", action="store_true", help="exit 1 if any file is stale")
    args = parser.parse_args(argv)
    catalog = _catalog.load(toml=True)
    if catalog.errors:
        for folder, error in catalog.errors.items():
            print(f"{folder}: {error}", file=sys.stderr)
        return 1
    if args.write:
        for path, content in expected(catalog).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
            print(f"wrote {path.relative_to(PACKAGE.parent)}")
        return 0
    paths = stale(catalog)
    for path in paths:
        print(f"stale: {path.relative_to(PACKAGE.parent)}", file=sys.stderr)
    return 1 if paths else 0


if __name__ == "__main__":
    raise SystemExit(main())
