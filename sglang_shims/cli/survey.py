"""What every patch would do in this environment, judged without importing any target.

``sglang-shims list``, ``explain``, ``check`` and ``doctor`` answer from installed
distribution metadata and the target modules' source files only: no torch, no sglang,
no transformers is imported, so the answer takes well under a second and needs no GPU
(a GPU gate may run ``nvidia-smi``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import _toggles
from .._bootstrap import env as env_var
from ..catalog import load as _catalog
from ..catalog import prose as _prose
from ..catalog.manifest import Manifest
from ..engine.gates import Environment
from ..engine.judge import Assessment, assess


@dataclass
class PatchView:
    manifest: Manifest
    enabled: bool
    toggle: str
    judged: Assessment

    def as_dict(self, full: bool = False) -> dict[str, Any]:
        m = self.manifest
        out: dict[str, Any] = {
            "id": m.id,
            "summary": m.summary,
            "state": self.judged.state,
            "reason": self.judged.reason,
            "evidence": list(m.evidence),
            "gates": {g.label: g.spec or "installed" for g in m.requires}
            | ({"gpu capability": m.gpu} if m.gpu else {}),
            "target": m.target,
            "default": "on" if m.default else "off",
            "policy": m.policy,
            "source": m.source,
        }
        if full:
            prose = _prose.of(m)
            out.update({
                "when": m.when,
                "enabled": self.enabled,
                "toggle": self.toggle,
                "changes": prose.changes,
                "range": prose.established,
                "retire": {"when": m.retire.description, "exported": list(m.retire.exported),
                           "installed": list(m.retire.installed),
                           "versions": {g.label: g.spec for g in m.retire.versions}},
                "fingerprints": [fp.describe() for fp in m.fingerprints],
                "provides": [p.name for p in m.provides],
                "code": str(m.folder / m.code) if m.folder and m.code else None,
                "evaluation": {"gates": self.judged.gates, "retire": self.judged.retire,
                               "fingerprints": self.judged.fingerprints},
            })
        return out


@dataclass
class Survey:
    views: list[PatchView]
    catalog: _catalog.Catalog
    toggles: _toggles.Toggles
    env: Environment

    def setting_warnings(self) -> list[str]:
        """Problems with the settings: the toggle variables and SGLANG_SHIMS_PATH's entries."""
        known = [v.manifest.id for v in self.views] + list(self.catalog.errors)
        return self.toggles.problems + self.toggles.unknown(known) + self.catalog.warnings

    def warnings(self) -> list[str]:
        """The settings' problems, then each patch folder that could not be loaded."""
        return self.setting_warnings() + [f"patch {k} not loaded: {v}"
                                          for k, v in self.catalog.errors.items()]


def survey(env: Environment | None = None, ignore_toggles: bool = False) -> Survey:
    """Judge every patch statically; ``ignore_toggles`` judges disabled ones too."""
    env = env or Environment()
    toggles = _toggles.Toggles()
    catalog = _catalog.load(env_var("SGLANG_SHIMS_PATH"))
    views = []
    for manifest in sorted(catalog.manifests, key=lambda m: m.id):
        enabled, toggle = toggles.decide(manifest.id, manifest.default)
        judged = assess(manifest, env, enabled or ignore_toggles, toggle)
        views.append(PatchView(manifest, enabled, toggle, judged))
    return Survey(views, catalog, toggles, env)
