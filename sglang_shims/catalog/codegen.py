"""Generate what start-up and waking read without parsing manifests.

Interpreter start may only import ``sys`` and ``os``, and waking up should not parse 28
TOML files, so this module renders, from the validated built-in manifests:

* the watch table inside ``_bootstrap.py`` (between its BEGIN/END markers): ``TARGETS``,
  ``OFF_BY_DEFAULT``, ``REQUIRED``, ``STAND_INS``;
* ``catalog/catalog.json``: every built-in manifest, read by the engine when it wakes;
* ``patches/manifest.schema.json``: the manifest's JSON Schema, for editors (:mod:`.schema`);
* ``_activation/sglang_shims.pth``: a comment line and one ``import`` line that checks
  ``SGLANG_SHIMS`` and puts a one-line finder on ``sys.meta_path``; it imports nothing of
  ours until a package one of our patches targets is imported, and never raises;
* ``_activation/sglang_shims.start``: the PEP 829 entry point.

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
PTH = PACKAGE / "_activation" / "sglang_shims.pth"
START = PACKAGE / "_activation" / "sglang_shims.start"
BEGIN = "# BEGIN GENERATED WATCH TABLE\n"
END = "# END GENERATED WATCH TABLE\n"
WIDTH = 100

PTH_COMMENT = (
    "# sglang-shims (https://github.com/sglang-shims/sglang-shims): import-time fixes for sglang."
    " The next line imports nothing; it puts a finder on sys.meta_path that loads"
    " sglang_shims._bootstrap only when one of {roots} is imported."
    " SGLANG_SHIMS=0 turns it off; `pip uninstall sglang-shims` removes this file.\n")

# The first stage: a finder made of a lambda on a SimpleNamespace (no class to compile,
# nothing to import).  It answers None for every name but the watched roots (when
# SGLANG_SHIMS_PATH is set, whose targets it cannot know yet: any name but sitecustomize,
# usercustomize and the built-in modules that site itself may import, such as pwd);
# on the first of those it runs WAKE, compiled only then.  ``d`` keeps sys.path as site had
# it, so that the package is found where it is installed, not in the current directory.
STAGE_ONE = (
    'import os, sys; os.environ.get("SGLANG_SHIMS", "").strip().lower() in'
    ' ("0", "false", "off", "no") or sys.meta_path.insert(0, type(sys.implementation)('
    "sglang_shims_pth=1, find_spec=lambda n, *a, r={roots}, d={{'w': {wake!r},"
    " 'site_path': sys.path[:], 'x': 'SGLANG_SHIMS_PATH' in os.environ}}:"
    ' (n in r or d["x"] and n[-9:] != "customize" and n not in sys.builtin_module_names)'
    ' and (d.get("wake") or exec(d["w"], d) or d["wake"])(n, *a) or None))\n')

# The second stage, run inside find_spec (the global import lock is held): it loads our
# package (its __init__ imports nothing) and the bootstrap without the import system (no
# module lock taken), activates it and lets the
# real watcher answer for the name being imported.  If the bootstrap cannot be loaded (a
# half-removed install), the problem is reported once, now or at the first watched import.
# Nothing is removed from sys.meta_path here: the import system is iterating over it, and
# removing an entry would make it skip the next finder; the first stage stays, inert.
WAKE = """\
import os, sys
def wake(n, p=None, t=None):
    global wake
    wake = lambda *a: None  # once: the watcher answers from now on
    try:
        b = sys.modules.get("sglang_shims._bootstrap")
        if b is None:
            x, y = sys.modules["_frozen_importlib_external"], sys.modules["_frozen_importlib"]
            pkg = sys.modules.get("sglang_shims")
            if pkg is None:
                # where site found us: sys.path as it was when this line ran (never the
                # current directory, which comes first later), else an editable finder
                s = x.PathFinder.find_spec("sglang_shims", site_path)
                for f in [] if s else list(sys.meta_path):
                    s = f is not x.PathFinder and getattr(f, "find_spec", None) and \
                        f.find_spec("sglang_shims", None)
                    if s:
                        break
                pkg = sys.modules["sglang_shims"] = y.module_from_spec(s)
                try:
                    s.loader.exec_module(pkg)
                except BaseException:
                    del sys.modules["sglang_shims"]
                    raise
            name = "sglang_shims._bootstrap"
            path = os.path.join(pkg.__path__[0], "_bootstrap.py")
            loader = x.SourceFileLoader(name, path)
            b = sys.modules[name] = y.module_from_spec(
                x.spec_from_file_location(name, path, loader=loader))
            try:
                loader.exec_module(b)
            except BaseException:
                del sys.modules[name]
                raise
            pkg._bootstrap = b
        b.activate("pth")
    except Exception as e:
        if any(getattr(f, "sglang_shims_missing", False) for f in sys.meta_path):
            return None  # site read this file twice (seen with pyenv venvs): one reporter
        problem = "%s: %s" % (type(e).__name__, e)
        def complain(n, p=None, t=None):
            if n in {roots} and not finder.done:
                finder.done = True
                sys.stderr.write("sglang-shims: start-up hook failed (%s); patches are not"
                                 " applied in this process. To fix it, reinstall it with"
                                 " `pip install --force-reinstall sglang-shims`, or set"
                                 " SGLANG_SHIMS=0 to run without it.\\n" % problem)
        finder = type(sys.implementation)(find_spec=complain, done=False,
                                          sglang_shims_missing=True)
        sys.meta_path.insert(0, finder)
        return complain(n)
    w = b.BOOT.watcher
    return w.find_spec(n, p, t) if w is not None and w in sys.meta_path else None
"""


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
            lines.append(f"    {m.id!r}: {(m.target, gates)!r},\n".replace("'", '"'))
    lines += ["}\n", END]
    return "".join(lines)


def roots_of(catalog: _catalog.Catalog) -> list[str]:
    return sorted({m.target.partition(".")[0] for m in catalog.manifests
                   if m.source == "builtin"})


def pth_text(roots: list[str]) -> str:
    literal = _set(roots)
    wake = WAKE.replace("{roots}", literal)
    return (PTH_COMMENT.format(roots=", ".join(roots))
            + STAGE_ONE.format(roots=_tuple(roots), wake=wake))


def expected(catalog: _catalog.Catalog) -> dict[Path, str]:
    """The generated files' intended contents."""
    text = BOOTSTRAP.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    builtin = [m for m in catalog.manifests if m.source == "builtin"]
    return {
        BOOTSTRAP: head + render_table(catalog) + tail,
        _data.CATALOG_JSON: _data.render(builtin, _catalog.builtin_root()),
        _schema.path(_catalog.builtin_root()): _schema.render(),
        PTH: pth_text(roots_of(catalog)),
        START: "sglang_shims._bootstrap:start\n",
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
