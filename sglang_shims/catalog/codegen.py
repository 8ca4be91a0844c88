"""Generate what start-up reads without parsing manifests: the watch table and the .pth.

Interpreter start may only import the tiny bootstrap, which therefore cannot read
TOML.  This module renders, from the built-in manifests:

* the watch table inside ``_bootstrap.py`` (between its BEGIN/END markers);
* ``_activation/sglang_shims.pth``: one ``import`` line that checks ``SGLANG_SHIMS``
  before importing anything and never raises;
* ``_activation/sglang_shims.start``: the PEP 829 entry point.

``python -m sglang_shims.catalog.codegen --write`` regenerates them; ``--check`` exits 1 if any
is stale (the test suite runs the check).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import load as _catalog

PACKAGE = Path(__file__).resolve().parents[1]
BOOTSTRAP = PACKAGE / "_bootstrap.py"
PTH = PACKAGE / "_activation" / "sglang_shims.pth"
START = PACKAGE / "_activation" / "sglang_shims.start"
BEGIN = "# BEGIN GENERATED WATCH TABLE\n"
END = "# END GENERATED WATCH TABLE\n"

# What the .pth line runs, kept readable here and flattened by ``pth_line``.  The
# kill switch is checked with ``os`` only (``site`` imported it already); the normal
# path compiles four short lines.  If the bootstrap cannot be imported (a half-removed
# install), FALLBACK -- compiled only then -- installs a finder that reports the problem
# once, when sglang or the kernel is first imported.
TRY = """\
try:
    import sglang_shims._bootstrap as _sglang_shims_boot
    _sglang_shims_boot.activate("pth")
except Exception as _sglang_shims_error:
    exec({fallback!r})
"""
FALLBACK = """\
import sys as _sys
class _SglangShimsMissing:
    def __init__(self, problem):
        self.problem = problem
    def find_spec(self, name, path=None, target=None):
        if name in {roots}:
            import sys
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            sys.stderr.write("sglang-shims: start-up hook failed (%s); patches are not "
                             "applied. Reinstall sglang-shims, or set SGLANG_SHIMS=0.\\n"
                             % self.problem)
# site may process this file twice (seen with pyenv venvs): install one reporter
if not any(type(f).__name__ == "_SglangShimsMissing" for f in _sys.meta_path):
    _sys.meta_path.insert(0, _SglangShimsMissing("%s: %s" % (
        type(_sglang_shims_error).__name__, _sglang_shims_error)))
"""


def watch_table(catalog: _catalog.Catalog) -> dict[str, tuple[str, bool, bool, bool]]:
    return {m.id: (m.target, m.default, m.policy == "required", m.when == "instead")
            for m in sorted(catalog.manifests, key=lambda m: m.id) if m.source == "builtin"}


def render_table(table: dict[str, tuple[str, bool, bool, bool]]) -> str:
    lines = [BEGIN,
             "# patch id -> (module whose import triggers it, on by default, policy is required,\n",
             "#              stands in for the module)\n",
             "PATCHES: dict[str, tuple[str, bool, bool, bool]] = {\n"]
    for pid, (mod, default, required, instead) in table.items():
        entry = f"    {pid!r}: ({mod!r}, {default}, {required}, {instead}),\n".replace("'", '"')
        if len(entry) > 100:  # keep the generated module inside the project's line length
            entry = (f"    {pid!r}: (\n        {mod!r},\n        {default}, {required}, {instead},"
                     f"\n    ),\n").replace("'", '"')
        lines.append(entry)
    lines += ["}\n", END]
    return "".join(lines)


def pth_line(roots: set[str]) -> str:
    fallback = FALLBACK.replace("{roots}", repr(sorted(roots)).replace("[", "{").replace("]", "}"))
    code = TRY.format(fallback=fallback)
    return ('import os; os.environ.get("SGLANG_SHIMS", "").strip().lower() in '
            f'("0", "false", "off", "no") or exec({code!r})\n')


def expected(catalog: _catalog.Catalog) -> dict[Path, str]:
    """The generated files' intended contents."""
    table = watch_table(catalog)
    text = BOOTSTRAP.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    roots = {entry[0].partition(".")[0] for entry in table.values()}
    return {
        BOOTSTRAP: head + render_table(table) + tail,
        PTH: pth_line(roots),
        START: "sglang_shims._bootstrap:start\n",
    }


def stale(catalog: _catalog.Catalog | None = None) -> list[Path]:
    catalog = catalog or _catalog.load(include_builtin=True)
    out = []
    for path, content in expected(catalog).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != content:
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sglang_shims.catalog.codegen",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate the files")
    parser.add_argument("--check", action="store_true", help="exit 1 if any file is stale")
    args = parser.parse_args(argv)
    catalog = _catalog.load()
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
