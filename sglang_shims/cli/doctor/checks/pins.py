"""The installed versions against sglang's own ``Requires-Dist`` pins."""

from __future__ import annotations

from ....engine.gates import satisfies
from ..facts import Facts
from ..finding import Finding, Level
from ..requires import PIN_DISTS, Pin, sglang_pins

# Checked under any pin, as PIN_DISTS: the grammar backends and the libraries whose drift
# users report (outlines moved its JSON-schema helpers under sglang 0.4.x when vllm pulled
# it up; sglang issue 2552).  Every other distribution is checked where sglang pins it
# exactly (==), read from its Requires-Dist.
LIBRARY_DISTS = ("outlines", "xgrammar", "llguidance", "vllm", "torchao")


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
    """The installed versions vs sglang's pins -- torch, kernel, flashinfer,
    transformers, triton, the grammar libraries, and every exact pin."""
    sglang = facts.version("sglang")
    if not sglang:
        return []
    if "sglang" not in facts.requires:
        return [Finding("sglang-pin", Level.INFO, f"sglang {sglang}: its Requires-Dist was not "
                        "read (hermetic environment or missing metadata)")]
    pins = sglang_pins(facts.requires["sglang"], None)
    out: list[Finding] = []
    matched: list[str] = []
    missing: list[Pin] = []
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
            missing.append(Pin(dist, spec, mine[0].extra, True))
            continue
        if all(satisfies(version, p.spec)[0] for p in mine):
            renamed = f" (installed as {installed_as})" if installed_as != dist else ""
            matched.append(f"{dist} {version}{renamed}")
            continue
        alternative = [p for p in pins if p.dist == dist and not p.default and p.extra != "?"
                       and satisfies(version, p.spec)[0]]
        if alternative:
            out.append(Finding("sglang-pin", Level.INFO, f"sglang {sglang} pins {dist}{spec}; "
                               f"{installed_as} {version} matches its [{alternative[0].extra}] "
                               f"extra instead ({dist}{alternative[0].spec})"))
            continue
        swap = f"pip uninstall -y {installed_as} && " if installed_as != dist else ""
        out.append(Finding("sglang-pin", Level.WARN, f"sglang {sglang} pins {dist}{spec}; "
                           f"{installed_as} {version} is installed",
                           f"{swap}pip install '{dist}{spec}' (or an sglang release that pins "
                           f"{installed_as} {version})"))
    out[:0] = _missing(sglang, missing)
    if matched:
        out.insert(0, Finding("sglang-pin", Level.OK, f"sglang {sglang}'s pins are met by "
                              + ", ".join(matched)))
    return out


def _missing(sglang: str, missing: list[Pin]) -> list[Finding]:
    """The pinned distributions that are not installed: one finding for all of them.

    Why one: sglang installed with ``--no-deps`` misses two dozen, and a row with its own
    ``pip install`` line for each buries the one command that installs them all.  The core
    stack is needed to start at all (a warning); the rest is imported by the features that
    use it, so its absence is reported, not warned about.
    """
    if not missing:
        return []
    level = Level.WARN if any(p.dist in PIN_DISTS for p in missing) else Level.INFO
    if len(missing) == 1:
        [pin] = missing
        return [Finding("sglang-pin", level, f"sglang {sglang} requires {pin.dist}{pin.spec}; it "
                        "is not installed", f"pip install '{pin.dist}{pin.spec}'")]
    wanted = f"sglang{'[srt]' if any(p.extra for p in missing) else ''}=={sglang}"
    return [Finding("sglang-pin", level,
                    f"sglang {sglang} requires {len(missing)} distributions that are not "
                    f"installed: {', '.join(p.dist + p.spec for p in missing)}",
                    f"these are sglang {sglang}'s own requirements: `pip install '{wanted}'` "
                    "without --no-deps installs them")]
