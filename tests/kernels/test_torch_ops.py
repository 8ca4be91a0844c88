"""Our ops as ``torch.ops`` under sgl-kernel's schemas (``kernels.standin.torch_ops``):
the schema strings parse, registering defines each op once and runs ours, and an op that
already exists keeps its kernel (a schema without kernels gets ours added)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K

from ..support.references import (
    assert_close,
    check_topk,
    nan_like,
    randn,
    ref_act,
    ref_rmsnorm,
    ref_rope,
    ref_topk,
    rope_inputs,
)


def test_schema_strings_parse() -> None:
    from sglang_shims.kernels.standin.torch_ops import SCHEMAS

    assert set(SCHEMAS) == {"0.3.5", "0.3.18"}
    for table in SCHEMAS.values():
        for name, schema in table.items():
            parsed = torch._C.parse_schema(f"sgl_kernel::{schema}")
            assert parsed.name == f"sgl_kernel::{name}"
    rope = torch._C.parse_schema("x::" + SCHEMAS["0.3.18"]["apply_rope_pos_ids_cos_sin_cache"])
    assert [a.name for a in rope.arguments][7] == "enable_pdl"


def test_register_torch_ops(gen: torch.Generator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_SHIMS_KERNEL_BACKEND", "torch")
    ns = "sglang_shims_kernels_test"
    first = K.register_torch_ops(ns)
    assert set(first.values()) == {"defined"}, first
    assert set(K.register_torch_ops(ns).values()) == {"ours"}, "second call must be a no-op"
    ops = getattr(torch.ops, ns)
    x = randn(gen, 4, 32)
    r = randn(gen, 4, 32)
    w = randn(gen, 32)
    out = nan_like(x)
    ops.rmsnorm(out, x, w, 1e-6, False)
    assert_close(out, ref_rmsnorm(x, w, 1e-6, False), torch.float32, "torch.ops rmsnorm")
    total = x.double() + r.double()
    ops.gemma_fused_add_rmsnorm(x, r, w, 1e-6, False)
    assert_close(x, ref_rmsnorm(total, w, 1e-6, True), torch.float32, "torch.ops gemma fused")
    act_in = randn(gen, 3, 20)
    act_out = torch.full((3, 10), float("nan"))
    ops.gelu_tanh_and_mul(act_out, act_in)
    assert_close(act_out, ref_act(act_in, "gelu_tanh"), torch.float32, "torch.ops gelu_tanh")
    q, k, cache, pos = rope_inputs(gen, "cpu", torch.float32, 3, 2, 1, 32, 32)
    ref_q = ref_rope(q, pos, cache, 32, False)
    q3, k3 = q.view(3, 2, 32), k.view(3, 1, 32)
    ops.apply_rope_pos_ids_cos_sin_cache(q3, k3, q3, k3, cache, pos, True, False,
                                         None, None, None, None)
    assert_close(q, ref_q, torch.float32, "torch.ops rope")
    logits = randn(gen, 4, 16)
    tw = torch.full((4, 2), float("nan"))
    ti = torch.full((4, 2), -1, dtype=torch.int32)
    ops.topk_softmax(tw, ti, logits, True, 0.0, None)
    p, ref_w = ref_topk(logits, 2, True)
    check_topk(tw, ti, p, ref_w, True)


def test_register_torch_ops_leaves_existing_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    ns = "sglang_shims_kernels_test_existing"
    lib = torch.library.Library(ns, "DEF")
    lib.define("rmsnorm(Tensor! output, Tensor input, Tensor weight, float eps, "
               "bool enable_pdl) -> ()")

    def theirs(output: torch.Tensor, input: torch.Tensor, weight: torch.Tensor, eps: float,
               enable_pdl: bool) -> None:
        output.fill_(7.0)

    lib.impl("rmsnorm", theirs, "CPU")
    lib.define("silu_and_mul(Tensor! out, Tensor input, int extra) -> ()")
    lib.define("gelu_and_mul(Tensor! out, Tensor input) -> ()")  # schema only, no kernels
    result = K.register_torch_ops(ns, dispatch_keys=("CPU",))
    assert result["rmsnorm"] == "exists"
    assert result["silu_and_mul"] == "exists-other-schema"
    assert result["gelu_and_mul"] == "kernels-added:CPU"
    assert result["topk_softmax"] == "defined"
    out = torch.zeros(2, 4)
    getattr(torch.ops, ns).rmsnorm(out, torch.ones(2, 4), torch.ones(4), 1e-6, False)
    assert (out == 7.0).all(), "an existing kernel must not be replaced"
    x = torch.randn(2, 8)
    y = torch.empty(2, 4)
    getattr(torch.ops, ns).gelu_and_mul(y, x)
    assert_close(y, ref_act(x, "gelu"), torch.float32, "added kernel")
    with pytest.raises(ValueError, match="schema_version"):
        K.register_torch_ops(ns, schema_version="9.9")
    del lib
