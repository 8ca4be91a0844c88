"""Entry point for sglang's own plugin route (group ``sglang.srt.plugins``, sglang >= 0.5.11).

sglang calls ``load_plugins()`` in processes it starts itself (launch_server, Engine,
scheduler; from 0.5.22 also the detokenizer and the data-parallel controller).  Where
the ``.pth`` hook did not run, this activates the shims there; where it did, the call
is a no-op: ``install()`` is idempotent and no patch is ever applied twice in a process.
It runs after ``import sglang``, so patches whose targets are already imported are
applied late (and say so in the report).
"""

from __future__ import annotations


def load() -> None:
    try:
        from .engine import install

        install("plugin")
    except ImportError:
        raise  # strict mode or a required patch: sglang must not start without it
    except Exception as exc:  # a plugin must never take sglang down
        import sys

        print(f"sglang-shims: plugin activation failed: {type(exc).__name__}: {exc}",
              file=sys.stderr)
