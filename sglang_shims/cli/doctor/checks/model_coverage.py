"""``doctor --model-path``: the ``sgl_kernel`` ops a model reaches and the fallback's share.

Why: with ``sgl-kernel`` unusable, the Triton fallback serves ``sgl_kernel``; a model
whose forward reaches an op the fallback lacks starts and then fails on its first
request.  Said here from the model's ``config.json`` (read, never executed), using
:func:`sglang_shims.kernels.serving.model_ops.ops_for_config`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ... import jsonfile
from ..finding import Finding, Level, failed

__all__ = ["check_model"]

CHECK = "model-ops"
MAX_CONFIG = 1 << 20  # a config.json is a few KiB; refuse to read anything huge


def check_model(model_path: str) -> list[Finding]:
    """One finding for the model at ``model_path`` (a folder with ``config.json``, or the
    file itself); a warning when it cannot be read or reaches ops the fallback lacks."""
    from ....kernels.serving.model_ops import ops_for_config

    path = Path(model_path)
    file = path / "config.json" if path.is_dir() else path
    try:
        config = _read_config(file)
    except OSError as exc:
        return [Finding(CHECK, Level.WARN, f"could not read the model's config.json ({exc})",
                        "pass --model-path a local model folder that holds config.json")]
    except ValueError as exc:  # jsonfile.BadJSON included: one line that says why
        return [Finding(CHECK, Level.WARN, f"could not read the model's config {file}: {exc}",
                        "check the file (download the model again); a model's config.json "
                        "is one small JSON object")]
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


def _read_config(file: Path) -> dict[str, object]:
    """``config.json`` as a dict: a regular file (links allowed, as in a Hugging Face cache)
    of at most 1 MiB, judged on the opened file (``fstat``), opened without blocking, so a
    FIFO or device swapped in after a look can neither hang doctor nor feed it endlessly;
    its JSON read with :func:`~sglang_shims.cli.jsonfile.loads`, so a file nested deep
    enough to exhaust the stack is a bad file, not a crash."""
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_size > MAX_CONFIG:
            raise ValueError(f"larger than {MAX_CONFIG:,} bytes ({info.st_size:,})")
        data = jsonfile.loads(handle.read(MAX_CONFIG + 1), max_bytes=MAX_CONFIG)
    if not isinstance(data, dict):
        raise ValueError(f"holds a JSON {type(data).__name__}, not an object")
    return data
