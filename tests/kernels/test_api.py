"""The public surface of ``sglang_shims.kernels``: ``OPS`` has sgl-kernel's names and
Python signatures, importing it loads neither torch nor Triton (Triton on the first
kernel call), the ops still work without Triton, and every Triton source reads only
``tl.constexpr`` globals inside its kernels."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K

from ..support.kernels import triton_skip
from ..support.references import assert_close, randn, ref_rmsnorm
from ..support.run import REPO

NO_TRITON = triton_skip()


E = inspect.Parameter.empty


SGL_SIGNATURES: dict[str, list[tuple[str, object]]] = {
    "rmsnorm": [("input", E), ("weight", E), ("eps", 1e-6), ("out", None),
                ("enable_pdl", None)],
    "fused_add_rmsnorm": [("input", E), ("residual", E), ("weight", E), ("eps", 1e-6),
                          ("enable_pdl", None)],
    "gemma_rmsnorm": [("input", E), ("weight", E), ("eps", 1e-6), ("out", None),
                      ("enable_pdl", None)],
    "gemma_fused_add_rmsnorm": [("input", E), ("residual", E), ("weight", E), ("eps", 1e-6),
                                ("enable_pdl", None)],
    "silu_and_mul": [("input", E), ("out", None)],
    "gelu_and_mul": [("input", E), ("out", None)],
    "gelu_tanh_and_mul": [("input", E), ("out", None)],
    "apply_rope_with_cos_sin_cache_inplace": [
        ("positions", E), ("query", E), ("key", E), ("head_size", E), ("cos_sin_cache", E),
        ("is_neox", True), ("fused_set_kv_buffer_arg", None), ("enable_pdl", None)],
    "topk_softmax": [("topk_weights", E), ("topk_ids", E), ("gating_output", E),
                     ("renormalize", False), ("moe_softcapping", 0.0),
                     ("correction_bias", None)],
    # MoE plumbing and FP8; the last moe_align_block_size parameter is the ninth argument
    # sglang 0.5.17 passes positionally (not in sgl-kernel 0.3.18)
    "moe_align_block_size": [("topk_ids", E), ("num_experts", E), ("block_size", E),
                             ("sorted_token_ids", E), ("experts_ids", E),
                             ("num_tokens_post_pad", E), ("cumsum_buffer", E),
                             ("pad_sorted_token_ids", False),
                             ("ignore_invalid_experts", False)],
    "moe_sum_reduce": [("input_tensor", E), ("output_tensor", E),
                       ("routed_scaling_factor", 0)],
    "moe_sum": [("input_tensor", E), ("output_tensor", E)],
    **{name: [("input", E), ("output_q", E), ("output_s", E), ("group_size", E), ("eps", E),
              ("fp8_min", E), ("fp8_max", E), ("scale_ue8m0", False),
              ("fuse_silu_and_mul", False), ("masked_m", None), ("enable_v2", None)]
       for name in ("sgl_per_token_group_quant_8bit", "sgl_per_token_group_quant_fp8")},
    "sgl_per_token_quant_fp8": [("input", E), ("output_q", E), ("output_s", E)],
    "sgl_per_tensor_quant_fp8": [("input", E), ("output_q", E), ("output_s", E),
                                 ("is_static", E)],
    "fp8_scaled_mm": [("mat_a", E), ("mat_b", E), ("scales_a", E), ("scales_b", E),
                      ("out_dtype", E), ("bias", None)],
    "fp8_blockwise_scaled_mm": [("mat_a", E), ("mat_b", E), ("scales_a", E), ("scales_b", E),
                                ("out_dtype", E)],
    # sgl-kernel 0.3.x's order; the two keywords newer kernels take (sglang 0.5.16+ passes
    # them by name) come last, keyword-only
    "moe_fused_gate": [("input_tensor", E), ("bias", E), ("num_expert_group", E),
                       ("topk_group", E), ("topk", E), ("num_fused_shared_experts", 0),
                       ("routed_scaling_factor", 0),
                       ("apply_routed_scaling_factor_on_output", False),
                       ("renormalize", True), ("scoring_func", "sigmoid")],
}


def test_ops_registry_matches_sgl_kernel_signatures() -> None:
    assert set(K.OPS) == set(SGL_SIGNATURES)
    for name, params in SGL_SIGNATURES.items():
        fn = K.OPS[name]
        assert fn is getattr(K, name)
        got = [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]
        assert got == params, name


def test_import_is_lazy() -> None:
    """Importing the package (and reading OPS's keys, asking it for a name, listing it)
    imports neither torch nor triton."""
    code = ("import sys, sglang_shims.kernels as k; list(k.OPS); "
            "print('rmsnorm' in k.OPS, 'no_such_op' in k.OPS, set(k.__all__) <= set(dir(k)), "
            "'torch' in sys.modules, 'triton' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout.split()
    assert out == ["True", "False", "True", "False", "False"]


@pytest.mark.skipif(bool(NO_TRITON), reason=NO_TRITON or "-")
def test_triton_imported_only_on_first_kernel_use() -> None:
    """One child (torch's import is most of its time): an op looked up leaves Triton
    unimported, the op run imports it (the interpreter is switched on before the first
    kernel is defined, which is all Triton asks)."""
    code = ("import os, sys, torch, sglang_shims.kernels as k; k.OPS['rmsnorm']; "
            "print('triton' in sys.modules); os.environ['TRITON_INTERPRET'] = '1'; "
            "k.rmsnorm(torch.randn(2, 16), torch.randn(16)); print('triton' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout.split()
    assert out == ["False", "True"]


def test_torch_path_without_triton(gen: torch.Generator, monkeypatch: pytest.MonkeyPatch) -> None:
    """When ``import triton`` fails the ops still work, through plain torch."""
    from sglang_shims.kernels import runtime

    monkeypatch.setattr(runtime, "triton_available", lambda: False)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("SGLANG_SHIMS_KERNEL_BACKEND", raising=False)
    x = randn(gen, 3, 64)
    w = randn(gen, 64)
    assert not runtime.use_triton(x)
    assert_close(K.rmsnorm(x, w), ref_rmsnorm(x, w, 1e-6, False), torch.float32, "rmsnorm")


def test_kernels_read_only_constexpr_globals() -> None:
    """A module-level value a ``@triton.jit`` function reads must be ``tl.constexpr``: the
    GPU compiler refuses anything else, while Triton's CPU interpreter (where CI runs the
    kernels) lets it through -- the first GPU run of moe_fused_gate's kernel failed so."""
    folder = Path(K.__file__).parent / "ops"
    offenders = []
    for path in sorted(folder.glob("*/triton.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        plain = {t.id for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
                 for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                 if isinstance(t, ast.Name) and not (
                     isinstance(node.value, ast.Call)
                     and ast.unparse(node.value.func).endswith("constexpr"))}
        for fn in tree.body:
            if isinstance(fn, ast.FunctionDef) and any(
                    ast.unparse(d).endswith("jit") for d in fn.decorator_list):
                read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)
                        and isinstance(n.ctx, ast.Load)}
                offenders += [f"{path.parent.name}/{path.name}:{fn.name} reads {name}"
                              for name in read & plain]
    assert not offenders, offenders
