"""sglang's own version pins, read from its ``Requires-Dist`` lines.

Shared by the pin check, the ABI check's remedy and the rules that name what sglang
pins (the kernel to install, the transformers to go back to).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...engine.gates import canonical

if TYPE_CHECKING:
    from packaging.requirements import Requirement


@dataclass(frozen=True)
class Pin:
    dist: str
    """Canonical name: ``flashinfer-python``."""
    spec: str
    extra: str
    """The extra that carries it: ``""`` for a plain dependency, ``srt``, ``cu130``, ..."""
    default: bool
    """True when ``pip install sglang`` / ``sglang[srt]`` installs it."""


PIN_DISTS = ("torch", "sgl-kernel", "sglang-kernel", "flashinfer-python", "flashinfer-cubin",
             "flashinfer-jit-cache", "transformers", "triton", "kernels")
DEFAULT_EXTRAS = ("", "srt")


def sglang_pins(lines: Iterable[str], dists: Iterable[str] | None = PIN_DISTS) -> list[Pin]:
    """sglang's version pins from its ``Requires-Dist`` lines (of ``dists``; None: all).

    Old releases put the runtime under the ``srt`` extra, which pulls in
    ``sglang[runtime_common]``; those self-references are followed.  Pins under
    other extras (``blackwell``, ``cu130``) are kept as alternatives.
    """
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    wanted = None if dists is None else {canonical(d) for d in dists}
    reqs: list[tuple[Requirement, str]] = []
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        reqs.append((req, _extra_of(req)))
    default = set(DEFAULT_EXTRAS)
    grew = True
    while grew:
        grew = False
        for req, extra in reqs:
            if canonicalize_name(req.name) == "sglang" and extra in default:
                new = {canonicalize_name(e) for e in req.extras} - default
                default |= new
                grew = grew or bool(new)
    pins = []
    for req, extra in reqs:
        name = canonical(req.name)
        if (wanted is None or name in wanted) and str(req.specifier) and name != "sglang":
            pins.append(Pin(name, str(req.specifier), extra, extra in default))
    return pins


def _extra_of(req: Requirement) -> str:
    """The extra a requirement belongs to ("" if none), judged on this platform."""
    from packaging.utils import canonicalize_name

    marker = req.marker
    if marker is None:
        return ""
    names = re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", str(marker))
    for extra in ["", *names]:
        try:
            if marker.evaluate({"extra": extra}):
                return str(canonicalize_name(extra)) if extra else ""
        except Exception:
            return "?"
    return "?"  # a platform marker that is false here
