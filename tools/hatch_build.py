"""Build hook: the built-in patches go inside the package of a real wheel only.

A wheel installs ``patches/`` as ``sglang_shims/patches`` (the catalog looks there first).
An editable install must not: its ``sglang_shims`` package is the checkout's, which reads
``patches/`` beside it, and copying the patches into ``site-packages/sglang_shims/patches``
left a folder that pip's uninstall does not remove -- an empty ``sglang_shims`` that Python
then imports as a namespace package, in an environment the shims have left.
"""

from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class PatchesInWheel(BuildHookInterface):  # type: ignore[type-arg, misc, unused-ignore]
    """Adds ``patches -> sglang_shims/patches`` to the force-included files of a
    standard wheel; an editable one gets only the activation files."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version != "editable":
            build_data["force_include"]["patches"] = "sglang_shims/patches"
