"""The generators whose inputs are outside the repository: the index snapshot, the kernel
data, the per-release index, the matrix and the mutation pass.

Each ``check_*`` is offline: what the output says against what the repository holds today
(the release list, the manifests, the kernel exports), so that a file that fell behind
its inputs fails CI.  Each ``write_*`` reaches the index, the wheels (through the wheel
cache) or runs for hours.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from packaging.version import Version

from . import kernel_exports, release_index, snapshot
from .context import REPO, Context, log

__all__ = ["kernel_exports", "release_index", "snapshot"]

SNAPSHOT = "tools/refresh/data/index.json"
EXPORTS = "tools/refresh/data/sgl_kernel_exports.json"
SYMBOLS = "sglang_shims/kernels/surface/data/sgl_kernel_symbols.json"
OPSET = "sglang_shims/kernels/surface/data/moe_fp8_ops.json"
RELEASE_INDEX = "tests/data/release_index.json"
MUTATION = "docs/mutation-result.json"
SGLANG_PY312 = ("--python-version", "3.12", "--implementation", "cp", "--platform",
                "manylinux_2_34_x86_64")
"""sglang 0.5.17 and later publish CPython 3.12 wheels only: their .py files are read
on any Python."""


def _json(context: Context, rel: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((context.root / rel).read_text(encoding="utf-8"))
    return data


def sglang_wheel(context: Context, version: str) -> Path:
    """The published wheel of sglang ``version``, from the wheel cache (fetched once)."""
    from sglang_shims.testing import wheels

    try:
        return wheels.fetch("sglang", version, pip_args=context.pip_args())
    except RuntimeError:
        return wheels.fetch("sglang", version, pip_args=(*context.pip_args(), *SGLANG_PY312))


def releases(context: Context) -> list[str]:
    return release_index.releases(context.root / "tests" / "data" / "sglang_releases.txt")


# -- the index snapshot ------------------------------------------------------------------

def check_snapshot(context: Context) -> list[str]:
    return snapshot.problems(context.root / SNAPSHOT)


def write_snapshot(context: Context) -> None:
    path = context.root / SNAPSHOT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(snapshot.render(snapshot.build(context, path)), encoding="utf-8")


# -- the kernel exports ------------------------------------------------------------------

def check_exports(context: Context) -> list[str]:
    return [f"{EXPORTS}: {p}" for p in kernel_exports.problems(
        (context.root / EXPORTS).read_text(encoding="utf-8"))]


def write_exports(context: Context) -> None:
    if context.index == "none":  # kernel wheels come from the index only
        log("kernel-exports: no index (--index none): kept as recorded")
        return
    previous = _json(context, EXPORTS)
    data = kernel_exports.build(context.git, "main", kernel_exports_repository(previous),
                                context.wheel_cache, log, previous=previous,
                                index_url=context.index)
    if data["versions"] != previous["versions"] or \
            data["generated_by"]["inputs"] != previous["generated_by"]["inputs"]:
        (context.root / EXPORTS).write_text(kernel_exports.render(data), encoding="utf-8")


def kernel_exports_repository(previous: dict[str, Any]) -> str:
    return str(previous["generated_by"]["inputs"]["git"]["repository"])


def stale_exports(context: Context) -> list[str]:
    listed = {v for d in ("sgl-kernel", "sglang-kernel")
              for v, e in snapshot.load(context.root / SNAPSHOT)["projects"][d].items()
              if e["wheel"]}
    known = set(_json(context, EXPORTS)["versions"])
    return [f"kernel {v} is on the index, not in the exports" for v in sorted(
        listed - known, key=Version)]


# -- the names each sglang release imports from sgl_kernel -------------------------------

SYMBOLS_SOURCE = ("every sglang wheel of the release list (module-level `from sgl_kernel"
                  " import`) and the kernel exports")
SYMBOLS_VERSION = 1


def _symbols_tool() -> Any:
    from tools import regen_kernel_symbols

    return regen_kernel_symbols


def check_symbols(context: Context) -> list[str]:
    """The parts read from the repository (kernel spans, deferred names) are today's."""
    tool = _symbols_tool()
    from sglang_shims.kernels.surface.exports import surfaces

    data = _json(context, SYMBOLS)
    out = []
    kernels = [v for v in surfaces() if "+" not in v]
    if data["kernels"] != [kernels[0], kernels[-1]]:
        out.append(f"{SYMBOLS}: kernel span {data['kernels']} is not the exports'")
    if data["deferred"] != tool._deferred():
        out.append(f"{SYMBOLS}: deferred names differ from the manifests' [[provide]]")
    exports = surfaces()
    for name, need in data["needs"].items():
        spans = tool._spans([tool._exports(exports[k], name) for k in kernels], kernels)
        if need["exported_by"] != spans:
            out.append(f"{SYMBOLS}: {name} exported_by {need['exported_by']}, the exports"
                       f" say {spans}")
    return out


def write_symbols(context: Context) -> None:
    tool = _symbols_tool()
    found = {v: sglang_wheel(context, v) for v in releases(context)}
    (context.root / SYMBOLS).write_text(tool.render(tool.build(found)), encoding="utf-8")


# -- the MoE / FP8 op set ----------------------------------------------------------------

OPSET_SOURCE = "the sglang wheels from 0.5.1 on (final releases): their sgl_kernel MoE/FP8 calls"
OPSET_VERSION = 1
OPSET_FIRST = Version("0.5.1")
"""The first release the fallback serves MoE and FP8 models on; a floor, not a newest."""


def opset_releases(context: Context) -> list[str]:
    return [v for v in releases(context)
            if Version(v) >= OPSET_FIRST and not Version(v).is_prerelease]


def check_opset(context: Context) -> list[str]:
    recorded = _json(context, OPSET)["releases"]
    wanted = opset_releases(context)
    return [] if recorded == wanted else [
        f"{OPSET}: covers {recorded[0]}..{recorded[-1]}, the release list"
        f" {wanted[0]}..{wanted[-1]} (missing: {[v for v in wanted if v not in recorded]})"]


def write_opset(context: Context) -> None:
    from tools import regen_moe_fp8_opset as tool

    roots = {}
    with tempfile.TemporaryDirectory(prefix="opset-") as scratch:
        for version in opset_releases(context):
            dest = Path(scratch) / version
            release_index.python_files(sglang_wheel(context, version), dest)
            roots[version] = dest / "sglang"
        data = tool.build(roots)
    (context.root / OPSET).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n",
                                      encoding="utf-8")


# -- the per-release index ---------------------------------------------------------------

def check_release_index(context: Context) -> list[str]:
    return [p for p in release_index.problems(
        context.root / RELEASE_INDEX, releases(context))]


def write_release_index(context: Context) -> None:
    path = context.root / RELEASE_INDEX
    old = release_index.load(path) if path.exists() else None
    data = release_index.build(lambda v: sglang_wheel(context, v), log, old,
                               releases(context))
    path.write_text(release_index.render(data), encoding="utf-8")


# -- the compatibility matrix ------------------------------------------------------------

MATRIX_SOURCE = ("a matrix run (tools/matrix/run.py): every sglang release from 0.4.0 on"
                 " the index, its environment resolved from the index, cells run on CPU")
MATRIX_VERSION = 1


def matrix_outputs(context: Context) -> list[str]:
    from tools.matrix import run

    return [str(p.relative_to(REPO)) for p in run.outputs()]


def check_matrix(context: Context) -> list[str]:
    from tools.matrix import run

    return run.problems()


def stale_matrix(context: Context) -> list[str]:
    from tools.matrix import run

    return run.stale(snapshot.load(context.root / SNAPSHOT))


def write_matrix(context: Context) -> None:
    from tools.matrix import run

    run.main(["--jobs", str(context.jobs)])


# -- the mutation pass -------------------------------------------------------------------

MUTATION_SOURCE = ("tools/mutation/run.py over a scratch checkout of HEAD (every module,"
                   " each sampled as config.toml says); docs/mutation.md shows its table")


def _mutation_table(context: Context) -> list[str]:
    proc = subprocess.run([sys.executable, "tools/mutation/run.py", "--render", MUTATION],
                          capture_output=True, text=True, cwd=context.root, check=True)
    return [line for line in proc.stdout.splitlines() if line.strip()]


def check_mutation(context: Context) -> list[str]:
    page = (context.root / "docs" / "mutation.md").read_text(encoding="utf-8")
    missing = [line for line in _mutation_table(context) if line not in page]
    return [f"docs/mutation.md lacks the table of {MUTATION}: {missing[0]!r}"] if missing \
        else []


def write_mutation(context: Context) -> None:
    with tempfile.TemporaryDirectory(prefix="mutation-") as scratch:
        tree = Path(scratch) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), "HEAD"],
                       cwd=context.root, check=True)
        try:
            subprocess.run([sys.executable, "tools/mutation/run.py", "--tree", str(tree),
                            "--out", str(context.root / MUTATION)], cwd=context.root,
                           check=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)],
                           cwd=context.root, check=False)
    log("now paste `python tools/mutation/run.py --render docs/mutation-result.json` into"
        " docs/mutation.md (its prose says what changed)")
