"""The model a process serves, judged when sglang builds its ``ModelConfig``
(``kernels.serving.serving_model``).

Unit tests: a fake ``ModelConfig`` module, imported in each of the three orders the
patch can meet it (already imported, importing up the stack, not yet imported), a fake
``sgl_kernel`` and a fake hybrid table; the verdicts are written here, from the op lists
of docs/fallback-ops.md, never read from the code under test.
"""

from __future__ import annotations

import json
import logging
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sglang_shims.catalog.validate import load_text
from sglang_shims.engine import journal
from sglang_shims.engine.gates import Environment
from sglang_shims.engine.journal import PatchContext
from sglang_shims.engine.proxy import OptionalSymbol
from sglang_shims.kernels.serving import model_ops, serving_model

from ..support.packages import manifest_text
from ..support.run import run_python

TEXT = manifest_text("model-demo", "demo_kernel", extra=(
    '[[provide]]\nname = "f"\nexported_by = "x"\nremedy = "y"\n'))
MANIFEST = load_text(TEXT, "t")

DENSE = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_act": "silu"}
MOE = {**DENSE, "architectures": ["Qwen3MoeForCausalLM"], "num_experts": 8}
FP8_BLOCK = {**DENSE, "quantization_config": {"quant_method": "fp8",
                                               "weight_block_size": [128, 128]}}


class HFConfig:
    """What sglang's ModelConfig keeps as ``hf_config``: ``to_dict()`` and attributes."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.architectures = data.get("architectures")

    def to_dict(self) -> dict[str, Any]:
        return dict(self.data)


class FakeModelConfig:
    def __init__(self, model_path: str, config: dict[str, Any],
                 quantization: str | None = None) -> None:
        self.model_path = model_path
        self.hf_config = HFConfig(config)
        self.quantization = quantization


def ours(name: str) -> Any:
    def op(*args: Any) -> None: ...

    op.__module__ = "sglang_shims.kernels._fake"
    op.__name__ = name
    return op


def real(name: str) -> Any:
    def op(*args: Any) -> None: ...

    op.__module__ = "sgl_kernel"
    return op


def kernel(fallback: bool, **bound: Any) -> types.ModuleType:
    module = types.ModuleType("sgl_kernel")
    if fallback:
        module.__sglang_shims_fallback__ = "sgl_kernel is not installed"  # type: ignore[attr-defined]
    for name, value in bound.items():
        setattr(module, name, value)
    return module


DENSE_OPS = ("rmsnorm", "fused_add_rmsnorm", "apply_rope_with_cos_sin_cache_inplace",
             "silu_and_mul")


@pytest.fixture
def env() -> Environment:
    """What ``ctx.version`` answers; a test sets another sglang in ``env.versions``."""
    return Environment({"sglang": "0.5.9"}, hermetic=True)


@pytest.fixture
def ctx(monkeypatch: pytest.MonkeyPatch, env: Environment) -> Iterator[PatchContext]:
    # our logger keeps to its own handler once an engine configured it; caplog reads root
    monkeypatch.setattr(logging.getLogger("sglang_shims"), "propagate", True)
    context = PatchContext(MANIFEST, types.ModuleType("demo_kernel"), env)
    yield context
    journal.undo(context)


def test_dense_model_served_by_the_fallback(ctx: PatchContext,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sgl_kernel",
                        kernel(True, **{op: ours(op) for op in DENSE_OPS}))
    entry = serving_model.record_model(ctx, FakeModelConfig("/m/dense", DENSE))
    assert entry == {"architecture": "Qwen3ForCausalLM", "quantization": None,
                     "families": ["dense"], "ops": dict.fromkeys(DENSE_OPS, "ours"),
                     "would_fail": [], "unsupported": []}
    assert ctx.details["models"] == {"/m/dense": entry}


def test_an_op_nothing_serves_is_named_and_warned_once(
        ctx: PatchContext, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    # sglang 0.5.9 calls moe_sum_reduce from sgl_kernel (docs/fallback-ops.md); here it is a
    # stand-in that raises, and moe_align_block_size is not bound at all
    proxy = OptionalSymbol("sgl_kernel", "moe_sum_reduce", "model-demo", lambda: "missing")
    monkeypatch.setitem(sys.modules, "sgl_kernel", kernel(
        True, topk_softmax=ours("topk_softmax"), moe_sum_reduce=proxy,
        **{op: ours(op) for op in DENSE_OPS}))
    caplog.set_level(logging.WARNING, logger="sglang_shims")
    model = FakeModelConfig("/m/moe", MOE)
    entry = serving_model.record_model(ctx, model)
    assert entry["would_fail"] == ["moe_align_block_size", "moe_sum_reduce"]
    assert entry["ops"]["moe_sum_reduce"] == "none: raises when called"
    assert entry["ops"]["moe_align_block_size"] == "none: not bound"
    assert entry["ops"]["topk_softmax"] == "ours"
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "\n" not in warned[0]
    assert "/m/moe" in warned[0] and "moe_align_block_size, moe_sum_reduce" in warned[0]
    assert "sgl-kernel built for this GPU" in warned[0]  # the remedy
    serving_model.record_model(ctx, model)  # the same config built again: no second line
    assert len(caplog.records) == 1


def test_an_op_the_release_never_calls_cannot_fail_it(ctx: PatchContext, env: Environment,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """sglang 0.5.1 sums the experts with its own Triton kernel (moe_sum_reduce from
    sgl_kernel only from 0.5.4.post2): absent there, it is not a failure."""
    env.versions["sglang"] = "0.5.1"
    monkeypatch.setitem(sys.modules, "sgl_kernel", kernel(
        True, topk_softmax=ours("t"), moe_align_block_size=ours("a"),
        **{op: ours(op) for op in DENSE_OPS}))
    entry = serving_model.record_model(ctx, FakeModelConfig("/m/moe", MOE))
    assert entry["would_fail"] == []
    assert entry["ops"]["moe_sum_reduce"].startswith("not called: sglang 0.5.1")


def test_an_op_the_pinned_kernel_lacks_is_not_called(ctx: PatchContext, env: Environment,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """sglang 0.5.23 runs RoPE as its own JIT kernel; its pin, sglang-kernel 0.4.10, has no
    apply_rope_with_cos_sin_cache_inplace, so the stand-in lacking it fails nothing."""
    env.versions["sglang"] = "0.5.23"
    monkeypatch.setitem(sys.modules, "sgl_kernel", kernel(True, **{
        op: ours(op) for op in DENSE_OPS if op != "apply_rope_with_cos_sin_cache_inplace"}))
    entry = serving_model.record_model(ctx, FakeModelConfig("/m/dense", DENSE))
    assert entry["would_fail"] == []
    assert entry["ops"]["apply_rope_with_cos_sin_cache_inplace"] == (
        "not called: sglang-kernel==0.4.10, which sglang 0.5.23 pins, has no"
        " apply_rope_with_cos_sin_cache_inplace")
    env.versions["sglang"] = "0.5.9"  # pins sgl-kernel 0.3.21, which has it: a failure
    entry = serving_model.record_model(ctx, FakeModelConfig("/m/dense", DENSE))
    assert entry["would_fail"] == ["apply_rope_with_cos_sin_cache_inplace"]


def test_hybrid_labels_and_online_fp8(ctx: PatchContext, env: Environment,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The hybrid's table gives its labels; ``--quantization fp8`` on a bf16 checkpoint
    reaches the per-channel FP8 ops (sglang's own choice decides, not the checkpoint)."""
    table = {"apply_rope_with_cos_sin_cache_inplace": "adapter: sgl_kernel.rotary_embedding",
             "rmsnorm": "real kernel (float16/bfloat16); ours (float32: the kernel has none)"}
    monkeypatch.setitem(sys.modules, "sgl_kernel", kernel(
        False, fp8_scaled_mm=real("fp8_scaled_mm"),
        sgl_per_token_quant_fp8=real("q"), sgl_per_tensor_quant_fp8=real("t"),
        **{op: real(op) for op in DENSE_OPS}))
    ctx.details["kernel_ops"] = table
    env.versions["sglang"] = "0.5.5"  # calls all three FP8 ops from sgl_kernel
    entry = serving_model.record_model(ctx, FakeModelConfig("/m/d", DENSE, quantization="fp8"))
    assert entry["quantization"] == "fp8"
    assert entry["ops"] == {"rmsnorm": table["rmsnorm"], "fused_add_rmsnorm": "real kernel",
                            "apply_rope_with_cos_sin_cache_inplace": table[
                                "apply_rope_with_cos_sin_cache_inplace"],
                            "silu_and_mul": "real kernel",
                            "sgl_per_token_quant_fp8": "real kernel",
                            "sgl_per_tensor_quant_fp8": "real kernel",
                            "fp8_scaled_mm": "real kernel"}
    assert entry["would_fail"] == []


def test_the_live_module_wins_over_the_table(ctx: PatchContext,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A table that says 'ours' for a name the module no longer binds claims nothing."""
    monkeypatch.setitem(sys.modules, "sgl_kernel", kernel(False, **{
        op: real(op) for op in DENSE_OPS if op != "silu_and_mul"}))
    ctx.details["kernel_ops"] = {"silu_and_mul": "ours: sglang_shims.kernels.silu_and_mul"}
    entry = serving_model.record_model(ctx, FakeModelConfig("/m/d", DENSE))
    assert entry["would_fail"] == ["silu_and_mul"]


def test_block_fp8_checkpoint_and_unsupported_quantisation(
        ctx: PatchContext, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "sgl_kernel",
                        kernel(True, **{op: ours(op) for op in DENSE_OPS}))
    caplog.set_level(logging.WARNING, logger="sglang_shims")
    entry = serving_model.record_model(ctx, FakeModelConfig("/m/fp8", FP8_BLOCK, "fp8"))
    assert entry["families"] == ["dense", "FP8, 128x128 block scales"]
    assert entry["would_fail"] == ["sgl_per_token_group_quant_fp8", "fp8_blockwise_scaled_mm"]
    awq = {**DENSE, "quantization_config": {"quant_method": "awq"}}
    entry = serving_model.record_model(ctx, FakeModelConfig("/m/awq", awq, "awq"))
    assert entry["would_fail"] == [] and entry["unsupported"]
    assert "quantization 'awq'" in caplog.records[-1].getMessage()
    assert "--fp8-gemm-backend triton" in caplog.records[0].getMessage()  # block FP8 only
    assert "--fp8-gemm-backend" not in caplog.records[-1].getMessage()


def test_config_of_prefers_sglangs_quantisation() -> None:
    assert model_ops.config_of(HFConfig(DENSE), "fp8")["quantization_config"] == {
        "quant_method": "fp8"}
    assert model_ops.config_of(HFConfig(FP8_BLOCK), "fp8") == FP8_BLOCK
    assert model_ops.config_of(types.SimpleNamespace(a=1), None) == {"a": 1}


# -- the hook: ModelConfig.__init__ wrapped whenever its module finishes importing -----------

FAKE_MODULE = '''
import sys
ORDER = []
{inside}
class ModelConfig:
    def __init__(self, model_path, config, quantization=None):
        self.model_path = model_path
        self.hf_config = config
        self.quantization = quantization
ORDER.append("defined")
'''


@pytest.fixture
def fake_sglang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder holding ``sglang/srt/configs/model_config.py``; removed from sys.modules."""
    folder = tmp_path / "sglang" / "srt" / "configs"
    folder.mkdir(parents=True)
    for level in (tmp_path / "sglang", tmp_path / "sglang" / "srt", folder):
        (level / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    saved = {k: v for k, v in sys.modules.items() if k == "sglang" or k.startswith("sglang.")}
    for key in saved:
        del sys.modules[key]
    yield folder
    for key in [k for k in sys.modules if k == "sglang" or k.startswith("sglang.")]:
        del sys.modules[key]
    sys.modules.update(saved)


def judged(ctx: PatchContext) -> dict[str, Any]:
    import importlib

    module = importlib.import_module(serving_model.MODULE)
    module.ModelConfig("/m/dense", HFConfig(DENSE))
    models: dict[str, Any] = ctx.details.get("models", {})
    return models


@pytest.fixture
def model_config(fake_sglang: Path) -> Path:
    """sglang's ``model_config.py`` in the fake package, as sglang writes it (nothing run
    inside), not imported yet."""
    path = fake_sglang / "model_config.py"
    path.write_text(FAKE_MODULE.format(inside=""))
    return path


@pytest.fixture
def dense_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sgl_kernel",
                        kernel(True, **{op: ours(op) for op in DENSE_OPS}))


def test_hook_when_the_module_is_already_imported(ctx: PatchContext, model_config: Path,
                                                  dense_kernel: None) -> None:
    import importlib

    importlib.import_module(serving_model.MODULE)
    serving_model.observe_models(ctx)
    assert list(judged(ctx)) == ["/m/dense"]


def test_hook_when_the_module_is_imported_later(ctx: PatchContext, model_config: Path,
                                                dense_kernel: None) -> None:
    before = list(sys.meta_path)
    serving_model.observe_models(ctx)
    assert list(judged(ctx)) == ["/m/dense"]
    assert sys.meta_path == before, "the waiting finder leaves once it has served"
    spec = sys.modules[serving_model.MODULE].__spec__
    assert type(spec).__name__ == "ModuleSpec"  # the module's spec is a plain one again


def test_hook_when_the_module_is_importing_up_the_stack(ctx: PatchContext, fake_sglang: Path,
                                                        dense_kernel: None) -> None:
    """What sglang does: its model_config imports layers that import sgl_kernel, so the
    patch applies while model_config's body runs, before ModelConfig exists."""
    inside = textwrap.dedent(f"""
        from sglang_shims.kernels.serving import serving_model
        serving_model.observe_models(sys.modules["{__name__}"].CTX)
    """)
    (fake_sglang / "model_config.py").write_text(FAKE_MODULE.format(inside=inside))
    global CTX
    CTX = ctx
    assert list(judged(ctx)) == ["/m/dense"]


def test_the_hook_is_undone_with_the_patch(ctx: PatchContext, model_config: Path,
                                           dense_kernel: None) -> None:
    before = list(sys.meta_path)
    serving_model.observe_models(ctx)
    journal.undo(ctx)
    assert sys.meta_path == before
    assert judged(ctx) == {}


def test_a_failing_import_is_stock_and_a_retry_is_judged(ctx: PatchContext, fake_sglang: Path,
                                                         dense_kernel: None) -> None:
    path = fake_sglang / "model_config.py"
    path.write_text(FAKE_MODULE.format(inside="raise RuntimeError('first try')"))
    serving_model.observe_models(ctx)
    import importlib

    with pytest.raises(RuntimeError, match="first try") as info:
        importlib.import_module(serving_model.MODULE)
    frames = [str(f.path) for f in info.traceback]
    assert not any(f.endswith(("kernels/serving/serving_model.py", "journal.py"))
                   for f in frames), frames
    path.write_text(FAKE_MODULE.format(inside=""))
    importlib.invalidate_caches()
    assert list(judged(ctx)) == ["/m/dense"]


def test_judging_never_breaks_sglang(ctx: PatchContext, model_config: Path,
                                     monkeypatch: pytest.MonkeyPatch,
                                     caplog: pytest.LogCaptureFixture) -> None:
    serving_model.observe_models(ctx)
    import importlib

    module = importlib.import_module(serving_model.MODULE)
    built = module.ModelConfig("/m/odd", object())  # no to_dict, no attributes
    assert built.model_path == "/m/odd"
    assert "could not judge" in caplog.text


CTX: PatchContext | None = None


# -- `sglang-shims status`: one line per model served, only from patches in effect ----------

def test_status_prints_one_line_per_model_and_json_has_it(tmp_path: Path) -> None:
    from sglang_shims.cli import status as cli_status

    verdict = {"architecture": "Qwen3MoeForCausalLM", "quantization": None,
               "families": ["dense", "MoE, softmax routing"],
               "ops": {"rmsnorm": "ours", "topk_softmax": "ours",
                       "moe_sum_reduce": "none: raises when called"},
               "would_fail": ["moe_sum_reduce"], "unsupported": []}

    def report(pid: int, state: str, models: dict[str, Any]) -> None:
        entry = {"state": state, "reason": "r", "details": {"models": models}}
        data = {"schema": 1, "process": {"pid": pid, "ppid": 1, "role": "scheduler",
                                         "origin": "pth", "argv": ["x"], "time": pid},
                "patches": {"sgl-kernel-triton-fallback": entry}}
        (tmp_path / f"{pid}.json").write_text(json.dumps(data))

    report(10, "applied", {"/m/moe": verdict})
    report(11, "applied", {"/m/moe": verdict})
    report(12, "reverted", {"/m/other": verdict})  # not in effect: never shown
    summary = cli_status.aggregate(tmp_path)
    lines = [line for line in summary.text().splitlines() if line.startswith("model ")]
    assert lines == ["model /m/moe (Qwen3MoeForCausalLM, quantization none) via"
                     " sgl-kernel-triton-fallback, pid 10, 11: WOULD FAIL at call:"
                     " moe_sum_reduce; ours: rmsnorm, topk_softmax"]
    assert summary.as_dict()["models"] == [{"patch": "sgl-kernel-triton-fallback",
                                            "model": "/m/moe", "verdict": verdict,
                                            "pids": [10, 11]}]


def test_waiting_for_model_config_imports_nothing() -> None:
    """Cheap at start-up: until sglang builds a config, the hook has loaded neither the
    op tables nor wrapt, and only one finder waits on sys.meta_path."""
    code = textwrap.dedent("""
        import json, sys, types
        from sglang_shims.catalog.validate import load_text
        from sglang_shims.engine.journal import PatchContext
        manifest = load_text(TEXT, "t")
        ctx = PatchContext(manifest, types.ModuleType("demo_kernel"))
        before = set(sys.modules)
        from sglang_shims.kernels.serving import serving_model
        finders = len(sys.meta_path)
        serving_model.observe_models(ctx)
        print(json.dumps({"new": sorted(set(sys.modules) - before),
                          "finders": len(sys.meta_path) - finders}))
    """).replace("TEXT", repr(TEXT))
    result = run_python(code, activate=False)
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert isinstance(data, dict)
    # no op tables, no wrapt; importlib's own modules are loaded by whoever asks first
    assert [m for m in data["new"] if m.partition(".")[0] != "importlib"] == [
        "sglang_shims.kernels", "sglang_shims.kernels.serving",
        "sglang_shims.kernels.serving.serving_model"]
    assert data["finders"] == 1
