"""``sglang-shims new ID --target MODULE``: a patch folder to start from.

It writes ``<folder>/<ID>/manifest.toml``, ``patch.py`` and ``README.md``, and a test in
the layout of ``tests/patches/``.  Every value in the manifest is a real one the validator
accepts -- the version gate is the one version installed here, the retire rule fires on
any later one -- except ``evidence``, which is left empty: a patch nobody has shown to be
needed must not load, so until the author lists the issue, pull request or commit, the
manifest is invalid and ``sglang-shims check`` (and the codegen, and the test suite) say
so, naming the field.  ``patch.py`` retires the patch until ``apply`` is written, and the
test expects it applied: each piece left unfinished fails where its author will look.
"""

from __future__ import annotations

import keyword
import os
from pathlib import Path
from typing import Any

from .. import _bootstrap
from ..catalog import load as _catalog
from ..catalog import prose as _prose
from ..catalog import schema as _schema
from ..catalog.manifest import matches

MANIFEST = '''\
#:schema {schema}
id = "{id}"
summary = "{target}: say in one line what breaks, and for whom"
# The issue, pull request or commit that shows the break (https:// URLs). While this list
# is empty the manifest is invalid: `sglang-shims check` reports the patch as not loaded.
evidence = []
default = "on"
policy = "optional"

[target]
module = "{target}"
when = "{when}"  # "before" runs ahead of the module's body, "after" once it has run

# Never guess a range: read the published wheels (docs/writing-a-patch.md). Until then
# the patch acts on {dist} {version} only, the version installed where it was written.
[requires]
"{dist}" = "=={version}"

# What the patch expects to find before it acts: without it, an upstream change is
# patched blind. A function's source hash, for `sha256 = [...]` with `function`:
#   sglang-shims fingerprint {target}:QUALNAME
# [[fingerprint]]
# module = "{target}"
# anchors = ["an exact text of its source"]

[retire]
when = "{dist} is newer than {version}, the only version this patch was checked against"
versions = {{ "{dist}" = ">{version}" }}
'''

PATCH = '''\
"""{id}: what breaks, and why this change is the safe fix.

manifest.toml says where and when this runs; this docstring says why.
"""

from __future__ import annotations

from sglang_shims.patching import PatchContext


def apply(ctx: PatchContext) -> None:
    """Change ``ctx.module`` (the target, {when} its body runs) through ``ctx`` only --
    ``ctx.setattr``, ``ctx.wrap``, ``ctx.setitem``, ``ctx.setenv`` -- so that a failure is
    rolled back and ``sglang_shims.revert()`` can undo it."""
    ctx.retire("patch.py is still the skeleton `sglang-shims new` wrote")
'''

README = """\
# {id}

## {changes}

<!-- What the patch changes, exactly: which names, in which module, and what is left
alone. `sglang-shims explain {id}` and docs/patches.md show this section. -->

## {established}

<!-- How the range in manifest.toml was read from the published wheels: which releases
have the break, which first fixed it, and how you checked. -->
"""

TEST = '''\
"""{id}: the patch applied in-process to a stand-in for its target.

The ``shim_patch`` fixture runs the real engine on ``TARGET``, without a subprocess.
"""

from __future__ import annotations

from pathlib import Path

from sglang_shims.testing.inprocess import ShimPatch

PATCH = {folder}
# The version the gates are judged against, whatever is installed where the test runs.
VERSIONS = {{"{dist}": "{version}"}}

# The target's body, as little of it as shows the break: what the patch reads and changes.
TARGET = """\\
"""


def test_applies(shim_patch: ShimPatch) -> None:
    record = shim_patch(PATCH, TARGET, versions=VERSIONS)
    assert record.state == "applied", record.reason
'''


class Refused(ValueError):
    """Nothing was written; the message says why."""


def check_id(patch_id: str) -> str:
    if not matches("id", patch_id) or "\n" in patch_id:
        raise Refused(f"invalid patch id {patch_id!r}: lower-case letters, digits, '-' and '.',"
                      " starting and ending with a letter or digit")
    return patch_id


def check_target(target: str) -> str:
    parts = target.split(".")
    if not matches("module", target) or "\n" in target or any(map(keyword.iskeyword, parts)):
        raise Refused(f"--target {target!r} is not a module name (dotted identifiers, such as"
                      " sglang.srt.utils)")
    if _bootstrap.engine_runs_on(target):
        raise Refused(f"--target {target}: a patch cannot act on the standard library or on"
                      " what sglang-shims itself runs on (packaging, wrapt, tomli)")
    return target


def distribution(target: str) -> tuple[str, str]:
    """(the distribution that installs ``target``'s top-level package, its version here)."""
    from importlib import metadata

    from ..engine.gates import Environment
    from ..patching.dists import KERNEL_DISTS

    root = target.partition(".")[0]
    dists = list(dict.fromkeys(metadata.packages_distributions().get(root, [])))
    # sgl_kernel is installed by either name: the one patches believe first
    dists.sort(key=lambda d: KERNEL_DISTS.index(d) if d in KERNEL_DISTS else -1)
    env = Environment()
    for dist in dists:
        version = env.version(dist)
        if version is not None:
            return dist, version.partition("+")[0]
    raise Refused(f"no installed distribution provides {root!r}: install the version of it"
                  " the patch is for (its gate and fingerprints are read from what is"
                  " installed)")


def create(patch_id: str, target: str, when: str = "after", folder: Path | None = None,
           tests: Path | None = None) -> dict[str, Any]:
    """Write the patch folder and its test; returns what was written (``--json``'s data).
    Raises :class:`Refused` (having written nothing) for a bad id or target, an id or a
    file that exists already, or a target no installed distribution provides."""
    check_id(patch_id)
    check_target(target)
    builtin = _catalog.builtin_root()
    root = Path("patches") if folder is None else folder
    home = root / patch_id
    test = (Path("tests", "patches") if tests is None else tests) / (
        "test_" + patch_id.replace("-", "_").replace(".", "_") + ".py")
    for path in (home, test):
        if os.path.lexists(path):
            raise Refused(f"{path} exists; nothing was written")
    known = _catalog.load(_bootstrap.env("SGLANG_SHIMS_PATH")).by_id()
    if patch_id in known:
        raise Refused(f"patch id {patch_id!r} is taken (by {known[patch_id].folder});"
                      " nothing was written")
    dist, version = distribution(target)
    schema = _schema.path(builtin)
    fill = {"id": patch_id, "target": target, "when": when, "dist": dist, "version": version,
            "schema": os.path.relpath(schema, home) if _inside(home, builtin)
            else str(schema.resolve()),
            "folder": _path_from(test, home),
            "changes": _prose.SECTIONS["changes"],
            "established": _prose.SECTIONS["established"]}
    files = {"manifest": home / "manifest.toml", "code": home / "patch.py",
             "readme": home / _prose.README, "test": test}
    home.mkdir(parents=True)
    test.parent.mkdir(parents=True, exist_ok=True)
    for key, template in (("manifest", MANIFEST), ("code", PATCH), ("readme", README),
                          ("test", TEST)):
        files[key].write_text(template.format(**fill), encoding="utf-8")
    return {"id": patch_id, "target": target, "when": when,
            "distribution": {"name": dist, "version": version},
            "builtin": _inside(home, builtin),
            "files": {key: str(path) for key, path in files.items()},
            "next": next_steps(patch_id, target, dist, version, _inside(home, builtin), root)}


def _path_from(test: Path, folder: Path) -> str:
    """Python for ``folder``, from the test file: ``Path(__file__).resolve().parents[N]``
    and the names below it, so the test finds its patch wherever the checkout lives."""
    parts = Path(os.path.relpath(folder.resolve(), test.parent.resolve())).parts
    up = 0
    while up < len(parts) and parts[up] == "..":
        up += 1
    return " / ".join([f"Path(__file__).resolve().parents[{up}]",
                       *(repr(part).replace("'", '"') for part in parts[up:])])


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def next_steps(patch_id: str, target: str, dist: str, version: str, builtin: bool,
               root: Path) -> list[str]:
    return [
        "evidence: list the issue, pull request or commit in manifest.toml (until then"
        " `sglang-shims check` reports the patch as not loaded)",
        f"the range: read the published wheels and widen [requires] (now {dist} {version}"
        " only) and [retire]",
        f"fingerprints: `sglang-shims fingerprint {target}:QUALNAME`",
        "apply(ctx) in patch.py, and the test",
        "README.md: what it changes, how the range was established",
        "python -m sglang_shims.catalog.codegen --write &&"
        " sglang-shims list --markdown > docs/patches.md" if builtin else
        f"SGLANG_SHIMS_PATH={root.resolve()} sglang-shims explain {patch_id}",
    ]


def text(data: dict[str, Any]) -> str:
    """What ``sglang-shims new`` prints for people."""
    lines = [f"created patch {data['id']} (target {data['target']}, {data['when']} its body"
             " runs):"]
    lines += [f"  {path}" for path in data["files"].values()]
    lines += ["", "next:"]
    lines += [f"  {n}. {step}" for n, step in enumerate(data["next"], 1)]
    return "\n".join(lines)
