"""sglang 0.4.10-0.4.10.post1: the HF3FS client compiles a C++ file its wheel lacks.

0.4.10's ``managers/cache_controller.py`` imports the HF3FS storage backend at module
level (0.4.10.post1 only when that backend is chosen), whose client runs
``torch.utils.cpp_extension.load(sources=[".../hf3fs_utils.cpp"])`` when it is imported
-- and the published wheels of those two releases do not contain ``hf3fs_utils.cpp``
(read from them), so 0.4.10's ``import sglang.launch_server`` fails with
FileNotFoundError on every machine (where the file exists, the import also needs a C++
compiler).  0.4.10.post2 ships the file and imports the backend only when
``--hicache-storage-backend hf3fs`` chooses it.  The stand-in client module has the one
name the backend imports, ``Hf3fsClient``, which raises a clear error if the backend is
ever built; every other server configuration never touches it.
"""

from __future__ import annotations

from pathlib import Path

from sglang_shims.patching import OptionalSymbol, PatchContext, unavailable

SOURCE = "hf3fs_utils.cpp"
REMEDY = ("Use sglang 0.4.10.post2 or later for the hf3fs storage backend, or another"
          " --hicache-storage-backend.")


def unusable(ctx: PatchContext) -> str | None:
    origin = getattr(getattr(ctx.module, "__spec__", None), "origin", None)
    if origin and not (Path(origin).parent / SOURCE).is_file():
        return f"the installed sglang has no {SOURCE} beside client_hf3fs.py to compile"
    return None  # the file is there: compile it; a failure comes back here


def provide(ctx: PatchContext) -> None:
    name, cause, patch_id = ctx.module.__name__, ctx.cause, ctx.manifest.id

    def explain() -> str:
        return unavailable(f"{name}.Hf3fsClient", cause, REMEDY, patch_id)

    ctx.module.Hf3fsClient = OptionalSymbol(  # type: ignore[attr-defined]
        name, "Hf3fsClient", patch_id, explain)
    ctx.note("Hf3fsClient raises if the hf3fs storage backend is chosen")
