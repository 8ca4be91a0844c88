"""The helpers patch authors import from ``sglang_shims.patching``."""

from __future__ import annotations

import types
from typing import Any, ClassVar

import pytest

from sglang_shims.catalog import load as _catalog
from sglang_shims.engine import journal
from sglang_shims.engine.gates import Environment
from sglang_shims.patching import (
    KERNEL_DISTS,
    PatchContext,
    argument,
    module_level,
    temporarily,
    tie_nothing,
)

from ..support import doctor
from ..support.packages import demo_manifest

MANIFEST = demo_manifest("journal-demo", "demo_mod")


def context() -> PatchContext:
    return PatchContext(MANIFEST, types.ModuleType("demo_mod"))


class Model:
    def __init__(self, config: Any, device: str = "cpu", *, quant: Any = None) -> None:
        self.config, self.device = config, device

    @staticmethod
    def register(model_type: str, config: Any, exist_ok: bool = False) -> tuple[Any, ...]:
        return model_type, config, exist_ok

    @classmethod
    def build(cls, config: Any, device: str = "cpu") -> tuple[Any, ...]:
        return cls, config, device


class SubModel(Model):
    pass


def recorder(ctx: PatchContext, cls: type, name: str, func: Any,
             *params: str) -> list[tuple[Any, ...]]:
    """Wrap ``cls.name``; each call records the named arguments as the helper reads them."""
    readers = [argument(func, param) for param in params]
    seen: list[tuple[Any, ...]] = []

    def spy(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        seen.append(tuple(read(instance, args, kwargs) for read in readers))
        return wrapped(*args, **kwargs)

    ctx.wrap(cls, name, spy)
    return seen


def test_argument_by_position_keyword_and_default() -> None:
    ctx = context()
    seen = recorder(ctx, SubModel, "__init__", SubModel.__init__, "config", "device", "quant")
    SubModel("c1")
    SubModel("c2", "cuda")
    SubModel(config="c3", quant=8)
    SubModel.__init__(SubModel.__new__(SubModel), "c4", device="meta")  # through the class
    assert seen == [("c1", "cpu", None), ("c2", "cuda", None), ("c3", "cpu", 8),
                    ("c4", "meta", None)]
    journal.undo(ctx)


def test_argument_of_static_and_class_methods() -> None:
    ctx = context()
    static = recorder(ctx, SubModel, "register", vars(Model)["register"], "config", "exist_ok")
    bound = recorder(ctx, SubModel, "build", SubModel.build, "config", "device")
    raw = recorder(ctx, Model, "build", vars(Model)["build"], "config")
    assert SubModel.register("t", "cfg") == ("t", "cfg", False)
    SubModel("c0").register("t", config="cfg2", exist_ok=True)  # through an instance
    assert SubModel.build("c", device="gpu") == (SubModel, "c", "gpu")
    assert Model.build("c") == (Model, "c", "cpu")
    assert static == [("cfg", False), ("cfg2", True)]
    assert bound[0] == ("c", "gpu") and raw[0] == ("c",)
    journal.undo(ctx)


def test_argument_replaced_keeps_the_rest_of_the_call() -> None:
    exist_ok = argument(vars(Model)["register"], "exist_ok")
    assert exist_ok.replaced(None, ("t", "cfg"), {}, True) == (("t", "cfg", True), {})
    assert exist_ok.replaced(None, ("t",), {"config": "c"}, True) == (
        ("t", "c", True), {})  # normalised: what can go by position does
    device = argument(Model.__init__, "device")
    instance = object()
    assert device.replaced(instance, ("cfg",), {"quant": 1}, "cuda") == (
        ("cfg", "cuda"), {"quant": 1})  # ``self`` is not handed back as an argument


def test_argument_refused_at_apply_time() -> None:
    with pytest.raises(TypeError, match="has no parameter 'cfg'"):
        argument(Model.__init__, "cfg")

    def catch_all(*args: Any, **kwargs: Any) -> None: ...

    with pytest.raises(TypeError, match="has no parameter 'config'"):
        argument(catch_all, "config")  # a ``**kwargs`` may or may not carry it: refuse


def test_argument_call_that_does_not_fit_raises_like_the_function() -> None:
    config_of = argument(Model.__init__, "config")
    with pytest.raises(TypeError):
        config_of(object(), (), {})


class Config:
    def __init__(self) -> None:
        vars(self)["present"] = "old"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("read-only config")


@pytest.mark.parametrize("raises", [False, True])
def test_temporarily_on_an_object_and_a_mapping(raises: bool) -> None:
    config, table = Config(), {"present": "old"}
    seen = []
    try:
        with temporarily(config, {"present": "new", "absent": 1}), \
                temporarily(table, {"present": "new", "absent": 1}):
            seen.append((vars(config).copy(), dict(table)))
            if raises:
                raise KeyError("inside")
    except KeyError:
        assert raises
    expected = {"present": "new", "absent": 1}
    assert seen == [(expected, expected)]
    assert vars(config) == {"present": "old"} and table == {"present": "old"}


def test_tie_nothing() -> None:
    ctx = context()

    class V4:
        _tied_weights_keys: ClassVar[Any] = ["lm_head.weight"]

    class V5:
        _tied_weights_keys: ClassVar[Any] = {"lm_head.weight": "model.embed_tokens.weight"}

    class Inherits(V4):
        pass

    assert tie_nothing(ctx, V4) and V4._tied_weights_keys == {}
    assert not tie_nothing(ctx, V5) and not tie_nothing(ctx, None)
    assert not tie_nothing(ctx, Inherits)  # only the class's own declaration
    journal.undo(ctx)
    assert V4._tied_weights_keys == ["lm_head.weight"]


def test_module_level() -> None:
    def build() -> type:
        class Restored:
            pass

        return module_level(Restored, "transformers.models.demo")

    cls = build()
    assert (cls.__module__, cls.__qualname__) == ("transformers.models.demo", "Restored")
    assert "<locals>" not in repr(cls)


def test_the_kernel_is_asked_for_by_its_new_name_first() -> None:
    """Both names installed: the files in sgl_kernel/ are the ones the newer install wrote,
    the renamed distribution's (see KERNEL_DISTS), and everyone who asks agrees: a patch
    through ``ctx.version``, a gate, the doctor."""
    both = {"sgl-kernel": "0.3.16", "sglang-kernel": "0.4.1"}
    env = Environment(both, hermetic=True)
    assert KERNEL_DISTS == ("sglang-kernel", "sgl-kernel")
    assert env.first_installed(KERNEL_DISTS) == ("sglang-kernel", "0.4.1")
    manifest = _catalog.load().by_id()["sgl-kernel-cuda-runtime-preload"]
    preload = _catalog.load_code(manifest)
    module = types.ModuleType("sgl_kernel")
    # 0.4.1 is past the CUDA-home check of 0.3.11-0.3.18.post2; 0.3.16 alone is inside it
    assert preload.kernel_version(PatchContext(manifest, module, env)) == ("0.4.1",
                                                                             (0, 4, 1, 0))
    old = Environment({"sgl-kernel": "0.3.16"}, hermetic=True)
    assert preload.kernel_version(PatchContext(manifest, module, old)) == ("0.3.16",
                                                                             (0, 3, 16, 0))
    assert [g.dists for g in manifest.requires if "sgl-kernel" in g.dists] == [KERNEL_DISTS]
    assert doctor.facts(both).kernel() == ("sglang-kernel", "0.4.1")
