"""The hybrid kernel tier (``kernels.serving.hybrid``): the real kernel for every op it has,
an adapter or our kernel for the ops it dropped, a raising proxy for the rest, each choice
reported.

* Every (sglang 0.5.1-0.5.9 release, kernel 0.3.18-0.4.10) pair of the data: the
  provider of each name the patch reports and binds, against rules written here from
  the kernels' history (not from the routing code), and one pair, sglang 0.5.1 on
  sglang-kernel 0.4.5, spelled out by hand.
* The adapter on CPU tensors: the real kernel's successor gets the call exactly where
  its result is sglang's (float32, no fused KV write); elsewhere ours, checked against
  a rotation computed here.
* Real sglang wheels with stand-in kernels (their export surface, CUDA builds): the
  serving graph imports with the shims and not without, status() carries the table,
  and sglang's own RotaryEmbedding runs through the route chosen.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from sglang_shims import kernels as K
from sglang_shims.catalog.validate import load_text
from sglang_shims.engine import journal
from sglang_shims.engine.gates import Environment
from sglang_shims.engine.journal import PatchContext
from sglang_shims.engine.proxy import OptionalSymbol
from sglang_shims.kernels.serving import hybrid
from sglang_shims.kernels.surface import symbols
from sglang_shims.testing import standin

from ..support.run import REPO, need, run_python
from ..support.scripts import load_script
from ..support.stacks import IMPORT_EACH

PATCH = REPO / "patches" / "sgl-kernel-missing-symbols"
OUR_OPS = {"rmsnorm", "fused_add_rmsnorm", "gemma_rmsnorm", "gemma_fused_add_rmsnorm",
           "silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul", "topk_softmax",
           "apply_rope_with_cos_sin_cache_inplace", "FusedSetKVBufferArg",
           # MoE alignment/reduction, FP8 activation quantisation and matmuls, the gate
           "moe_align_block_size", "moe_sum", "moe_sum_reduce",
           "sgl_per_token_group_quant_fp8", "sgl_per_token_group_quant_8bit",
           "sgl_per_token_quant_fp8", "sgl_per_tensor_quant_fp8",
           "fp8_scaled_mm", "fp8_blockwise_scaled_mm", "moe_fused_gate"}
# sgl_kernel_history.md 3.1: re-exported from 0.4.3 on MUSA builds only; a CUDA build lacks them
MUSA_ONLY_FROM_040 = ("min_p_sampling_from_probs", "top_k_top_p_sampling_from_probs")


def _patch() -> types.ModuleType:
    return load_script(f"{PATCH.relative_to(REPO)}/patch.py", "missing_symbols_hybrid")


def cuda_surface(kernel: str) -> set[str]:
    names = {n for n in standin.surface(kernel)[0] if not n.startswith("*")}
    if Version(kernel) >= Version("0.4.0"):
        names -= set(MUSA_ONLY_FROM_040)
    return names


def _calls(name: str) -> Callable[..., Any]:
    def kernel_fn(*args: Any) -> tuple[str, tuple[Any, ...]]:
        return name, args

    return kernel_fn


def kernel_module(kernel: str) -> types.ModuleType:
    module = types.ModuleType("sgl_kernel")
    for name in cuda_surface(kernel):
        setattr(module, name, _calls(name))
    return module


_APPLIED: list[PatchContext] = []


@pytest.fixture(autouse=True)
def _undo_applied() -> Iterator[None]:
    """Undo every application of a test (the torch ops it may define are process-wide)."""
    yield
    while _APPLIED:
        assert journal.undo(_APPLIED.pop()) == []


def applied(sglang: str, kernel: str) -> tuple[types.ModuleType, PatchContext]:
    module = kernel_module(kernel)
    manifest = load_text((PATCH / "manifest.toml").read_text(), str(PATCH), PATCH)
    dist = standin.dist_name(kernel)
    ctx = PatchContext(manifest, module,
                       Environment({"sglang": sglang, dist: kernel}, hermetic=True))
    _APPLIED.append(ctx)
    try:
        _patch().apply(ctx)
    except Exception as exc:  # Retired: nothing missing
        assert "binds every name" in str(exc), exc
    return module, ctx


def _between(versions: list[str], low: str, high: str) -> list[str]:
    return [v for v in versions if "+" not in v and Version(low) <= Version(v) <= Version(high)]


SGLANGS = _between(symbols.load()["releases"], "0.5.1", "0.5.9")
KERNELS = _between(standin.versions(), "0.3.18", "0.4.10")


# sgl-kernel's norm and gated-activation kernels dispatch float16/bfloat16 only (0.4.5 on
# the H200: "failed to dispatch data type Float"): where the patch acts, float32 goes to ours.
HALF_ONLY_NORMS = {"rmsnorm", "fused_add_rmsnorm", "gemma_rmsnorm", "gemma_fused_add_rmsnorm",
                   "silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul"}


def expected(name: str, kernel: str, hybrid: bool = False) -> str:
    """The provider, from the kernels' history: rotary_embedding exists from 0.3.18.post3.
    ``hybrid``: ours or an adapter serves some name of the pair."""
    if name in cuda_surface(kernel):
        if hybrid and name in HALF_ONLY_NORMS:
            return "real kernel (float16/bfloat16); ours (float32"
        return "real kernel"
    if name == "fused_marlin_moe":
        return "none: patch sgl-kernel-fused-marlin-moe"
    if name == "apply_rope_with_cos_sin_cache_inplace" and \
            Version(kernel) >= Version("0.3.18.post3"):
        return "adapter"
    return "ours" if name in OUR_OPS else "none"


def test_every_pair_routes_each_name() -> None:
    assert len(SGLANGS) >= 25 and len(KERNELS) >= 20, (SGLANGS, KERNELS)
    differing = 0
    for kernel in KERNELS:
        for sglang in SGLANGS:
            module, ctx = applied(sglang, kernel)
            table = ctx.details.get("kernel_ops", {})
            needed = set(symbols.needed(sglang) or ())
            if not table:
                assert needed <= cuda_surface(kernel) | {"fused_marlin_moe"}, (sglang, kernel)
                continue
            differing += 1
            assert set(table) == needed, (sglang, kernel)
            serving = any(expected(n, kernel) in ("adapter", "ours") for n in needed)
            for name, label in table.items():
                want = expected(name, kernel, serving)
                assert label.split(":")[0] == want.split(":")[0], (sglang, kernel, name, label)
                if want.startswith("none: patch"):
                    assert label == want and not hasattr(module, name)  # the other patch's
                    continue
                bound = getattr(module, name)
                if want == "ours":
                    assert not isinstance(bound, OptionalSymbol), name
                    assert bound.__module__.startswith("sglang_shims.kernels"), bound
                elif want == "none":
                    assert isinstance(bound, OptionalSymbol), name
                elif want == "adapter":
                    assert bound.__module__ == "sgl_kernel" and bound.__name__ == name
                elif want.startswith("real kernel ("):  # float32 to ours, the rest the kernel's
                    assert bound.__wrapped__.__name__ == "kernel_fn", bound
    assert differing > 300  # pairs across the 0.4.0 slimming, the 0.4.5 and 0.4.7 cuts


def test_sglang_051_on_sglang_kernel_045() -> None:
    """sglang 0.5.1 on sglang-kernel 0.4.5, by hand: the 15 names the kernel dropped plus
    the two MUSA-only sampling names."""
    _, ctx = applied("0.5.1", "0.4.5")
    table = {k: v.split(":")[0] for k, v in ctx.details["kernel_ops"].items()
             if not v.startswith("real kernel")}
    none = {"awq_marlin_moe_repack", "awq_marlin_repack", "cutlass_fp4_group_mm",
            "cutlass_scaled_fp4_mm", "dsv3_router_gemm",
            "gptq_marlin_gemm", "gptq_marlin_repack",
            "scaled_fp4_experts_quant", "scaled_fp4_quant",
            "fused_marlin_moe", *MUSA_ONLY_FROM_040}
    assert table == {"apply_rope_with_cos_sin_cache_inplace": "adapter",
                     "FusedSetKVBufferArg": "ours", "sgl_per_tensor_quant_fp8": "ours",
                     "fp8_blockwise_scaled_mm": "ours", "moe_fused_gate": "ours",
                     **dict.fromkeys(none, "none")}
    assert ctx.details["kernel_ops"]["topk_softmax"] == "real kernel"
    for name in ("rmsnorm", "silu_and_mul"):
        assert ctx.details["kernel_ops"][name].startswith("real kernel (float16/bfloat16); ours")


def test_float32_goes_to_ours_only_for_the_half_only_names_sglang_needs_and_the_kernel_has(
        ) -> None:
    """Of the half-only names, only one sglang imports, the kernel binds and ours has is
    widened, and only where ours or an adapter already serves some name."""
    needed = ["rmsnorm", "gelu_and_mul", "topk_softmax", "moe_fused_gate"]
    exported = {"rmsnorm", "silu_and_mul", "topk_softmax"}
    routes = hybrid.plan(needed, exported)
    assert routes["moe_fused_gate"].provider == hybrid.OURS
    assert hybrid.widened(needed, routes, exported) == ["rmsnorm"]
    assert hybrid.widened(needed, hybrid.plan(["rmsnorm"], exported), exported) == []


def test_a_half_only_wrapper_looks_like_the_kernels_function() -> None:
    """What sglang (and a traceback) sees of the wrapper: the kernel's name and module, the
    kernel function behind it; float32 goes to ours, anything else to the kernel."""
    def rmsnorm(*args: Any, **kwargs: Any) -> str:
        return "kernel"

    wrapper = hybrid.half_only(rmsnorm, lambda *args, **kwargs: "ours")
    assert (wrapper.__name__, wrapper.__qualname__, wrapper.__module__) == \
        ("rmsnorm", "rmsnorm", "sgl_kernel")
    assert wrapper.__wrapped__ is rmsnorm
    assert wrapper(types.SimpleNamespace(dtype="torch.float32")) == "ours"
    assert wrapper(input=types.SimpleNamespace(dtype="torch.float32")) == "ours"
    assert wrapper(types.SimpleNamespace(dtype="torch.bfloat16")) == "kernel"


def test_an_ours_route_binds_our_op_and_a_real_one_nothing() -> None:
    from sglang_shims.kernels.ops.rope import FusedSetKVBufferArg

    for name, want in (("rmsnorm", K.OPS["rmsnorm"]),
                       ("FusedSetKVBufferArg", FusedSetKVBufferArg)):
        chosen = hybrid.route(name, set())
        assert chosen.provider == hybrid.OURS
        assert hybrid.implementation(name, chosen, None) is want
    with pytest.raises(ValueError, match="no implementation for provider"):
        hybrid.implementation("rmsnorm", hybrid.route("rmsnorm", {"rmsnorm"}), None)


@pytest.mark.parametrize("half", ["bfloat16", "float16"])
def test_float32_norms_go_to_ours_half_types_to_the_kernel(half: str) -> None:
    """The real kernel rejects float32 norms; where the patch acts, ours computes them
    (checked against RMSNorm in float64 here) and both half types still reach the kernel,
    for every norm and gated activation it serves only in half types."""
    need("torch")
    import torch

    module, ctx = applied("0.5.1", "0.4.5")
    x = torch.randn(3, 64, generator=torch.Generator().manual_seed(1))
    w = torch.rand(64, generator=torch.Generator().manual_seed(2)) + 0.5
    got = module.rmsnorm(x, w, 1e-6)
    x64 = x.double()
    want = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
    assert torch.allclose(got.double(), want, atol=1e-5)
    dtype = getattr(torch, half)
    for name in sorted(HALF_ONLY_NORMS):  # the fake kernel answers with its own name
        assert getattr(module, name)(x.to(dtype), w.to(dtype))[0] == name, (name, half)
        assert getattr(module, name).__wrapped__.__name__ == "kernel_fn", name
    assert any("float32 calls of" in note for note in ctx.notes), ctx.notes
    assert journal.undo(ctx) == [] and module.rmsnorm(x, w, 1e-6)[0] == "rmsnorm"  # undone: stock
    _APPLIED.remove(ctx)


def test_a_matching_pair_keeps_the_stock_float32_error() -> None:
    """sglang 0.5.17 on its pinned 0.4.5: only two MUSA-only names are proxied, ours serves
    nothing, so the kernel's norms stay the kernel's own (float32 error included)."""
    module, ctx = applied("0.5.17", "0.4.5")
    ops = ctx.details["kernel_ops"]
    assert {v for v in ops.values() if not v.startswith("real kernel")} == {"none"}
    assert ops["fused_add_rmsnorm"] == "real kernel"
    assert module.fused_add_rmsnorm("x")[0] == "fused_add_rmsnorm"


# -- the adapter and ours, on CPU tensors -----------------------------------------------


def _reference(x: Any, cache: Any, pos: Any, head: int) -> Any:
    """NeoX rotation in float64: x[..., :r/2], x[..., r/2:r] rotated, the rest kept."""
    import torch

    x3 = x.double().view(x.shape[0], -1, head)
    rot = cache.shape[1]
    cos, sin = (t.double()[:, None, :] for t in cache[pos].chunk(2, dim=-1))
    a, b = x3[..., :rot // 2], x3[..., rot // 2:rot]
    return torch.cat((a * cos - b * sin, b * cos + a * sin, x3[..., rot:]), -1).view(x.shape)


def _inputs(dtype: Any) -> tuple[Any, ...]:
    import torch

    g = torch.Generator().manual_seed(0)
    tokens, head = 5, 64
    q = torch.randn(tokens, 4 * head, generator=g).to(dtype)
    k = torch.randn(tokens, 2 * head, generator=g).to(dtype)
    cache = torch.randn(32, 48, generator=g)  # partial rotary: 48 of 64, fp32 as sglang's
    pos = torch.tensor([0, 3, 7, 31, 2], dtype=torch.int32)
    return pos, q, k, head, cache


def test_adapter_calls_the_real_kernel_where_exact() -> None:
    need("torch")
    import torch

    module, _ = applied("0.5.1", "0.4.5")
    rope = module.apply_rope_with_cos_sin_cache_inplace
    seen: list[tuple[Any, ...]] = []
    module.rotary_embedding = lambda *a: seen.append(a)  # adapter looked it up at bind time
    pos, q, k, head, cache = _inputs(torch.float32)
    rope(pos, q, k, head, cache, is_neox=True)
    assert seen == [], "the adapter must call the kernel's function it was built with"

    calls: list[tuple[Any, ...]] = []
    adapter = hybrid.rope_adapter(lambda *a: calls.append(a), _never)
    adapter(pos, q, k, head, cache, False)
    [(p, qq, kk, hh, cc, neox)] = calls
    assert p.dtype == torch.int64 and p.tolist() == pos.tolist()
    assert qq is q and kk is k and hh == head and cc is cache and neox is False
    with pytest.raises(ValueError, match="float32"):
        adapter(pos, q, k, head, cache.half(), True)


def _never(*args: Any) -> None:
    raise AssertionError("the fallback must not run for float32 without a fused KV write")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_adapter_uses_ours_where_the_kernel_differs(dtype: str) -> None:
    need("torch")
    import torch

    module, _ = applied("0.5.1", "0.4.5")
    pos, q, k, head, cache = _inputs(getattr(torch, dtype))
    want_q, want_k = _reference(q, cache, pos.long(), head), _reference(k, cache, pos.long(), head)
    module.apply_rope_with_cos_sin_cache_inplace(pos, q, k, head, cache, True)
    tol = 1e-2 if dtype == "bfloat16" else 2e-3
    torch.testing.assert_close(q.double(), want_q, atol=tol * 4, rtol=tol)
    torch.testing.assert_close(k.double(), want_k, atol=tol * 4, rtol=tol)


def test_fused_kv_write_goes_to_ours() -> None:
    need("torch")
    import torch

    module, _ = applied("0.5.1", "0.4.5")
    pos, q, k, head, cache = _inputs(torch.float32)
    v = torch.arange(k.numel(), dtype=torch.float32).view_as(k)
    kb, vb = torch.zeros(10, k.shape[1]), torch.zeros(10, k.shape[1])
    loc = torch.tensor([9, 1, 4, 0, 6])
    arg = module.FusedSetKVBufferArg(value=v, k_buffer=kb, v_buffer=vb, k_scale=None,
                                     v_scale=None, cache_loc=loc)
    want_k = _reference(k, cache, pos.long(), head)
    module.apply_rope_with_cos_sin_cache_inplace(pos, q, k, head, cache, True, arg)
    torch.testing.assert_close(kb[loc].double(), want_k, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(vb[loc], v)


def test_doctor_says_what_the_patch_does() -> None:
    """The doctor's table (from data) and the patch's (from the live module) agree."""
    from sglang_shims.cli.doctor import rules
    from sglang_shims.cli.doctor.facts import Facts
    from sglang_shims.engine.gates import Environment

    rule = next(r for r in rules.RULES if r.id == "sgl-kernel-hybrid-ops")
    for sglang, kernel in [("0.5.1", "0.4.5"), ("0.5.5.post3", "0.4.0"), ("0.5.9", "0.4.10")]:
        env = Environment(versions={"sglang": sglang, standin.dist_name(kernel): kernel},
                          capabilities=[], hermetic=True)
        finding = rule.evaluate(Facts(env=env))
        assert finding is not None and finding.level == "warn", finding
        _, ctx = applied(sglang, kernel)
        for name, label in ctx.details["kernel_ops"].items():
            if label == "real kernel" or name == "fused_marlin_moe":
                assert f" {name}: " not in finding.detail, (name, finding.detail)
            else:
                assert f" {name}: {label}" in finding.detail, (name, label, finding.detail)
    env = Environment(versions={"sglang": "0.5.1", "sglang-kernel": "0.4.5"},
                      capabilities=[], hermetic=True)
    off = rule.evaluate(Facts(env=env, environ={"SGLANG_SHIMS_DISABLE":
                                                "sgl-kernel-missing-symbols"}))
    assert off is not None and off.level == "fail" and "ImportError" in off.detail


# -- real sglang wheels, stand-in kernels ----------------------------------------------

GRAPH = IMPORT_EACH + """
out = {"results": results}
try:
    import sglang_shims
    entry = sglang_shims.status()["sgl-kernel-missing-symbols"]
    out["state"], out["ops"] = entry["state"], entry["details"].get("kernel_ops", {})
    import types
    import sglang.srt.layers.rotary_embedding as rotary
    from sglang.srt.layers.rotary_embedding import get_rope
    if hasattr(rotary, "get_global_server_args"):  # sglang >= 0.5.5 reads the server's args
        rotary.get_global_server_args = lambda: types.SimpleNamespace(rl_on_policy_target=None)
    rope = get_rope(64, 64, 128, 10000, True, dtype=torch.bfloat16)  # 0.5.5: fp32 -> vllm
    for dtype in ("bfloat16", "float32"):
        pos = torch.tensor([0, 5, 9])
        q = torch.randn(3, 4 * 64).to(getattr(torch, dtype))
        k = torch.randn(3, 2 * 64).to(getattr(torch, dtype))
        want_q, want_k = rope.forward_native(pos, q.clone(), k.clone())
        try:
            got_q, got_k = rope.forward_cuda(pos, q.clone(), k.clone())
            out[dtype] = float((got_q.float() - want_q.float()).abs().max())
        except NotImplementedError as exc:
            out[dtype] = str(exc)
except BaseException as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""
SERVING = ["sglang.srt.entrypoints.http_server", "sglang.srt.managers.scheduler",
           "sglang.srt.model_executor.model_runner", "sglang.srt.layers.rotary_embedding",
           "sglang.srt.layers.sampler", "sglang.srt.layers.moe.topk",
           "sglang.srt.models.llama", "sglang.srt.models.qwen3", "sglang.srt.models.gpt_oss"]
PAIRS = [("0.5.1", "0.4.5"), ("0.5.1", "0.4.10"), ("0.5.5.post3", "0.4.5")]


@pytest.mark.wheels
@pytest.mark.parametrize(("sglang", "kernel"), PAIRS)
def test_serving_graph_on_a_newer_kernel(sglang: str, kernel: str,
                                         sglang_release: Callable[[str], Path],
                                         standin_kernel: Callable[..., Path]) -> None:
    for module in ("torch", "transformers", "fastapi", "zmq"):
        need(module)
    drop = MUSA_ONLY_FROM_040 if Version(kernel) >= Version("0.4.0") else ()
    paths = (sglang_release(sglang), standin_kernel(kernel, drop=drop))
    code = GRAPH.replace("MODULES", repr(SERVING))
    stock = run_python(code, paths=paths, timeout=600, env={"SGLANG_SHIMS": "0"}, fork=True)
    failed = {k: v for k, v in json.loads(stock.stdout.splitlines()[-1])["results"].items()
              if v != "ok"}
    assert "sglang.srt.layers.rotary_embedding" in failed, stock.stdout[-2000:]
    fixed = run_python(code, paths=paths, timeout=600, fork=True)
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    data = json.loads(fixed.stdout.splitlines()[-1])
    assert "error" not in data, data.get("error")
    assert {k: v for k, v in data["results"].items() if v != "ok"} == {}
    assert data["state"] == "applied"
    ops = data["ops"]
    assert ops["apply_rope_with_cos_sin_cache_inplace"].startswith("adapter: sgl_kernel."
                                                                   "rotary_embedding")
    assert ops["topk_softmax"] == "real kernel"
    assert ops["rmsnorm"].startswith("real kernel (float16/bfloat16); ours (float32")
    assert ops["silu_and_mul"] == ops["rmsnorm"]
    assert ops["FusedSetKVBufferArg"].startswith("ours")
    # bf16: sglang's own RotaryEmbedding served by our kernel, as forward_native computes it
    assert isinstance(data["bfloat16"], float) and data["bfloat16"] < 0.07, data
    # float32: handed to the real kernel's rotary_embedding (a stub in the stand-in)
    assert "rotary_embedding is a stub" in str(data["float32"]), data


def test_routing_imports_neither_torch_nor_triton() -> None:
    """The patch runs when sgl_kernel is imported; binding ours or the adapter must not
    pull torch or triton into a process whose kernel did not (a stand-in without torch)."""
    code = f"""
        import sys, types
        from {__name__} import applied
        module, ctx = applied("0.5.1", "0.4.5")
        assert ctx.details["kernel_ops"]["FusedSetKVBufferArg"].startswith("ours")
        print(sorted(m for m in ("torch", "triton") if m in sys.modules))
    """
    result = run_python(code, activate=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout


def test_missing_functions_get_schema_only_torch_ops() -> None:
    """sglang 0.5.5+ registers fakes for sgl_kernel::sgl_per_tensor_quant_fp8 (and 0.5.9
    for moe_fused_gate) at import; on 0.4.5 they do not exist.  Defined by the patch
    (torch already imported, as the real kernel does), removed by its undo."""
    need("torch")
    import torch

    name = "sgl_per_tensor_quant_fp8"
    assert not hasattr(torch.ops.sgl_kernel, name)
    _, ctx = applied("0.5.5.post3", "0.4.5")
    assert hasattr(torch.ops.sgl_kernel, name)
    torch.library.register_fake(f"sgl_kernel::{name}")(lambda *a: None)  # what sglang does
    assert journal.undo(ctx) == []
    assert not hasattr(torch.ops.sgl_kernel, name)


MOE_FP8_OPS = ("moe_align_block_size", "moe_sum", "moe_sum_reduce", "sgl_per_token_group_quant_fp8",
           "sgl_per_token_group_quant_8bit", "sgl_per_token_quant_fp8",
           "sgl_per_tensor_quant_fp8", "fp8_scaled_mm", "fp8_blockwise_scaled_mm",
           "moe_fused_gate")


def test_moe_and_fp8_ops_are_served() -> None:
    """The fallback binds them (kernels.OPS) and the hybrid tier routes missing ones to us."""
    for name in MOE_FP8_OPS:
        assert K.OPS[name] is getattr(K, name)
        assert K.OPS[name].__module__.startswith("sglang_shims.kernels.ops.")
        assert hybrid.route(name, exported=set()).provider == hybrid.OURS
        assert hybrid.route(name, exported={name}).provider == hybrid.REAL
