"""Check 7: the installed versions against sglang's own ``Requires-Dist`` pins."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...engine.gates import canonical, satisfies
from .facts import Facts
from .finding import Finding

if TYPE_CHECKING:
    from packaging.requirements import Requirement


@dataclass(frozen=True)
class Pin:
    dist: str
    """Canonical name: ``flashinfer-python``."""
    spec: str
    extra: str
    """The extra that carries it: ``""`` for a plain dependency, ``srt``, ``cu130``, ..."""
    default: bool
    """True when ``pip install sglang`` / ``sglang[srt]`` installs it."""


PIN_DISTS = ("torch", "sgl-kernel", "sglang-kernel", "flashinfer-python", "flashinfer-cubin",
             "flashinfer-jit-cache", "transformers", "triton", "kernels")
# Checked under any pin, as PIN_DISTS: the grammar backends and the libraries whose drift
# users report (outlines moved its JSON-schema helpers under sglang 0.4.x when vllm pulled
# it up; sglang issue 2552).  Every other distribution is checked where sglang pins it
# exactly (==), read from its Requires-Dist.
LIBRARY_DISTS = ("outlines", "xgrammar", "llguidance", "vllm", "torchao")
DEFAULT_EXTRAS = ("", "srt")


def sglang_pins(lines: Iterable[str], dists: Iterable[str] | None = PIN_DISTS) -> list[Pin]:
    """sglang's version pins from its ``Requires-Dist`` lines (of ``dists``; None: all).

    Old releases put the runtime under the ``srt`` extra, which pulls in
    ``sglang[runtime_common]``; those self-references are followed.  Pins under
    other extras (``blackwell``, ``cu130``) are kept as alternatives.
    """
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    wanted = None if dists is None else {canonical(d) for d in dists}
    reqs: list[tuple[Requirement, str]] = []
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        reqs.append((req, _extra_of(req)))
    default = set(DEFAULT_EXTRAS)
    grew = True
    while grew:
        grew = False
        for req, extra in reqs:
            if canonicalize_name(req.name) == "sglang" and extra in default:
                new = {canonicalize_name(e) for e in req.extras} - default
                default |= new
                grew = grew or bool(new)
    pins = []
    for req, extra in reqs:
        name = canonical(req.name)
        if (wanted is None or name in wanted) and str(req.specifier) and name != "sglang":
            pins.append(Pin(name, str(req.specifier), extra, extra in default))
    return pins


def _extra_of(req: Requirement) -> str:
    """The extra a requirement belongs to ("" if none), judged on this platform."""
    from packaging.utils import canonicalize_name

    marker = req.marker
    if marker is None:
        return ""
    names = re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", str(marker))
    for extra in ["", *names]:
        try:
            if marker.evaluate({"extra": extra}):
                return str(canonicalize_name(extra)) if extra else ""
        except Exception:
            return "?"
    return "?"  # a platform marker that is false here


def _exact(spec: str) -> bool:
    """One ``==X`` / ``===X`` clause, no wildcard: the release sglang was tested with."""
    return "," not in spec and spec.startswith("==") and not spec.endswith("*")


def checked_dists(pins: list[Pin]) -> list[str]:
    """PIN_DISTS and LIBRARY_DISTS under any default pin, then every other distribution
    sglang pins exactly by default (``torchaudio==2.8.0``), in name order."""
    named = (*PIN_DISTS, *LIBRARY_DISTS)
    exact = sorted({p.dist for p in pins if p.default and _exact(p.spec)} - set(named))
    return [*named, *exact]


def check_pins(facts: Facts) -> list[Finding]:
    """Check 7: the installed versions vs sglang's pins -- torch, kernel, flashinfer,
    transformers, triton, the grammar libraries, and every exact pin."""
    sglang = facts.version("sglang")
    if not sglang:
        return []
    if "sglang" not in facts.requires:
        return [Finding("sglang-pin", "info", f"sglang {sglang}: its Requires-Dist was not read "
                        "(hermetic environment or missing metadata)")]
    pins = sglang_pins(facts.requires["sglang"], None)
    out: list[Finding] = []
    matched: list[str] = []
    for dist in checked_dists(pins):
        mine = [p for p in pins if p.dist == dist and p.default]
        if not mine:
            continue
        spec = ",".join(p.spec for p in mine)
        installed_as, version = dist, facts.version(dist)
        if version is None and dist in ("sgl-kernel", "sglang-kernel"):
            installed_as = "sglang-kernel" if dist == "sgl-kernel" else "sgl-kernel"
            version = facts.version(installed_as)
        if version is None:
            # the core stack is needed to start at all; the rest is imported by the
            # features that use it, so its absence is reported, not warned about
            level = "warn" if dist in PIN_DISTS else "info"
            out.append(Finding("sglang-pin", level, f"sglang {sglang} requires {dist}{spec}; it "
                               "is not installed", f"pip install '{dist}{spec}'"))
            continue
        if all(satisfies(version, p.spec)[0] for p in mine):
            renamed = f" (installed as {installed_as})" if installed_as != dist else ""
            matched.append(f"{dist} {version}{renamed}")
            continue
        alternative = [p for p in pins if p.dist == dist and not p.default and p.extra != "?"
                       and satisfies(version, p.spec)[0]]
        if alternative:
            out.append(Finding("sglang-pin", "info", f"sglang {sglang} pins {dist}{spec}; "
                               f"{installed_as} {version} matches its [{alternative[0].extra}] "
                               f"extra instead ({dist}{alternative[0].spec})"))
            continue
        swap = f"pip uninstall -y {installed_as} && " if installed_as != dist else ""
        out.append(Finding("sglang-pin", "warn", f"sglang {sglang} pins {dist}{spec}; "
                           f"{installed_as} {version} is installed",
                           f"{swap}pip install '{dist}{spec}' (or an sglang release that pins "
                           f"{installed_as} {version})"))
    if matched:
        out.insert(0, Finding("sglang-pin", "ok", f"sglang {sglang}'s pins are met by "
                              + ", ".join(matched)))
    return out
