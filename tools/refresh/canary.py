"""The canary: what appeared on the index since the data was made, and what it breaks.

``python -m tools.refresh --new`` compares the index with what the repository's data
covers (the matrix's releases, transformers, torch and triton; the kernel exports; the
versions the recorded locks hold), then builds the environment a user gets by upgrading
to each new release (the release's own pins, the new one put in as ``pip install -U``
would, conflicts answered as pip answers them and recorded as pins replaced), runs the
matrix cells for it and writes a dated report (``docs/canary/<date>.md``): per cell the
verdict before and now, the first error, its module and the catalog class it resembles.
A new sglang release and a new transformers 5 are merged into the matrix data (the page
then shows them); other upgrades are reported only.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from sglang_shims.cli.doctor.checks.tested import cell_of

from . import ledger, pypi, snapshot
from .context import Context, log

REPORTS = Path(__file__).resolve().parents[2] / "docs" / "canary"
UPGRADED_ALONE = ("flashinfer-python", "xgrammar", "kernels")
"""Dependencies a user upgrades on their own (``pip install -U X``): their cells run the
release's pinned environment with X raised, and are reported, not merged into the page."""

CLASSES: list[tuple[str, str, tuple[str, ...]]] = [
    (r"cannot import name '\w+' from 'sgl_kernel", "kernel skew: a name the installed"
     " kernel lacks", ("sgl-kernel-missing-symbols", "sgl-kernel-fused-marlin-moe")),
    (r"No module named 'sgl_kernel'", "no kernel: outside the fallback's range",
     ("sgl-kernel-triton-fallback",)),
    (r"already used by a Transformers config|already registered|register\(",
     "a registration that collides with transformers' own",
     ("tf-config-register-collision", "tf449-qwen2-5-vl-register-collision",
      "tf5-image-processor-register")),
    (r"cannot import name '\w+' from '(transformers|huggingface_hub|tokenizers)",
     "a name transformers (or the hub) removed or moved",
     ("tf5-attn-mask-utils-removed", "tf448-llama-flash-attention2-removed",
      "tf5-gpt2-bytes-to-unicode", "tf5-vision-rope-renamed")),
    (r"rope_theta|rope_parameters|rope_scaling|KeyError: 'factor'",
     "RoPE settings moved in the config", ("tf5-rope-theta-moved", "tf5-gemma3-rope",
                                           "gemma3-rope-factor-missing")),
    (r"dataclass|non-default argument|__annotations__|annotation",
     "a config class's shape changed", ("tf5-config-dataclass-defaults",
                                        "tf54-config-bare-annotations")),
    (r"\bkernels\b|revision", "the kernels hub's table", ("kernels-revision-required",)),
    (r"torch\._C\.|has no attribute '_is_amx", "a torch API removed",
     ("torch-amx-probe-removed",)),
    (r"triton", "a triton API removed", ("triton-cache-helpers-removed",)),
    (r"No solution found|unsatisfiable|ResolutionImpossible|could not be installed",
     "environment: pins that cannot be installed together (a pin replacement rule?)", ()),
    (r"No module named '[\w.]+'", "a module missing from the environment", ()),
]
"""(pattern of the first error, the class of break, the patches of that class)."""


@dataclass
class New:
    """A release on the index that the data does not cover yet."""

    project: str
    version: str
    uploaded: str
    baseline: str
    action: str = ""


@dataclass
class Outcome:
    """One cell the canary ran, with what the matrix recorded for it before."""

    release: str
    environment: str
    kernel: str
    mode: str
    before: str
    now: str
    cell: dict[str, Any] = field(default_factory=dict)
    relaxed: list[str] = field(default_factory=list)


def _version(text: str | None) -> Version | None:
    try:
        return Version(str(text).partition("+")[0]) if text else None
    except InvalidVersion:
        return None


def resembles(error: str) -> str:
    """The catalog class a first error looks like, with that class's patches."""
    for pattern, what, patches in CLASSES:
        if re.search(pattern, error):
            return what + (f" ({', '.join(patches)})" if patches else "")
    return "unclassified: no patch of the catalog looks like it"


def _covered(project: str, entries: list[dict[str, Any]], ran_on: str
             ) -> tuple[Version | None, str]:
    """The newest version of ``project`` the data covers, and how it says so: what the
    matrix ran (transformers, torch, triton), else nothing newer than the last run (each
    release runs its own pin of the others)."""
    key = "transformers5" if project == "transformers" else project
    ran = [v for v in (_version(e.get("versions", {}).get(key)) for e in entries) if v]
    if ran:  # covered only where every release ran it (a canary may have stopped midway)
        behind = sum(1 for v in ran if v < max(ran))
        return min(ran), (f"the matrix ran {min(ran)}" if not behind else
                          f"the matrix ran {max(ran)} on {len(ran) - behind} releases,"
                          f" {min(ran)} on {behind}")
    return None, f"each release's own pin (new: uploaded after the matrix run of {ran_on})"


def news(context: Context, matrix: dict[str, Any]) -> list[New]:
    """Per watched project, the newest final release on the index beyond what the data
    covers (how many others there are is said with it)."""
    from sglang_shims.kernels.surface.exports import surfaces
    from tools.matrix import run

    entries = list(matrix["releases"].values())
    ran_on = max(e["date"] for e in entries)
    recorded = snapshot.load(context.root / "tools" / "refresh" / "data" / "index.json")
    out: list[New] = []
    for project in snapshot.WATCHED:
        listed = snapshot.listed(context, project, recorded["projects"].get(project))
        finals = {v: e for v, e in listed.items() if e["wheel"] and pypi.is_final(v)}
        if project == "sglang":
            wanted = set(run.in_matrix([Version(v) for v in finals]))
            fresh = [v for v in finals if v in wanted and v not in matrix["releases"]]
            base = f"the matrix has {len(matrix['releases'])} releases"
        elif project in ("sgl-kernel", "sglang-kernel"):
            known = set(surfaces())
            fresh = [v for v in finals if v not in known]
            base = "the kernel exports"
        else:
            newest, base = _covered(project, entries, ran_on)
            fresh = [v for v in finals if (Version(v) > newest if newest else
                                           finals[v]["uploaded"] > ran_on)]
        if fresh:
            top = max(fresh, key=Version)
            more = f" (and {len(fresh) - 1} earlier)" if len(fresh) > 1 else ""
            out.append(New(project, top, finals[top]["uploaded"], base + more))
    return out


def _behind(entry: dict[str, Any] | None, transformers: str) -> bool:
    """Has this release not run its newest-5 column on ``transformers`` yet (or could it
    not set the environment up then: a pin rule added since may answer it)?"""
    if entry is None:
        return False
    if _version(entry.get("versions", {}).get("transformers5")) != Version(transformers):
        return True
    return any("env_error" in c for c in entry["cells"] if c["transformers"] == "newest5")


def _verdict(cell: dict[str, Any] | None) -> str:
    from tools.matrix import render

    return render.verdict(cell)


def _first(cell: dict[str, Any]) -> tuple[str, str]:
    """(module, first error) of a cell that did not pass."""
    for key in ("env_error", "crash", "not_run"):
        if key in cell:
            return "-", f"{key.replace('_', ' ')}: {cell[key]}"
    first = cell.get("graph", {}).get("first") or {}
    if first:
        return str(first.get("module")), str(first.get("error"))
    model = cell.get("model") or {}
    return "model check", str(model.get("error"))


def _run_transformers(context: Context, version: str, chosen: list[str],
                      matrix: dict[str, Any], scratch: Path) -> list[Outcome]:
    """The newest-5 column of ``chosen`` releases on transformers ``version``: merged into
    the matrix data, compared with the cells recorded before."""
    from tools.matrix import run

    outcomes = []
    for release in chosen:
        old = matrix["releases"].get(release)
        log(f"canary: sglang {release} on transformers {version}")
        entry = run.run_release(release, version, scratch, context.jobs, log=log, old=old,
                                flavours=("newest5",))
        entry["date"] = context.date
        entry["versions"] = run._versions() | {"transformers5": version}
        for cell in entry["cells"]:
            if cell["transformers"] != "newest5":
                continue
            before = cell_of(old, "newest5", cell["kernel"], cell["mode"]) if old \
                else None
            was = (old or {}).get("versions", {}).get("transformers5", "?")
            outcomes.append(Outcome(release, f"transformers {version}", cell["kernel"],
                                    cell["mode"], f"{_verdict(before)} (on {was})",
                                    _verdict(cell), cell,
                                    entry.get("relaxed", {}).get("newest5", [])))
        data = run.load()
        data["releases"][release] = entry
        listed = set(data.get("index", {}).get("releases", []))
        data.setdefault("index", {})["releases"] = sorted(listed | {release}, key=Version)
        ran = {e.get("versions", {}).get("transformers5") for e in data["releases"].values()}
        if ran == {version}:
            data["index"]["transformers5"] = version
        run.save(data)
    return outcomes


def _run_upgrade(project: str, version: str, chosen: list[str]) -> list[Outcome]:
    """Each chosen release's own pins with ``project`` raised to ``version`` (no kernel,
    stock and with the shims): reported only."""
    from sglang_shims.testing import wheels
    from tools.matrix import run

    outcomes = []
    for release in chosen:
        root = wheels.unpack("sglang", release)
        if project not in {r.name.lower() for r in run.requirements(root)}:
            continue
        try:
            extra = run.overlay(release, root, None, ((project, version),), record=True)
        except RuntimeError as exc:
            cell = {"env_error": str(exc)[-600:]}
            outcomes += [Outcome(release, f"{project} {version}", "none", m, "-", "fail",
                                 cell) for m in ("stock", "shims")]
            continue
        relaxed = (extra / "relaxed.txt").read_text(encoding="utf-8").split()
        for mode in ("stock", "shims"):
            cell = run._trim(run.run_cell([extra / "site", root], shims=mode == "shims",
                                          model=True))
            old = run.load()["releases"].get(release)
            before = cell_of(old, "pinned", "none", mode) if old else None
            outcomes.append(Outcome(release, f"{project} {version}", "none", mode,
                                    f"{_verdict(before)} (its pins)", _verdict(cell), cell,
                                    relaxed))
    return outcomes


def chosen_releases(matrix: dict[str, Any], releases: str | None) -> list[str]:
    from tools.matrix import run

    known = list(matrix["releases"])
    if releases == "all":
        return known
    if releases:
        return releases.split(",")
    return run.spread(known)


def how_chosen(releases: str | None) -> str:
    """The report's words for ``--releases``: a reader must know a spread from all."""
    if releases == "all":
        return "every release of the matrix"
    if releases:
        return "named on the command line"
    return ("a spread: every fourth release, post releases left out, and the newest;"
            " `--releases all` runs every one")


def report(context: Context, found: list[New], outcomes: list[Outcome],
           chosen: list[str], how: str = "") -> str:
    lines = [f"# Canary {context.date}", "",
             "<!-- written by `python -m tools.refresh --new`; what the index had that the"
             " data did not cover, and what it did to the matrix cells -->", "",
             f"Index: {context.index}"
             + (f" (and {', '.join(map(str, context.find_links))})" if context.find_links
                else "") + f". Releases chosen: {', '.join(chosen) or 'none'}"
             + (f" ({how})" if how and chosen else "") + ". Releases whose cells ran: "
             + (", ".join(dict.fromkeys(o.release for o in outcomes)) or "none")
             + (" (a chosen release whose cells already ran on the new version is not"
                " rerun)" if chosen else "") + ".", "",
             "## New on the index", "",
             "| project | version | uploaded | the data covered | what the canary did |",
             "|---|---|---|---|---|"]
    lines += [f"| {n.project} | {n.version} | {n.uploaded} | {n.baseline} | {n.action} |"
              for n in found] or ["| - | nothing new | | | |"]
    broke = [o for o in outcomes if o.before.startswith("pass") and o.now == "fail"]
    lines += ["", "## New breakages", ""]
    if not broke:
        lines.append("None: no cell that passed before fails now.")
    for o in broke:
        module, error = _first(o.cell)
        lines.append(f"- sglang {o.release}, {o.environment}, kernel {o.kernel}, {o.mode}:"
                     f" `{module}`: {error[:300]} -- resembles {resembles(error)}")
    lines += ["", "## Cells", "",
              "| sglang | environment | kernel | mode | before | now | first error | module |"
              " resembles |", "|---|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        module, error = _first(o.cell) if o.now == "fail" else ("", "")
        if o.now not in ("pass", "fail"):  # not run: the reason, nothing to classify
            module, error = "-", _first(o.cell)[1]
        text = error[:160].replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {o.release} | {o.environment} | {o.kernel} | {o.mode} | {o.before}"
                     f" | {o.now} | {text} | {module} |"
                     f" {resembles(error) if error and o.now == 'fail' else ''} |")
    relaxed = sorted({r for o in outcomes for r in o.relaxed})
    if relaxed:
        lines += ["", "Pins replaced: " + ", ".join(f"`{r}`" for r in relaxed)]
    return "\n".join(lines) + "\n"


def main(context: Context, releases: str | None = None, cells: bool = True,
         report_dir: Path | None = None) -> int:
    from tools.matrix import run

    matrix = run.load()
    found = news(context, matrix)
    chosen = chosen_releases(matrix, releases) if cells else []
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="sglang-matrix-") as folder:
        scratch = Path(folder)
        for new in found:
            if not cells:
                new.action = "cells not run (--no-cells)"
            elif new.project == "sglang":
                new.action = "all its cells (python -m tools.matrix.run --releases"\
                    f" {new.version}); merged into the matrix"
                outcomes += _run_new_release(context, new.version, scratch)
            elif new.project == "transformers" and Version(new.version).major != 5:
                new.action = "not run: the matrix's columns are each release's pin and the"\
                    " newest transformers 5"
            elif new.project == "transformers":
                behind = [r for r in chosen if _behind(matrix["releases"].get(r), new.version)]
                new.action = (f"the newest-5 column of {len(behind)} release(s) that had not"
                              " run it; merged into the matrix")
                outcomes += _run_transformers(context, new.version, behind, matrix, scratch)
            elif new.project in UPGRADED_ALONE:
                new.action = "the releases above on their pins with it raised; reported here"
                outcomes += _run_upgrade(new.project, new.version, chosen)
            elif new.project in ("torch", "triton"):
                new.action = ("not run: the matrix runs on its environment's torch and triton;"
                              " install it there (tests/requirements/serving.txt) and run"
                              " the matrix")
            else:
                new.action = ("not run: read its exports first (python -m tools.refresh"
                              " kernel-exports), then the matrix's newer-kernel column")
    folder_out = report_dir or REPORTS
    folder_out.mkdir(parents=True, exist_ok=True)
    path = folder_out / f"{context.date}.md"
    text = report(context, found, outcomes, chosen, how_chosen(releases))
    if path.exists():  # a second run the same day (the first stopped midway): one report
        text = path.read_text(encoding="utf-8") + "\n" + text.replace(
            f"# Canary {context.date}", f"# Canary {context.date}, continued", 1)
    path.write_text(text, encoding="utf-8")
    if outcomes and report_dir is None:
        _stamp_matrix(context)
    print(f"{path}: {len(found)} new, {len(outcomes)} cells")
    return 0


def _run_new_release(context: Context, version: str, scratch: Path) -> list[Outcome]:
    from tools.matrix import run

    entry = run.run_release(version, run.newest_transformers5(), scratch, context.jobs, log=log)
    entry["date"] = context.date
    entry["versions"] = run._versions()
    data = run.load()
    data["releases"][version] = entry
    data.setdefault("index", {})["releases"] = sorted(
        set(data.get("index", {}).get("releases", [])) | {version}, key=Version)
    run.save(data)
    return [Outcome(version, f"transformers {c['transformers']}", c["kernel"], c["mode"],
                    "not run (new)", _verdict(c), c) for c in entry["cells"]]


def _stamp_matrix(context: Context) -> None:
    """The matrix data changed: its provenance and its page follow."""
    from tools.refresh.registry import by_name

    for generator in by_name(["compatibility", "compatibility-runtime", "compatibility-page"]):
        if generator.kind == "derived":
            generator.regenerate(context)
        else:
            outputs = [context.root / rel for rel in generator.outputs(context)]
            ledger.stamp(generator.name, generator.version, generator.source, context.date,
                         outputs)
