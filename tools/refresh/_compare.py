"""What changed between two copies of the exports data, one line per version.

A rebuild prints this against the file it replaces, so a maintainer reads "0.3.9: +
flash_attn.flash_ops" instead of a 700 KB JSON diff.
"""

from __future__ import annotations

from typing import Any


def _names(added: set[str], removed: set[str], where: str = "") -> list[str]:
    prefix = f"{where}." if where else ""
    return ([f"+{prefix}{n}" for n in sorted(added)]
            + [f"-{prefix}{n}" for n in sorted(removed)])


def version_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The differences between two entries of one version, as ``+name``/``-name`` items
    (``+sub.name`` for a submodule's names, ``+module sub`` for a whole submodule)."""
    out: list[str] = []
    for key in ("commit", "wheel"):
        if old.get(key) != new.get(key):
            out.append(f"{key} {old.get(key)} -> {new.get(key)}")
    out += _names(set(new["exports"]) - set(old["exports"]),
                  set(old["exports"]) - set(new["exports"]))
    old_subs, new_subs = old["submodules"], new["submodules"]
    out += [f"+module {s}" for s in sorted(set(new_subs) - set(old_subs))]
    out += [f"-module {s}" for s in sorted(set(old_subs) - set(new_subs))]
    for sub in sorted(set(old_subs) & set(new_subs)):
        before, after = set(old_subs[sub]), set(new_subs[sub])
        out += _names(after - before, before - after, sub)
    return out


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per version that differs between two files' ``versions``."""
    lines: list[str] = []
    for version in [*new, *(v for v in old if v not in new)]:
        if version not in old:
            lines.append(f"{version}: new")
        elif version not in new:
            lines.append(f"{version}: gone")
        else:
            found = version_changes(old[version], new[version])
            if found:
                lines.append(f"{version}: {' '.join(found)}")
    return lines
