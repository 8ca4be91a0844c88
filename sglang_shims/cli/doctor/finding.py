"""What every doctor check returns: one :class:`Finding` per thing it looked at."""

from __future__ import annotations

import enum
from dataclasses import dataclass

PROJECT_URL = "https://github.com/sglang-shims/sglang-shims"
TRITON_FALLBACK = "SGLANG_SHIMS_ENABLE=sgl-kernel-triton-fallback"


class Level(str, enum.Enum):
    """How much a finding matters, mildest first.  A ``str``, so it compares equal to its
    value and ``doctor --json`` carries the plain word, as it did before levels were typed."""

    OK = "ok"
    INFO = "info"
    WARN = "warn"
    FAIL = "fail"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Finding:
    check: str
    """Short id: ``torch``, ``sgl-kernel-abi``, ``sgl-kernel-arch``, a rule id, ..."""
    level: Level
    detail: str
    """What was found, with versions."""
    remedy: str = ""
    """What to do, concretely (a pip command, an env var); empty when nothing is."""

    def as_dict(self) -> dict[str, str]:
        """The finding as ``doctor --json`` writes it: plain strings only."""
        return {"check": self.check, "level": self.level.value, "detail": self.detail,
                "remedy": self.remedy}


def failed(check: str, exc: BaseException) -> Finding:
    """A check that raised: said as a warning, so the other checks still count."""
    return Finding(check, Level.WARN, f"this check itself failed ({type(exc).__name__}: {exc}); "
                   "the other checks are unaffected",
                   f"please report it at {PROJECT_URL}/issues with this output")
