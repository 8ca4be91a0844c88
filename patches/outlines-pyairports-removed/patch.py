"""outlines 0.0.43-0.0.46: ``outlines.types.airports`` needs a package PyPI no longer has.

The module builds an enum of IATA airport codes from ``pyairports.airports.AIRPORT_LIST``
at import, and ``outlines.types`` imports it, and ``outlines`` imports that: so every
``import outlines`` -- sglang up to 0.4.2.post3 imports it for constrained decoding --
needs pyairports.  Its releases have been removed from PyPI, and the name now holds an
unrelated upload with no ``pyairports`` module, so a fresh install cannot import sglang.
outlines 0.1.0 builds the same enum from ``airportsdata``; this stand-in does the same
where airportsdata is installed.  Where it is not, the module imports and its two names
raise a clear error when used: nothing else of outlines needs them.
"""

from __future__ import annotations

import importlib.util
from enum import Enum
from typing import Any

from sglang_shims.patching import PatchContext, unavailable

NAMES = ("AIRPORT_IATA_LIST", "IATA")
REMEDY = ("Install airportsdata (what outlines 0.1 builds this type from) or outlines"
          " 0.1.0 or later.")


def unusable(ctx: PatchContext) -> str | None:
    if importlib.util.find_spec("pyairports") is None:
        return "pyairports is not installed (its releases are gone from PyPI)"
    return None  # a real pyairports: let the module run; a failure there comes back here


def provide(ctx: PatchContext) -> None:
    module = ctx.module
    try:
        import airportsdata  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        airportsdata = None
    if airportsdata is not None:
        codes = sorted({entry["iata"] for entry in airportsdata.load().values()
                        if entry["iata"]})
        pairs = [(code, code) for code in codes]
        module.AIRPORT_IATA_LIST = pairs  # type: ignore[attr-defined]
        module.IATA = Enum("Airport", pairs)  # type: ignore[attr-defined]
        ctx.note(f"IATA built from airportsdata {getattr(airportsdata, '__version__', '?')}"
                 f" ({len(pairs)} codes), as outlines 0.1 does")
        return
    cause = ctx.cause

    def missing(name: str) -> Any:
        if name in NAMES:
            raise AttributeError(unavailable(f"outlines.types.airports.{name}",
                                             f"{cause}, and airportsdata is not installed"
                                             " either", REMEDY, ctx.manifest.id))
        raise AttributeError(f"module 'outlines.types.airports' has no attribute {name!r}")

    module.__getattr__ = missing  # type: ignore[method-assign]
    ctx.note("airportsdata is not installed: the airport-code type raises when used")
