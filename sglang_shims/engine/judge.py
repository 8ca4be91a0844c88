"""Would a patch act here, and if not, why?  One judgement for runtime and CLI.

The order is fixed and each step names its reason: toggles (``disabled``), version
and GPU gates (``not-applicable``), retire rules (``retired``), fingerprints
(``drifted``).  What passes all four ``would-apply``; the engine then applies it.
At runtime the live target module answers "is this symbol exported?"; statically
(``sglang-shims list``) its source file does, and nothing is imported.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Final, Literal

from ..catalog.manifest import Manifest
from . import gates as _gates
from . import source as _source
from .record import State

PROXY_MARK: Final = "_sglang_shims_proxy"
"""Class attribute (``True``) of :class:`~sglang_shims.engine.proxy.OptionalSymbol`: a name
bound to one was put there by us and does not count as "exported".  Named here, not
imported: judging must not load the proxy code."""

WOULD_APPLY: Final = "would-apply"
"""The verdict on a patch that passed every step.  Not a :class:`State`: no record holds
it, since the engine then applies the patch and records what happened."""


class Assessment:
    """The verdict on one patch, with the lines that led to it (a plain class: a
    dataclass would cost a few hundred microseconds at every wake-up)."""

    __slots__ = ("fingerprints", "gates", "reason", "retire", "state")

    def __init__(self, state: State | Literal["would-apply"], reason: str,
                 gates: list[str] | None = None, retire: list[str] | None = None,
                 fingerprints: list[str] | None = None) -> None:
        self.state = state
        self.reason = reason
        self.gates = [] if gates is None else gates
        self.retire = [] if retire is None else retire
        self.fingerprints = [] if fingerprints is None else fingerprints

    def __repr__(self) -> str:
        return (f"Assessment(state={self.state!r}, reason={self.reason!r}, gates={self.gates!r},"
                f" retire={self.retire!r}, fingerprints={self.fingerprints!r})")


def _exported_live(module: ModuleType, name: str) -> bool:
    value = vars(module).get(name)
    if value is None and name not in vars(module):
        return False
    # asked of the class: an instance's own __getattr__ is code we must not run here
    return getattr(type(value), PROXY_MARK, False) is not True


def exported(symbol: str, live: ModuleType | None = None,
             search_path: list[Path] | None = None) -> tuple[bool | None, str]:
    """Does ``module:name`` exist?  None when it cannot be told (star import, no source)."""
    module_name, _, name = symbol.partition(":")
    # ``live`` has run its body (the engine passes it after exec); any other module
    # counts only once fully imported, since a half-run body has not bound its names.
    module = live if live is not None and live.__name__ == module_name else None
    if module is None and search_path is None:
        candidate = sys.modules.get(module_name)
        spec = getattr(candidate, "__spec__", None)
        if candidate is not None and not getattr(spec, "_initializing", False):
            module = candidate
    if module is not None:
        hit = _exported_live(module, name)
        return hit, f"{module_name} {'exports' if hit else 'does not export'} {name}"
    try:
        found = _source.exported_names(module_name, search_path)
    except SyntaxError as exc:
        return None, f"cannot parse {module_name} ({exc})"
    if found is None:
        return None, f"cannot read the source of {module_name}"
    names, complete = found
    if name in names:
        return True, f"{module_name} binds {name} (read from its source)"
    if not complete:
        return None, f"{module_name} star-imports; cannot tell statically whether it has {name}"
    return False, f"{module_name} does not bind {name} (read from its source)"


def retired(manifest: Manifest, env: _gates.Environment, live: ModuleType | None = None,
            search_path: list[Path] | None = None) -> tuple[bool, list[str]]:
    lines = []
    hit = False
    rule = manifest.retire
    for symbol in rule.exported:
        answer, detail = exported(symbol, live, search_path)
        lines.append(detail)
        hit = hit or bool(answer)
    for dist in rule.installed:
        version = env.version(dist)
        lines.append(f"{dist} {'installed (' + version + ')' if version else 'not installed'}")
        hit = hit or version is not None
    if rule.versions:
        results = [_gates.check_gate(g, env) for g in rule.versions]
        lines.extend(d for _, d in results)
        hit = hit or all(ok for ok, _ in results)
    return hit, lines


def assess(manifest: Manifest, env: _gates.Environment, enabled: bool = True,
           toggle: str = "default", live: ModuleType | None = None,
           search_path: list[Path] | None = None) -> Assessment:
    """Judge one patch.

    ``live`` is the target module at runtime (None for the CLI); ``search_path``
    makes every source lookup read those folders only (an unpacked release).
    """
    if not enabled:
        return Assessment(State.DISABLED, f"disabled by {toggle}")
    ok, gate_lines, failure = _gates.evaluate(manifest, env)
    result = Assessment(WOULD_APPLY, "", gates=gate_lines)
    if not ok:
        result.state, result.reason = State.NOT_APPLICABLE, failure
        return result
    if (live is None and manifest.when != "instead"
            and _source.locate(manifest.target, search_path) is None):
        result.state = State.NOT_APPLICABLE
        result.reason = f"target module {manifest.target} is not installed (no source found)"
        return result
    is_retired, result.retire = retired(manifest, env, live, search_path)
    if is_retired:
        result.state = State.RETIRED
        result.reason = f"{manifest.retire.description} ({'; '.join(result.retire)})"
        return result
    fp_ok, result.fingerprints, mismatch = _source.check_all(manifest.fingerprints, search_path)
    if not fp_ok:
        result.state = State.DRIFTED
        result.reason = f"target changed, left stock: {mismatch}"
        return result
    result.reason = "; ".join(gate_lines) or "no version gates"
    return result
