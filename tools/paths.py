"""Recorded text without this machine's paths.

Error messages the tools record (an ImportError names the file it read, ptxas's repro
command names its binary and a temporary file) carry the paths of the machine they ran on:
``/home/me/venv/lib/python3.11/site-packages/triton/runtime/cache.py``.  Committed data and
the pages generated from it must read the same whoever made them, and tell nothing about the
maker's disk, so every recorder passes its text through :func:`portable` first.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from sglang_shims.testing.wheels import cache_path

_SITE = re.compile(r"(?:[A-Za-z]:)?[^\s'\"()<>|:]*[/\\](?:site|dist)-packages(?=[/\\])")
"""An installation's package folder, with everything before it (``.../site-packages``)."""


def _temp() -> re.Pattern[str]:
    return re.compile(re.escape(tempfile.gettempdir().rstrip("/")) + r"/[^\s'\"()<>|:/]*")


def portable(text: str) -> str:
    """``text`` with each package folder's path written ``<site-packages>``, the temporary
    folder with the scratch folder made in it (a random name) written ``<tmp>``
    (``/tmp/sglang-matrix-kyqkn0tg/0.5.3/sgl_kernel/__init__.py`` reads
    ``<tmp>/0.5.3/sgl_kernel/__init__.py``), the wheel cache ``<wheel-cache>`` (the matrix's
    environments: ``<wheel-cache>/matrix/0.4.2-pinned/site/vllm/...``) and what is left of
    the home folder ``~``."""
    text = text.replace(str(cache_path()).rstrip("/") + "/", "<wheel-cache>/")
    text = _temp().sub("<tmp>", _SITE.sub("<site-packages>", text))
    home = str(Path.home()).rstrip("/")
    return re.sub(re.escape(home) + r"(?=/)", "~", text) if len(home) > 1 else text


def portable_tree(data: Any) -> Any:
    """:func:`portable` on every string of a JSON-like value (dict keys too)."""
    if isinstance(data, str):
        return portable(data)
    if isinstance(data, dict):
        return {portable_tree(k): portable_tree(v) for k, v in data.items()}
    if isinstance(data, list):
        return [portable_tree(v) for v in data]
    return data
