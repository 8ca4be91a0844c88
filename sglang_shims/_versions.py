"""Installed versions and PEP 440 specifiers, read without importing anything.

Two callers need to know "is sglang 0.5.1 installed, inside ``>=0.5.1,<0.5.18``?" before
anything heavy may be imported: the bootstrap's Watcher, deciding inside ``find_spec``
whether a stand-in may be offered for a module that is not installed (where importing
``importlib.metadata`` or ``packaging`` could deadlock on the import lock), and the
engine's gates, for which ``packaging.specifiers`` alone would cost about 3.5 ms in a
process that has not loaded it.  Kept out of ``_bootstrap`` so that the bootstrap every
watched process loads stays small: the Watcher loads this module (with
``_bootstrap.load_sibling``, no import lock) only when it must decide a stand-in.

Start-up rules apply: only ``sys`` and ``os`` are imported, and nothing here raises for
an unreadable version or specifier (it counts as "not met", the stock answer).
"""

import os
import sys

# ``typing`` costs milliseconds; mypy treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def gates_pass(gates: "Sequence[tuple[str, str]]") -> bool:
    """Are these ``(dists, specifier)`` gates met by the installed distributions?

    ``dists`` is ``"a | b"`` (the first installed counts), as in a manifest.  A version or
    specifier this small reader cannot parse counts as not met: the stand-in is then not
    offered and the import fails as it would without the shims.
    """
    for dists, spec in gates:
        version = None
        for dist in dists.split("|"):
            version = installed_version(dist.strip())
            if version is not None:
                break
        if version is None or not spec_contains(spec, version):
            return False
    return True


def _canonical(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def installed_version(dist: str) -> "str | None":
    """The version of ``dist`` from the first ``<name>-<version>.dist-info`` (or
    ``.egg-info``) folder on ``sys.path``, as ``importlib.metadata.version`` finds it."""
    want = _canonical(dist)
    for entry in list(sys.path):
        folder = entry or os.curdir
        try:
            names = os.listdir(folder)
        except (OSError, TypeError, ValueError):
            continue
        for name in sorted(names):
            stem, _, kind = name.rpartition(".")
            if kind not in ("dist-info", "egg-info"):
                continue
            project, _, version = stem.partition("-")
            if _canonical(project) != want:
                continue
            version = version.partition("-py")[0]  # name-1.0-py3.11.egg-info
            return version or _metadata_version(os.path.join(folder, name))
    return None


def _metadata_version(folder: str) -> "str | None":
    for leaf in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folder, leaf), encoding="utf-8") as handle:
                for line in handle:
                    if not line.strip():
                        break
                    if line.lower().startswith("version:"):
                        return line.partition(":")[2].strip() or None
        except OSError:
            continue
    return None


_WORDS = {"a": (0, 0), "alpha": (0, 0), "b": (0, 1), "beta": (0, 1), "c": (0, 2), "rc": (0, 2),
          "pre": (0, 2), "preview": (0, 2), "post": (1, 0), "rev": (1, 0), "r": (1, 0),
          "dev": (2, 0)}
"""A version suffix word -> (its place: pre, post, dev; the pre-release letter's rank)."""
_LONGEST_FIRST = sorted(_WORDS, key=len, reverse=True)  # "rc" before "r", "alpha" before "a"


def _digits(text: str, i: int) -> int:
    """The end of the run of ASCII digits that starts at ``text[i]``."""
    while i < len(text) and "0" <= text[i] <= "9":
        i += 1
    return i


def version_key(text: str) -> "tuple[object, ...] | None":
    """A sort key of a PEP 440 version, local label dropped; None if it is not one.

    Ordered as ``packaging`` orders versions (``1.0.dev0 < 1.0a1 < 1.0 < 1.0.post1``):
    (epoch, release without trailing zeros, pre, post, dev, (is pre, is post)); the last
    item serves the exclusive comparisons' rules.
    """
    value, _, local = text.strip().lower().partition("+")
    if local and not all(part and all("a" <= c <= "z" or "0" <= c <= "9" for c in part)
                         for part in local.replace("-", ".").replace("_", ".").split(".")):
        return None
    if "+" in text and not local:
        return None
    value = value[1:] if value.startswith("v") else value
    epoch = 0
    head, bang, tail = value.partition("!")
    if bang:
        if not head or _digits(head, 0) != len(head):
            return None
        epoch, value = int(head), tail
    release: list[int] = []
    i = 0
    while True:
        j = _digits(value, i)
        if j == i:
            return None
        release.append(int(value[i:j]))
        i = j
        if value[i:i + 1] != "." or _digits(value, i + 1) == i + 1:
            break
        i += 1
    found: list[object] = [(3, 0), -1, (1, 0)]  # no pre, no post, no dev
    place = 0
    while i < len(value):
        start = i
        if value[i] in ".-_":
            i += 1
        word = next((w for w in _LONGEST_FIRST if value.startswith(w, i)), "")
        j = i + len(word)
        if not word:  # "1.0-1": an implicit post-release
            j = _digits(value, i)
            if value[start] != "-" or i in (start, j) or place > 1:
                return None
            found[1], place, i = int(value[i:j]), 2, j
            continue
        if word not in _WORDS or _WORDS[word][0] < place:
            return None
        kind, rank = _WORDS[word]
        i = j + 1 if value[j:j + 1] in (".", "-", "_") and _digits(value, j + 1) > j + 1 else j
        j = _digits(value, i)
        number = int(value[i:j]) if j > i else 0
        found[kind] = (rank, number) if kind == 0 else number if kind == 1 else (0, number)
        place, i = kind + 1, j
    pre, post, dev = found
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    if pre == (3, 0) and post == -1 and dev != (1, 0):
        pre = (-1, 0)  # 1.0.dev0 sorts before 1.0a0
    return (epoch, tuple(release), pre, post, dev, (pre != (3, 0) or dev != (1, 0), post != -1))


def spec_contains(spec: str, version: str) -> bool:
    """Is ``version`` inside the PEP 440 specifier set ``spec``, pre-releases allowed as
    the engine's gates allow them?  What this reader does not handle (``===``, local
    labels in a bound) counts as outside: the answer is then the stock one."""
    key = version_key(version)
    if key is None:
        return False
    for clause in (c.strip() for c in spec.split(",")):
        if not clause:
            continue
        op = next((o for o in ("===", "==", "!=", "<=", ">=", "~=", "<", ">")
                   if clause.startswith(o)), "")
        if not op or not _clause(op, clause[len(op):].strip(), key):
            return False
    return True


def _plain(text: str) -> bool:
    return all(part and _digits(part, 0) == len(part) for part in text.split("."))


def _clause(op: str, bound: str, key: "tuple[object, ...]") -> bool:
    if op in ("==", "!=") and bound.endswith(".*"):
        if not _plain(bound[:-2]):
            return False
        wanted = [int(n) for n in bound[:-2].split(".")]
        release = [*key[1], *[0] * len(wanted)]  # type: ignore[misc]
        return (key[0] == 0 and release[:len(wanted)] == wanted) == (op == "==")
    if op == "~=":
        return _plain(bound) and "." in bound and _clause(">=", bound, key) \
            and _clause("==", bound.rpartition(".")[0] + ".*", key)
    other = version_key(bound)
    if op == "===" or "+" in bound or other is None:
        return False
    mine, theirs = key[:5], other[:5]
    if op in ("==", "!="):
        return (mine == theirs) == (op == "==")
    if op == "<=":
        return mine <= theirs
    if op == ">=":
        return mine >= theirs
    same_release = key[:2] == other[:2]
    flags, bound_flags = key[5], other[5]
    if op == "<":  # "<V" admits no pre-release of V itself, unless V is one
        return mine < theirs and not (same_release and flags[0] and not bound_flags[0])  # type: ignore[index]
    # ">V" admits no post-release of V itself, unless V is one
    return mine > theirs and not (same_release and flags[1] and not bound_flags[1])  # type: ignore[index]
