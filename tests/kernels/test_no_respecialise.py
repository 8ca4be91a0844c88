"""No kernel compiles again because the token count changed.

Triton compiles an integer argument's kernel up to three times: for the value 1, for a
multiple of 16, and for anything else.  The token count changes with every prefill, so a
kernel specialised on it compiles in the middle of serving whenever a prompt length falls
into a class that warm-up did not see -- the H200 counted one such compilation inside the
timed work of a 0.5.1 speed run on 2026-12-02.  Every kernel therefore marks its token
counts (and what is derived from them) ``do_not_specialize``.

Checked twice: on any machine, every ``@triton.jit`` kernel of ours with a parameter of
those names marks it (the rule, by parameter name, so a new kernel is held to it too); on
a GPU, each op run at 17, 31 and 32 tokens (then 65, 80 and 100) compiles each of its
kernels at most once per group.  The groups are where no wrapper changes its launch
configuration (that is a new kernel by design: decode- and prefill-sized tiles, row
tiles sized to the token count, which is also why the value 1 is in no group) and each
holds a multiple of 16 and two other counts, two of Triton's integer classes.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from ..support.align import align_buffers
from ..support.kernels import has_cuda, kernel_modules, triton_skip

HAS_CUDA = has_cuda()
KERNEL_MODULES = kernel_modules()
NO_TRITON = triton_skip()

# Parameter names that carry a token count or a size derived from it, in our kernels.
TOKEN_COUNTS = frozenset({"n_rows", "M", "n_groups", "n", "numel", "n_sorted",
                          "n_expert_ids", "fill_per_program", "n_chunks"})


def _kernels() -> dict[str, Any]:
    """Every launchable ``@triton.jit`` function of ours (not the helpers they call)."""
    found = {}
    for name in KERNEL_MODULES:
        module = importlib.import_module(f"sglang_shims.kernels.{name}")
        for attr, value in vars(module).items():
            if attr.endswith("_kernel") and hasattr(value, "arg_names"):
                found[f"{name}.{attr}"] = value
    return found


def _unspecialised(kernel: Any) -> set[str]:
    """The names a kernel marks ``do_not_specialize`` (compiled or interpreted form)."""
    marked = getattr(kernel, "do_not_specialize", None)
    if marked is None:  # Triton's interpreter keeps the decorator's arguments instead
        marked = getattr(kernel, "kwargs", {}).get("do_not_specialize") or []
    return {kernel.arg_names[m] if isinstance(m, int) else m for m in marked}


@pytest.mark.skipif(bool(NO_TRITON), reason=NO_TRITON or "-")
def test_every_token_count_parameter_is_not_specialised() -> None:
    kernels = _kernels()
    assert len(kernels) >= 15, sorted(kernels)  # the search itself found our kernels
    missing = {name: sorted(TOKEN_COUNTS & set(k.arg_names) - _unspecialised(k))
               for name, k in kernels.items()}
    assert {n: m for n, m in missing.items() if m} == {}
    # and the rule has something to hold: most kernels take a token count
    assert sum(bool(TOKEN_COUNTS & set(k.arg_names)) for k in kernels.values()) >= 10


def test_the_rule_sees_a_kernel_that_forgot() -> None:
    """The check above reads the decorator, not a list of ours: a kernel without the mark
    is reported."""
    names = ["x_ptr", "n_rows", "BLOCK"]
    forgot = SimpleNamespace(arg_names=names, kwargs={"do_not_specialize": None})
    indexed = SimpleNamespace(arg_names=names, do_not_specialize=[1])
    assert TOKEN_COUNTS & set(names) - _unspecialised(forgot) == {"n_rows"}
    assert _unspecialised(indexed) == {"n_rows"}


F8 = getattr(torch, "float8_e4m3fn", None)


def _ops() -> dict[str, tuple[Callable[[int], object], tuple[str, ...]]]:
    """Op name -> (run it at this many tokens on the GPU, the kernels it launches)."""
    from sglang_shims import kernels as K

    dev = "cuda"
    hidden = 4096

    def x(t: int) -> Any:
        return torch.randn(t, hidden, device=dev, dtype=torch.bfloat16)

    w = torch.randn(hidden, device=dev, dtype=torch.bfloat16)
    b8 = (torch.randn(512, hidden, device=dev) * 20).to(F8).t()
    sb = torch.rand(512, 1, device=dev) + 0.5

    def add_norm(t: int) -> None:
        K.fused_add_rmsnorm(x(t), x(t), w)

    def per_token(t: int) -> None:
        K.sgl_per_token_quant_fp8(x(t), torch.empty(t, hidden, device=dev, dtype=F8),
                                  torch.empty(t, 1, device=dev))

    def per_group(t: int) -> None:
        K.sgl_per_token_group_quant_fp8(x(t), torch.empty(t, hidden, device=dev, dtype=F8),
                                        torch.empty(t, hidden // 128, device=dev), 128,
                                        1e-10, -448.0, 448.0)

    def per_tensor(t: int) -> None:
        K.sgl_per_tensor_quant_fp8(x(t), torch.empty(t, hidden, device=dev, dtype=F8),
                                   torch.zeros(1, device=dev), False)

    def scaled_mm(t: int) -> None:
        a8 = (torch.randn(t, hidden, device=dev) * 20).to(F8)
        K.fp8_scaled_mm(a8, b8, torch.rand(t, 1, device=dev) + 0.5, sb, torch.bfloat16)

    def topk(t: int) -> None:
        K.topk_softmax(torch.empty(t, 8, device=dev), torch.empty(t, 8, device=dev,
                                                                   dtype=torch.int32),
                       torch.randn(t, 128, device=dev), True)

    def gate(t: int) -> None:
        K.moe_fused_gate(torch.randn(t, 256, device=dev), torch.zeros(256, device=dev),
                         8, 4, 8)

    def align(t: int) -> None:
        ids = torch.randint(0, 128, (t, 8), device=dev, dtype=torch.int32)
        bufs = align_buffers(ids.numel(), 128, 64, dev)
        K.moe_align_block_size(ids, 128, 64, *bufs, True, False)

    return {
        "rmsnorm": (lambda t: K.rmsnorm(x(t), w), ("ops.norm.triton.rmsnorm_kernel",)),
        "fused_add_rmsnorm": (add_norm, ("ops.norm.triton.rmsnorm_kernel",)),
        "sgl_per_token_quant_fp8": (per_token, ("ops.fp8_quant.triton.per_token_quant_kernel",)),
        "sgl_per_token_group_quant_fp8": (
            per_group, ("ops.fp8_quant.triton.per_token_group_quant_kernel",)),
        "sgl_per_tensor_quant_fp8": (per_tensor, ("ops.fp8_quant.triton.absmax_kernel",
                                                  "ops.fp8_quant.triton.per_tensor_quant_kernel")),
        "fp8_scaled_mm": (scaled_mm, ("ops.fp8_gemm.triton.scaled_mm_kernel",)),
        "topk_softmax": (topk, ("ops.moe_topk.triton.topk_softmax_kernel",)),
        "moe_fused_gate": (gate, ("ops.moe_gate.triton.moe_fused_gate_kernel",)),
        "moe_align_block_size": (align, ("ops.moe_align.triton.align_one_launch_kernel",
                                         "ops.moe_align.triton.align_atomic_one_launch_kernel",
                                         "ops.moe_align.triton.align_count_kernel",
                                         "ops.moe_align.triton.align_scan_kernel",
                                         "ops.moe_align.triton.align_place_kernel",
                                         "ops.moe_align.triton.align_scan_place_kernel")),
    }


def _compiled(kernel: Any) -> int:
    """How many binaries this kernel holds in this process (all devices)."""
    return sum(len(entry[0]) for entry in kernel.device_caches.values())


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU: counting compilations needs one")
@pytest.mark.skipif(bool(NO_TRITON), reason=NO_TRITON or "-")
@pytest.mark.parametrize("op", sorted(_ops() if HAS_CUDA else ["-"]))
def test_a_new_token_count_does_not_compile_again(op: str) -> None:
    run, names = _ops()[op]
    kernels = _kernels()
    for group in ((17, 31, 32), (65, 80, 100)):
        before = {n: _compiled(kernels[n]) for n in names}
        for tokens in group:
            run(tokens)
        torch.cuda.synchronize()
        grew = {n: _compiled(kernels[n]) - before[n] for n in names}
        assert all(g <= 1 for g in grew.values()), (group, grew)
    # the count itself works: the op compiled something the first time it ran
    assert sum(_compiled(kernels[n]) for n in names) >= 1


def test_signatures_name_their_parameters() -> None:
    """The rule matches parameters by name: our kernels' names for a token count are the
    ones above (a kernel that called it ``tokens`` would slip past), checked against the
    Python signature of the kernel bodies."""
    if NO_TRITON:
        pytest.skip(NO_TRITON)
    for name, kernel in _kernels().items():
        params = list(inspect.signature(getattr(kernel, "fn", kernel)).parameters)
        assert params == list(kernel.arg_names), name
        assert not {"tokens", "num_tokens", "n_tokens", "batch"} & set(params), name
