"""Give transformers' hub-kernel table the revision kernels < 0.15 used to supply.

``transformers/integrations/hub_kernels.py`` (every release before 5.13) builds its
table of Hub kernels at import, with ``LayerRepository(repo_id=..., layer_name=...)``
and no ``revision`` or ``version``.  kernels up to 0.14 resolved such an entry to the
``main`` branch (with a FutureWarning); from 0.15.1 the constructor raises
``ValueError: Either a revision or a version must be specified.`` -- at the import of
``transformers.models.llama.modeling_llama`` and every other modeling file that pulls
in the integration.  sglang 0.5.11 - 0.5.12.post1 depend on ``kernels`` without a bound
and import that module inside ``import sglang``, so a fresh install of them cannot be
imported (sglang PR 26704 bounded kernels at 0.5.13).

The wrapper gives ``LayerRepository`` and ``FuncRepository`` the old default: built with
neither ``revision`` nor ``version``, they get ``revision="main"``, which is what
kernels 0.14 resolved them to.  Every call that names either goes through unchanged.
"""

from __future__ import annotations

import threading
from typing import Any

from sglang_shims.patching import PatchContext

CLASSES = ("LayerRepository", "FuncRepository")
DEFAULT = "main"


def apply(ctx: PatchContext) -> None:
    found = [name for name in CLASSES if isinstance(getattr(ctx.module, name, None), type)]
    if not found:
        raise RuntimeError(f"kernels exports none of {', '.join(CLASSES)}; nothing to do")
    defaulted: dict[str, int] = {}
    lock = threading.Lock()

    def make(name: str) -> Any:
        def init(wrapped: Any, instance: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any:
            if kwargs.get("revision") is None and kwargs.get("version") is None:
                kwargs = {**kwargs, "revision": DEFAULT}
                with lock:
                    first = name not in defaulted
                    defaulted[name] = defaulted.get(name, 0) + 1
                if first:
                    ctx.note(f"{name} built without revision or version got "
                             f"revision={DEFAULT!r}, as kernels < 0.15 resolved it")
            return wrapped(*args, **kwargs)

        return init

    for name in found:
        ctx.wrap(getattr(ctx.module, name), "__init__", make(name))
