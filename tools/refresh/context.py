"""What every generator of the refresh is handed: where things are, and today's date."""

from __future__ import annotations

import datetime
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .pypi import PYPI

REPO = Path(__file__).resolve().parents[2]


def today() -> str:
    """The date stamped on what is written (``SOURCE_DATE_EPOCH`` makes it reproducible)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch
            else datetime.datetime.now(datetime.timezone.utc))
    return when.date().isoformat()


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class Context:
    """The options of one refresh run.

    ``index`` is where releases are listed and downloaded from (``none``: nowhere, the
    recorded snapshot stands for it); ``find_links`` folders of wheels listed beside it,
    as ``pip --find-links`` reads them (a fabricated release, say); ``git`` a clone of
    sglang (only the kernel exports read it, and only for kernel versions the index no
    longer has); ``jobs`` matrix cells run at once; ``root`` the checkout written to."""

    root: Path = REPO
    index: str = PYPI
    find_links: list[Path] = field(default_factory=list)
    git: Path | None = None
    wheel_cache: Path | None = None
    jobs: int = 1
    date: str = field(default_factory=today)

    def pip_args(self) -> tuple[str, ...]:
        """What ``pip download`` needs to fetch from the same places."""
        args: list[str] = ["--no-index"] if self.index == "none" else ["--index-url",
                                                                       self.index]
        for folder in self.find_links:
            args += ["--find-links", str(folder)]
        return tuple(args)
