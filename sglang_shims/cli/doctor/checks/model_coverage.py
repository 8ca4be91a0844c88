"""``doctor --model-path``: the ``sgl_kernel`` ops a model reaches and the fallback's share.

Why: with ``sgl-kernel`` unusable, the Triton fallback serves ``sgl_kernel``; a model
whose forward reaches an op the fallback lacks starts and then fails on its first
request.  Said here from the model's ``config.json`` (read, never executed), using
:func:`sglang_shims.kernels.model_ops.ops_for_config`.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from ..finding import Finding, Level, failed

__all__ = ["check_model"]

CHECK = "model-ops"
MAX_CONFIG = 1 << 20  # a config.json is a few KiB; refuse to read anything huge


def check_model(model_path: str) -> list[Finding]:
    """One finding for the model at ``model_path`` (a folder with ``config.json``, or the
    file itself); a warning when it cannot be read or reaches ops the fallback lacks."""
    from ....kernels.model_ops import ops_for_config

    try:
        config = _read_config(Path(model_path))
    except (OSError, ValueError) as exc:
        return [Finding(CHECK, Level.WARN, f"could not read the model's config.json ({exc})",
                        "pass --model-path a local model folder that holds config.json")]
    try:
        found = ops_for_config(config)
    except Exception as exc:  # a config shaped in a way not foreseen: said, never raised
        return [failed(CHECK, exc)]
    name = str(config.get("_name_or_path") or config.get("model_type") or model_path)
    head = (f"{name} ({'; '.join(found.families)}) reaches {len(found.ops)} sgl_kernel ops on "
            "CUDA")
    missing, unsupported = found.missing(), found.unsupported
    if not missing and not unsupported:
        return [Finding(CHECK, Level.OK, f"{head}; the Triton fallback provides all of them: "
                        f"{', '.join(found.ops)}")]
    lacks = [f"the fallback lacks {', '.join(missing)}"] if missing else []
    detail = (f"{head}: {', '.join(found.provided())} are provided; "
              + "; ".join(lacks + unsupported)
              + ". Where sgl-kernel cannot run and the fallback serves it, the first forward "
                "fails there")
    return [Finding(CHECK, Level.WARN, detail,
                    "run with a working sgl-kernel for this GPU and torch; for FP8 block "
                    "scales sglang 0.5.7+ can avoid fp8_blockwise_scaled_mm with "
                    "--fp8-gemm-backend triton")]


def _read_config(path: Path) -> dict[str, object]:
    """``config.json`` as a dict: a regular file (links allowed, as in a Hugging Face cache)
    of at most 1 MiB, judged on the opened file (``fstat``), opened without blocking, so a
    FIFO or device swapped in after a look can neither hang doctor nor feed it endlessly."""
    file = path / "config.json" if path.is_dir() else path
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CONFIG:
            raise ValueError(f"{file} is not a regular file of at most 1 MiB")
        data = json.loads(handle.read(MAX_CONFIG + 1))
    if not isinstance(data, dict):
        raise ValueError(f"{file} does not hold a JSON object")
    return data
