"""Patch folders the catalog could not load: each one a failing finding of its own.

Not in the registry of :mod:`~sglang_shims.cli.doctor.checks`: it needs the patches'
survey, so :func:`~sglang_shims.cli.doctor.report.doctor` runs it.
"""

from __future__ import annotations

import os

from ...._bootstrap import env as env_var
from ....catalog.load import extra_roots
from ..finding import Finding, Level


def not_loaded(errors: dict[str, str]) -> list[Finding]:
    """One failing finding per patch folder the catalog could not load.

    Why failing: its patch can never apply, and whoever put it on ``SGLANG_SHIMS_PATH``
    expects it to; ``list`` and ``check`` exit 1 on it too.  The remedy is the manifest,
    not a variable.
    """
    roots = extra_roots(env_var("SGLANG_SHIMS_PATH"))[0]
    out = []
    for name, why in sorted(errors.items()):
        found = [str(root / name) for root in roots if os.path.lexists(root / name)]
        folder = " or ".join(found) or name
        out.append(Finding(
            "patch-folder", Level.FAIL,
            f"the patch folder {folder} was not loaded, so its patch can never apply: {why}",
            "fix its manifest (`sglang-shims check` lists every folder that did not load and "
            "why), or take the folder off SGLANG_SHIMS_PATH"))
    return out
