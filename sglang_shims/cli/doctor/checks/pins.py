"""The installed versions against every pin in sglang's own ``Requires-Dist``."""

from __future__ import annotations

from ....engine.gates import satisfies
from ..deep_gemm_facts import expected_build
from ..facts import Facts
from ..finding import Finding, Level
from ..neighbours import neighbour
from ..requires import PIN_DISTS, Pin, sglang_pins


def _exact(spec: str) -> bool:
    """One ``==X`` / ``===X`` clause, no wildcard: the release sglang was tested with."""
    return "," not in spec and spec.startswith("==") and not spec.endswith("*")


def checked_dists(pins: list[Pin]) -> list[str]:
    """Every distribution sglang pins by default: PIN_DISTS first, then in name order."""
    pinned = {p.dist for p in pins if p.default}
    return [*(d for d in PIN_DISTS if d in pinned), *sorted(pinned - set(PIN_DISTS))]


def _off_pin(sglang: str, dist: str, spec: str, installed_as: str, version: str) -> Finding:
    """A version outside sglang's pin, with what it is known to break.

    A warning where the pin is exact (the release sglang was tested with), or the library is
    one of the core stack, or a break is on record; otherwise information: outside a range
    with no known consequence.
    """
    known = neighbour(dist)
    level = (Level.WARN if _exact(spec) or dist in PIN_DISTS or (known and known.breaks)
             else Level.INFO)
    said = f" -- {known.said()}" if known else ""
    swap = f"pip uninstall -y {installed_as} && " if installed_as != dist else ""
    return Finding("sglang-pin", level, f"sglang {sglang} pins {dist}{spec}; {installed_as} "
                   f"{version} is installed{said}",
                   f"{swap}pip install '{dist}{spec}' (or an sglang release that pins "
                   f"{installed_as} {version})")


def check_pins(facts: Facts) -> list[Finding]:
    """The installed versions vs every pin of sglang's -- torch, kernel, flashinfer,
    transformers, triton, the grammar backends, tilelang, DeepGEMM and the rest -- and
    where the ``deep_gemm`` sglang calls comes from."""
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
        out.append(_off_pin(sglang, dist, spec, installed_as, version))
    out[:0] = _missing(sglang, missing)
    if matched:
        out.insert(0, Finding("sglang-pin", Level.OK, f"sglang {sglang}'s pins are met by "
                              + ", ".join(matched)))
    return out + _deep_gemm(facts, sglang)


def _deep_gemm(facts: Facts, sglang: str) -> list[Finding]:
    """Where the ``deep_gemm`` sglang calls comes from, when it is the build sglang expects.

    Any other build is the ``deepgemm-not-sglangs-build`` rule's finding, with its report
    and remedy; a ``deep_gemm`` not installed at all is a missing pin (0.5.12+) or the
    kernel's business.
    """
    found = facts.deep_gemm
    expected = expected_build(facts.requires.get("sglang", []), facts.kernel())
    if found is None or expected is None or found.kind != expected[0]:
        return []
    return [Finding("sglang-pin", Level.OK, f"deep_gemm is {found.shown()}: {expected[1]}, "
                    f"the DeepGEMM sglang {sglang} calls")]


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
