"""The ``SGLANG_SHIMS_*`` switches: parsed once per process, never raising.

Start-up imports this module only when some ``SGLANG_SHIMS_*`` variable is set; with
none set, the bootstrap uses the defaults straight from its watch table.  The rules:
an empty value means unset; ``SGLANG_SHIMS_PATCH_<ID>`` wins over the two lists; a
patch named in both lists stays disabled; every problem (an unknown id, an unreadable
value) is collected for the engine to report, never raised.
"""

import os

from ._bootstrap import OFF, OFF_BY_DEFAULT, REQUIRED, TARGETS, env, globally_off

ON = frozenset({"1", "true", "on", "yes"})
PATCH_VAR_PREFIX = "SGLANG_SHIMS_PATCH_"


def patch_var(patch_id: str) -> str:
    """``sgl-kernel-dist-renamed`` -> ``SGLANG_SHIMS_PATCH_SGL_KERNEL_DIST_RENAMED``."""
    return PATCH_VAR_PREFIX + patch_id.upper().replace("-", "_").replace(".", "_")


def split_ids(value: "str | None") -> "list[str]":
    """Split an id list: commas and/or whitespace separate, case is ignored."""
    if not value:
        return []
    return [part.strip().lower() for part in value.replace(",", " ").split() if part.strip()]


class Toggles:
    """What the ``SGLANG_SHIMS_*`` variables ask for, read once per process.

    The per-patch variable wins over the lists; a patch named in both lists is
    disabled (the safe reading) and the conflict is reported.  Problems (unknown
    ids, unreadable values) are collected, never raised: they are reported when
    the engine wakes, next to the patches they concern.
    """

    __slots__ = ("all_off", "disable", "enable", "per_patch", "problems", "strict")

    def __init__(self, environ: "dict[str, str] | os._Environ[str] | None" = None) -> None:
        environ = os.environ if environ is None else environ
        self.problems: list[str] = []
        self.all_off = globally_off(environ)
        main = env("SGLANG_SHIMS", environ)
        if main is not None and main.lower() not in OFF | ON:
            self.problems.append(
                f"SGLANG_SHIMS={main!r} is neither on (1/true/on/yes) nor off (0/false/off/no);"
                " treating it as on"
            )
        self.disable = split_ids(env("SGLANG_SHIMS_DISABLE", environ))
        self.enable = split_ids(env("SGLANG_SHIMS_ENABLE", environ))
        strict = env("SGLANG_SHIMS_STRICT", environ)
        self.strict = strict is not None and strict.lower() in ON
        if strict is not None and strict.lower() not in ON | OFF:
            self.problems.append(f"SGLANG_SHIMS_STRICT={strict!r} is not 0/1; strict mode is off")
        self.per_patch: dict[str, bool] = {}
        for name, raw in environ.items():
            if not name.startswith(PATCH_VAR_PREFIX):
                continue
            value = raw.strip().lower()
            if not value:
                continue
            if value in ON:
                self.per_patch[name] = True
            elif value in OFF:
                self.per_patch[name] = False
            else:
                self.problems.append(f"{name}={raw!r} is not 0 or 1; ignored")

    def decide(self, patch_id: str, default: bool) -> "tuple[bool, str]":
        """Return (enabled, which setting decided it) for one patch."""
        if self.all_off:
            return False, "SGLANG_SHIMS=0"
        var = patch_var(patch_id)
        if var in self.per_patch:
            on = self.per_patch[var]
            return on, f"{var}={int(on)}"
        key = patch_id.lower()
        if key in self.disable:
            return False, "SGLANG_SHIMS_DISABLE"
        if key in self.enable:
            return True, "SGLANG_SHIMS_ENABLE"
        return default, "default"

    def unknown(self, known_ids: "list[str]") -> "list[str]":
        """Messages for every toggle that names no known patch, listing the known ids."""
        known = {i.lower() for i in known_ids}
        known_vars = {patch_var(i) for i in known_ids}
        listing = ", ".join(sorted(known_ids)) or "(none)"
        out: list[str] = []
        for var_name, ids in (("SGLANG_SHIMS_DISABLE", self.disable),
                              ("SGLANG_SHIMS_ENABLE", self.enable)):
            out.extend(f"{var_name} names unknown patch {i!r}; known ids: {listing}"
                       for i in ids if i not in known)
        out.extend(f"{var} matches no known patch; known ids: {listing}"
                   for var in sorted(self.per_patch) if var not in known_vars)
        out.extend(f"patch {i!r} is in both SGLANG_SHIMS_ENABLE and SGLANG_SHIMS_DISABLE;"
                   " it stays disabled" for i in self.enable if i in self.disable)
        return out


def watched_patches(toggles: Toggles) -> "list[str]":
    """Ids of the built-in patches whose targets must be watched.

    In strict mode a disabled ``required`` patch is watched too: importing its target
    must then fail loudly instead of running without it.
    """
    return [patch_id for patch_id in TARGETS
            if toggles.decide(patch_id, patch_id not in OFF_BY_DEFAULT)[0]
            or (toggles.strict and patch_id in REQUIRED)]


def watched_modules(toggles: Toggles) -> "dict[str, list[str]]":
    """Module name -> ids of the enabled built-in patches it triggers."""
    out: dict[str, list[str]] = {}
    for patch_id in watched_patches(toggles):
        out.setdefault(TARGETS[patch_id], []).append(patch_id)
    return out


