"""Which ``sgl_kernel`` ops the model this process serves reaches, and who serves each.

Why: where the Triton fallback (or the hybrid tier) serves ``sgl_kernel``, a model whose
forward reaches an op nothing here provides starts and then fails on its first request.
``sglang-shims doctor --model-path`` says so before a run; this says it *in* the run, for
the model sglang actually loaded: when sglang builds its ``ModelConfig`` (every release
0.5.1-0.5.23 builds one per process that loads or tokenises for a model, always through
``ModelConfig.__init__`` in ``sglang.srt.configs.model_config``), the verdict goes into the
acting patch's ``details["models"]``, the process report is written again, and a model
with an op served by nothing gets one warning line now rather than an error at its first
forward.

Cheap at start-up: installing the hook imports nothing; the wrapper is put on
``ModelConfig.__init__`` when that module has finished importing, and the verdict is
computed when sglang builds the config.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...engine.journal import PatchContext

__all__ = ["MODULE", "observe_models", "record_model"]

MODULE = "sglang.srt.configs.model_config"
CLASS = "ModelConfig"
REMEDY = ("install an sgl-kernel built for this GPU and torch (`sglang-shims doctor` names"
          " it)")
BLOCK_FP8_REMEDY = ("; for FP8 block scales sglang 0.5.7+ can avoid fp8_blockwise_scaled_mm"
                    " with --fp8-gemm-backend triton")

NOT_CALLED = "not called"
_CALLBACK = "_sglang_shims_when_loaded"


class _Loading(ModuleSpec):
    """A module's spec, for the length of its import: calls back when the import system
    marks the module initialised (``spec._initializing = False``, set in a ``finally``
    after the body ran, however it ended), then is a plain ``ModuleSpec`` again.

    Why the spec and not the loader: the module may already be executing when the patch
    applies (sglang imports ``sgl_kernel`` from inside other modules' bodies), and a
    wrapped loader would put a frame of ours into the traceback of an import that fails.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name == "_initializing" and not value:
            object.__setattr__(self, "__class__", ModuleSpec)
            callback = self.__dict__.pop(_CALLBACK, None)
            if callback is not None:
                callback()


def _hook_spec(spec: Any, callback: Callable[[], None]) -> bool:
    """Mark a plain ``ModuleSpec`` (a finder's own subclass is left alone: False)."""
    if type(spec) not in (ModuleSpec, _Loading):
        return False
    object.__setattr__(spec, _CALLBACK, callback)
    object.__setattr__(spec, "__class__", _Loading)
    return True


def _unhook_spec(spec: Any) -> None:
    if type(spec) is _Loading:
        spec.__dict__.pop(_CALLBACK, None)
        object.__setattr__(spec, "__class__", ModuleSpec)


class _Finder:
    """On ``sys.meta_path`` until ``name`` has been imported: gives back the spec another
    finder has for it, marked so that :class:`_Loading` calls back once its body ran."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name = name
        self.callback = callback
        self.busy = False
        self.specs: list[Any] = []

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name or self.busy:
            return None
        self.busy = True
        try:
            spec = None
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self.busy = False
        if spec is not None:
            _hook_spec(spec, self.callback)
            self.specs.append(spec)
        return spec

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for spec in self.specs:
            _unhook_spec(spec)


def when_loaded(ctx: PatchContext, name: str, act: Callable[[Any], None]) -> None:
    """Call ``act(module)`` once module ``name`` has finished importing: now if it has,
    when its body ends if it is importing (up the stack), else when it is imported.
    Undone with the patch.  ``act`` must not raise: it may run inside an import."""
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    if module is not None and not getattr(spec, "_initializing", False):
        act(module)
        return
    finder: _Finder | None = None

    def loaded() -> None:
        done = sys.modules.get(name)
        if done is None or getattr(getattr(done, "__spec__", None), "_initializing", False):
            return  # the import failed: a later attempt finds the finder still there
        if finder is not None:
            finder.remove()
        act(done)

    if module is not None:
        if not _hook_spec(spec, loaded):
            raise TypeError(f"{name} is being imported with a {type(spec).__name__} spec")
        ctx.on_undo(f"{name}: load callback", lambda: _unhook_spec(spec))
        return
    finder = _Finder(name, loaded)
    sys.meta_path.insert(0, finder)
    ctx.on_undo(f"sys.meta_path: finder waiting for {name}", finder.remove)


def observe_models(ctx: PatchContext) -> None:
    """Judge every ``ModelConfig`` sglang builds in this process (:func:`record_model`)."""

    def wrap(module: Any) -> None:
        try:
            config_class = getattr(module, CLASS)
            ctx.wrap(config_class, "__init__", built)
        except Exception as exc:  # an sglang without it: said, never raised into an import
            ctx.note(f"the model served is not judged: {MODULE}.{CLASS}.__init__ could not"
                     f" be wrapped ({type(exc).__name__}: {exc})")
            ctx.log.warning("%s: %s", ctx.manifest.id, ctx.notes[-1])

    def built(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:
        result = wrapped(*args, **kwargs)
        try:
            record_model(ctx, instance)
        except Exception as exc:  # judging must never stop sglang from building its config
            ctx.log.warning("%s: could not judge the model's ops (%s: %s)", ctx.manifest.id,
                            type(exc).__name__, exc)
        return result

    # made now, inside apply: later verdicts replace the value, never grow ``details``
    # while another thread's status() may be copying it
    ctx.details.setdefault("models", {})
    try:
        when_loaded(ctx, MODULE, wrap)
    except Exception as exc:
        ctx.note(f"the model served is not judged: {type(exc).__name__}: {exc}")


def record_model(ctx: PatchContext, model_config: Any) -> dict[str, Any]:
    """Put the verdict for ``model_config`` (sglang's ``ModelConfig``) into
    ``ctx.details["models"][<model path>]``, warn once if an op is served by nothing, and
    write the process report again (it was written when the patch applied)."""
    from . import model_ops
    from .hybrid import NONE

    quantization = getattr(model_config, "quantization", None)
    hf_config = model_config.hf_config
    config = model_ops.config_of(hf_config, str(quantization) if quantization else None)
    found = model_ops.ops_for_config(config)
    module = sys.modules.get("sgl_kernel")
    served = model_ops.served_by(found.ops, module, ctx.details.get("kernel_ops"))
    sglang = ctx.version("sglang")
    for op in model_ops.not_called(served, sglang):
        served[op] = f"{NOT_CALLED}: sglang {sglang} does not call it from sgl_kernel"
    pinned = model_ops.pinned_surface(sglang)
    for op, label in served.items():
        if pinned is not None and label == model_ops.UNBOUND and op not in pinned[1]:
            served[op] = f"{NOT_CALLED}: {pinned[0]}, which sglang {sglang} pins, has no {op}"
    failing = [op for op, label in served.items() if model_ops.provider_of(label) == NONE]
    architectures = list(getattr(hf_config, "architectures", None) or [])
    path = str(getattr(model_config, "model_path", "") or config.get("_name_or_path", "?"))
    entry: dict[str, Any] = {
        "architecture": architectures[0] if architectures else config.get("model_type"),
        "quantization": str(quantization) if quantization else None,
        "families": found.families,
        "ops": served,
        "would_fail": failing,
        "unsupported": found.unsupported,
    }
    models: dict[str, Any] = ctx.details.get("models") or {}
    said = models.get(path)
    ctx.details["models"] = {**models, path: entry}
    fallback = module is not None and hasattr(module, "__sglang_shims_fallback__")
    troubles = failing + (found.unsupported if fallback else [])
    if troubles and (said is None or said["ops"] != served):
        what = (f"reaches sgl_kernel ops nothing serves in this process:"
                f" {', '.join(failing)}" if failing else "")
        beyond = "; ".join(found.unsupported) if fallback else ""
        ctx.log.warning("%s: model %s (%s) %s%s; its first forward fails there. Remedy: %s",
                        ctx.manifest.id, path, entry["architecture"], what,
                        ("; " if what and beyond else "") + beyond,
                        REMEDY + (BLOCK_FP8_REMEDY if "fp8_blockwise_scaled_mm" in failing
                                  else ""))
    _write_report()
    return entry




def _write_report() -> None:
    """The report on disk was written when the patch applied; the verdict came later.
    Only the engine that applied the patch writes (none in a unit test: nothing to do)."""
    process = sys.modules.get("sglang_shims.engine.process")
    engine = process.current() if process is not None else None
    if engine is not None:
        engine.changed()
