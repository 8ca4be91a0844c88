"""Let sglang's start-up kernel check find the renamed kernel distribution.

sgl-kernel was renamed sglang-kernel at 0.4.0 (the import name stays ``sgl_kernel``).
sglang <= 0.5.9 runs ``assert_pkg_version("sgl-kernel", MIN, msg)`` in
``_set_envs_and_config`` and raises "not installed" for an environment that has
only the new name.  The check is kept meaningful: it compares the version of the
distribution that is actually installed against the same minimum.
"""

from __future__ import annotations

from typing import Any

from sglang_shims.patching import PatchContext

OLD = "sgl-kernel"
NEW = "sglang-kernel"


def apply(ctx: PatchContext) -> None:
    def check(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        pkg = args[0] if args else kwargs.get("pkg")
        if pkg in (OLD, "sgl_kernel") and ctx.version(OLD) is None and ctx.version(NEW):
            ctx.log.info("checking %s instead of %s (renamed distribution)", NEW, OLD)
            if args:
                args = (NEW, *args[1:])
            else:
                kwargs = {**kwargs, "pkg": NEW}
        return wrapped(*args, **kwargs)

    ctx.wrap(ctx.module, "assert_pkg_version", check)
