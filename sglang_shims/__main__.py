"""``python -m sglang_shims``: the same CLI as the ``sglang-shims`` command."""

from .cli import main

raise SystemExit(main())
