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
KNOWN_VARS = frozenset({
    "SGLANG_SHIMS", "SGLANG_SHIMS_DISABLE", "SGLANG_SHIMS_ENABLE", "SGLANG_SHIMS_STRICT",
    "SGLANG_SHIMS_LOG", "SGLANG_SHIMS_REPORT_DIR", "SGLANG_SHIMS_PATH",
    "SGLANG_SHIMS_GPU_CAPABILITY", "SGLANG_SHIMS_FILE_URI_ROOTS", "SGLANG_SHIMS_KERNEL_BACKEND",
    # set by us for child processes, or by the test tooling
    "SGLANG_SHIMS_LAUNCH_PREFIX", "SGLANG_SHIMS_TRITON_PTXAS", "SGLANG_SHIMS_CI",
    "SGLANG_SHIMS_WHEEL_CACHE",
})
"""Every ``SGLANG_SHIMS_*`` name read anywhere (plus ``SGLANG_SHIMS_PATCH_<ID>``)."""
KERNEL_BACKENDS = ("triton", "torch")
SHOWN = 5
"""At most this many unknown names are quoted in one warning: the message stays bounded."""


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

    __slots__ = ("all_off", "disable", "enable", "per_patch", "problems", "strict",
                 "unknown_vars")

    def __init__(self, environ: "dict[str, str] | os._Environ[str] | None" = None) -> None:
        environ = os.environ if environ is None else environ
        self.problems: list[str] = []
        self.all_off = globally_off(environ)
        main = env("SGLANG_SHIMS", environ)
        if main is not None and main.lower() not in OFF | ON:
            self.problems.append(
                f"SGLANG_SHIMS={_short(main)} is neither on (1/true/on/yes) nor off"
                " (0/false/off/no); treating it as on"
            )
        self.disable = split_ids(env("SGLANG_SHIMS_DISABLE", environ))
        self.enable = split_ids(env("SGLANG_SHIMS_ENABLE", environ))
        strict = env("SGLANG_SHIMS_STRICT", environ)
        self.strict = strict is not None and strict.lower() in ON
        if strict is not None and strict.lower() not in ON | OFF:
            self.problems.append(
                f"SGLANG_SHIMS_STRICT={_short(strict)} is not 0/1; strict mode is off")
        backend = env("SGLANG_SHIMS_KERNEL_BACKEND", environ)
        if backend is not None and backend.lower() not in KERNEL_BACKENDS:
            self.problems.append(
                f"SGLANG_SHIMS_KERNEL_BACKEND={_short(backend)} is not one of"
                f" {', '.join(KERNEL_BACKENDS)}; the fallback kernels use triton")
        capability = env("SGLANG_SHIMS_GPU_CAPABILITY", environ)
        if capability is not None and not all(
                major.isdigit() and (not minor or minor.isdigit())
                for major, _, minor in (part.partition(".")
                                        for part in capability.replace(",", " ").split())):
            self.problems.append(
                f"SGLANG_SHIMS_GPU_CAPABILITY={_short(capability)} is not a list of compute"
                " capabilities like 12.0 or 9.0,12.0")
        self.per_patch: dict[str, bool] = {}
        self.unknown_vars: list[str] = []
        for name, raw in environ.items():
            if not name.startswith(PATCH_VAR_PREFIX):
                if name.startswith("SGLANG_SHIMS") and name not in KNOWN_VARS:
                    self.unknown_vars.append(name)
                continue
            value = raw.strip().lower()
            if not value:
                continue
            if value in ON:
                self.per_patch[name] = True
            elif value in OFF:
                self.per_patch[name] = False
            else:
                self.problems.append(f"{name}={_short(raw)} is not 0 or 1; ignored")

    def decide(self, patch_id: str, default: bool) -> "tuple[bool, str]":
        """Return (enabled, which setting decided it) for one patch."""
        if self.all_off:
            return False, "SGLANG_SHIMS=0"
        # no per-patch variable set (the usual case): its name is not even built
        if self.per_patch and (var := patch_var(patch_id)) in self.per_patch:
            on = self.per_patch[var]
            return on, f"{var}={int(on)}"
        key = patch_id.lower()
        if key in self.disable:
            return False, "SGLANG_SHIMS_DISABLE"
        if key in self.enable:
            return True, "SGLANG_SHIMS_ENABLE"
        return default, "default"

    def unknown(self, known_ids: "list[str]") -> "list[str]":
        """One bounded line per kind of mistake: unknown ids in each list, per-patch
        variables that match no patch, unknown ``SGLANG_SHIMS_*`` names, ids in both lists.

        Called when the engine wakes (never at start-up): ``difflib`` suggests the
        nearest known name.
        """
        known = {i.lower() for i in known_ids}
        known_vars = {patch_var(i) for i in known_ids} if self.per_patch else set()
        out: list[str] = []
        for var_name, ids in (("SGLANG_SHIMS_DISABLE", self.disable),
                              ("SGLANG_SHIMS_ENABLE", self.enable)):
            wrong = list(dict.fromkeys(i for i in ids if i not in known))
            if wrong:
                out.append(f"{var_name} names {_count(wrong, 'unknown patch id')}:"
                           f" {_suggest(wrong, sorted(known))}; `sglang-shims list` shows"
                           " the known ids")
        wrong = [var for var in sorted(self.per_patch) if var not in known_vars]
        if wrong:
            out.append(f"per-patch variables matching no known patch:"
                       f" {_suggest(wrong, sorted(known_vars))}")
        if self.unknown_vars:
            out.append("unknown variables (sglang-shims does not read them):"
                       f" {_suggest(sorted(self.unknown_vars), sorted(KNOWN_VARS))}")
        both = [i for i in dict.fromkeys(self.enable) if i in self.disable and i in known]
        if both:
            out.append(f"{_count(both, 'patch', 'patches')} in both SGLANG_SHIMS_ENABLE and"
                       f" SGLANG_SHIMS_DISABLE stay disabled: {_suggest(both, [])}")
        return out


def _short(text: str, limit: int = 60) -> str:
    """``repr`` of a value, cut to ``limit`` characters: a message never grows with input."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[:limit - 4] + "...'"


def _count(items: "list[str]", one: str, many: str = "") -> str:
    return f"{len(items)} {one if len(items) == 1 else (many or one + 's')}"


def _suggest(names: "list[str]", known: "list[str]") -> str:
    """The first :data:`SHOWN` names, each with the nearest known one, then how many more."""
    import difflib  # engine path only: the warning is built when the engine wakes

    parts = []
    for name in names[:SHOWN]:
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.75) if len(name) < 200 \
            else []
        parts.append(_short(name) + (f" (did you mean {near[0]}?)" if near else ""))
    more = len(names) - SHOWN
    return ", ".join(parts) + (f" and {more} more" if more > 0 else "")


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


