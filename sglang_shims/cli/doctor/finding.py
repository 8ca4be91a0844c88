"""What every doctor check returns: one :class:`Finding` per thing it looked at."""

from __future__ import annotations

from dataclasses import dataclass

PROJECT_URL = "https://github.com/sglang-shims/sglang-shims"
TRITON_FALLBACK = "SGLANG_SHIMS_ENABLE=sgl-kernel-triton-fallback"
LEVELS = ("ok", "info", "warn", "fail")


@dataclass(frozen=True)
class Finding:
    check: str
    """Short id: ``torch``, ``sgl-kernel-abi``, ``sgl-kernel-arch``, a rule id, ..."""
    level: str
    """``ok`` | ``info`` | ``warn`` | ``fail``."""
    detail: str
    """What was found, with versions."""
    remedy: str = ""
    """What to do, concretely (a pip command, an env var); empty when nothing is."""


def failed(check: str, exc: BaseException) -> Finding:
    """A check that raised: said as a warning, so the other checks still count."""
    return Finding(check, "warn", f"this check itself failed ({type(exc).__name__}: {exc}); "
                   "the other checks are unaffected",
                   f"please report it at {PROJECT_URL}/issues with this output")
