"""Launch-configuration sweep for the fallback's Triton kernels, against the real AOT sgl-kernel.

Why: the launch rules of the op families (``sglang_shims/kernels/ops/<family>/launch.py``: the
norms, ``fp8_scaled_mm``, the FP8 quantisers, the activations and ``moe_sum_reduce``) were
first set from prefill-sized measurements, and at decode sizes several ops trail sglang-kernel
0.4.5 (``results/kernels-aot-h200-2026-12-01-second-run.md``: RMSNorm 0.81-0.93x at 1-32 rows,
``fp8_scaled_mm`` 0.38-0.57x at 1-32 tokens, the FP8 quantisers 0.29-0.87x, ...).  This sweep
launches each op's existing ``@triton.jit`` kernel with candidate launch parameters
(``num_warps``, ``num_stages``, block sizes, rows per program) at the shapes of
``benchmarks/kernels.py`` and reports, per (op, shape), what today's heuristic gets, the best
candidate and the AOT kernel, so that the heuristics can be set from measurements.

How today's configuration is found -- not re-derived: the sweep calls the op's public entry
point (``sglang_shims.kernels.<op>``) inside the compile lock's ``recording()``, where every
launch is recorded instead of made, so the kernel, the grid, the arguments and the launch
options it records are exactly what the wrapper launches today.  A candidate is that recorded
launch with some of its constexprs/options changed and the grid recomputed by the family's
``launch.py``; the recomputation is checked against the recorded grid for today's
configuration (a mismatch fails that row).  The candidates themselves are the families' sweep
spaces, kept in the same ``launch.py`` files as the rules they question.

Correctness, per candidate, against the public op's output on the same inputs (output buffers
filled with NaN first, so anything left unwritten fails):

* exact (bit for bit) where a candidate cannot change the order of the arithmetic: the gated
  activations (elementwise), ``moe_sum_reduce`` (one fp32 sum over top-k in index order, per
  element), the FP8 quantisers (the scale comes from a maximum, which no order changes), and
  the residual written by the fused norms;
* within a stated tolerance where the layout changes the order of an fp32 sum: the norms'
  output (``|a - b| <= 2**-7 |b|``: one bf16 step, from a differently rounded mean of
  squares) and ``fp8_scaled_mm`` (``|a - b| <= 2**-7 |b| + 2**-10 max|b|``: fp32 accumulation
  over K in another order, then one bf16 rounding).

Candidates that fail to compile or launch, or whose output differs, are dropped and listed.

Timing: ``triton.testing.do_bench_cudagraph`` through ``bench_ms`` of benchmarks/kernels.py
(median of CUDA-graph replays, as there); the AOT column times the case benchmarks/kernels.py
builds for the real ``sgl_kernel`` (``real_sgl_kernel()`` / ``KernelOnly`` from there: names
sglang-shims bound onto the module read as missing).  Today's configuration is timed through
the same direct launch as the candidates; the public op's own time is in the JSON
(``public_us``) as a cross-check.

Budget: ``--budget`` seconds for the whole sweep, shared fairly -- each op gets the time left
divided by the ops left, each shape of it likewise, and a shape stops taking candidates at its
share (the row then says how many of its candidates were timed).  Today's configuration and
the AOT op are timed for every shape that starts; once the budget is spent no further shape
starts, and what finished is printed (rows as they finish, the JSON rewritten after each row,
also on SIGTERM).  Compiling each candidate would dominate on a fresh machine (no Triton
cache), so ``--jobs`` processes (default 8) compile the candidates ahead of the sweep into
Triton's on-disk cache, in the order the sweep wants them; nothing waits on them, and a
config they have not reached is compiled by the sweep itself.  How long a full sweep takes,
and how much the pool saves, is not measured yet.

Usage (needs a CUDA GPU; the tests in tests/scripts/test_sweep.py run the CPU-side parts
under Triton's interpreter):

    python benchmarks/sweep.py                                   # ops below goal, all shapes
    python benchmarks/sweep.py --ops rmsnorm,fp8_scaled_mm --shapes decode --quick
    python benchmarks/sweep.py --budget 200 --json sweep.json > sweep.md

With the real kernel for the AOT column (as benchmarks/gpu_e2e.sh runs benchmarks/kernels.py:
``SGLANG_SHIMS=0`` so nothing of ours is bound onto it; ``KERNEL`` holds ``sgl_kernel/``):

    SGLANG_SHIMS=0 PYTHONPATH=KERNEL python benchmarks/sweep.py --budget 200 --json OUT/sweep.json

On the device machine, the decode shapes with the full candidate set, in one call of about
four minutes, against the same AOT set-up as ``results/kernels-aot-h200-2026-12-01-second-run.md``
(sglang-kernel 0.4.5 first on the path, sglang 0.5.17's site folder behind it: with flashinfer
importable, 0.4.5's ``rmsnorm`` family runs flashinfer's norm kernels), carrying
``.carry/kern.tar.xz``, ``.carry/site.tar.xz`` and ``.carry/fidata.tar.xz`` (benchmarks/README.md
says how they are built).  ``--budget`` counts from the sweep's start (AOT import and warm-up
included); the timeout leaves start-up and the footer their time:

    k=$(mktemp -d) s=$(mktemp -d) && tar -xJf .carry/kern.tar.xz -C $k && \
      tar -xJf .carry/site.tar.xz -C $s && tar -xJf .carry/fidata.tar.xz -C $s && \
      SGLANG_SHIMS=0 PYTHONPATH=$k:$s timeout 230 python3 benchmarks/sweep.py --shapes decode \
      --budget 195 --json $OUT/sweep-decode.json > $OUT/sweep-decode.md 2> $OUT/sweep-decode.log

(``--shapes prefill --quick`` is the follow-up that checks a new heuristic costs prefill
nothing.)
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.util
import json
import math
import platform
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from sglang_shims import kernels as K
from sglang_shims.kernels import compile_lock
from sglang_shims.kernels.ops.activation import launch as activation
from sglang_shims.kernels.ops.fp8_gemm import launch as fp8_gemm
from sglang_shims.kernels.ops.fp8_quant import launch as fp8_quant
from sglang_shims.kernels.ops.moe_align import launch as moe_align
from sglang_shims.kernels.ops.norm import launch as norm

Config = dict[str, int]
Inputs = dict[str, torch.Tensor]
RandomTensor = Callable[..., torch.Tensor]


def _load_bench() -> Any:
    """benchmarks/kernels.py, for its shapes, ``bench_ms``, ``build_cases`` and AOT logic.

    Loaded from its file (benchmarks/ is not a package) under a private name; kept in
    ``sys.modules`` because its dataclass looks its module up there."""
    name = "_sweep_bench_kernels"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent
                                                  / "kernels.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


BENCH: Any = _load_bench()
DTYPE: torch.dtype = BENCH.DTYPE
TOPK: int = BENCH.TOPK
GROUP: int = BENCH.FP8_GROUP
FP8 = torch.float8_e4m3fn


@functools.cache
def triton_defaults() -> dict[str, int]:
    """Triton's launch options when a wrapper passes none (its CUDA backend's defaults).

    Read on first use, not at import: importing Triton before ``TRITON_INTERPRET=1`` is set
    would keep the tests' kernels off the interpreter."""
    try:
        from triton.backends.nvidia.compiler import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
            CUDAOptions,
        )

        found: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(CUDAOptions)}
        return {"num_warps": int(found["num_warps"]), "num_stages": int(found["num_stages"])}
    except Exception:  # no triton here, or another layout of it: its long-standing values
        return {"num_warps": 4, "num_stages": 3}



class SweepError(RuntimeError):
    """The sweep cannot do what it claims for an op (the wrapper changed under it)."""


# ------------------------------------------------------------------ what an op is


@dataclass(frozen=True)
class Shape:
    tokens: int
    hidden: int


@dataclass
class Out:
    """One tensor an op writes: compared bit for bit (``exact``) or within the op's
    tolerance; ``fill``: written from scratch, so NaN-filled before each launch."""

    tensor: torch.Tensor
    exact: bool
    fill: bool


@dataclass
class Launch:
    """One kernel launch as a wrapper made it: ``kernel[grid](*args, **kwargs)``."""

    kernel: Any  # the @triton.jit function
    grid: tuple[int, ...]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    key: Any = None  # what the wrapper passed to the compile lock
    result: Any = None  # what the public op returned


def kernel_name(kernel: Any) -> str:
    return str(getattr(kernel, "__name__", kernel))


@dataclass(frozen=True)
class OpSpec:
    """An op the sweep can tune: how to call it, what its knobs are (its family's launch.py)."""

    name: str
    knobs: tuple[str, ...]  # the constexprs / launch options a config sets
    label: Callable[[Shape], str]  # as benchmarks/kernels.py labels the shape
    make: Callable[[Shape, RandomTensor], Inputs]
    call: Callable[[Inputs], Any]  # the public op on these inputs
    outputs: Callable[[Inputs, Any], list[Out]]
    grid: Callable[[Shape, Config], tuple[int, ...]]
    candidates: Callable[[Shape, Config, bool], list[Config]]  # (shape, today's, quick)
    rtol: float = 0.0  # for outputs that are not exact
    atol_of_max: float = 0.0  # absolute slack, as a fraction of max|reference|
    cannot: Callable[[Shape], str] = lambda shape: ""  # why the op refuses a shape, or ""


def _blank(rn: RandomTensor, *shape: int, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    return poison(rn(*shape, dtype=dtype))


def poison(t: torch.Tensor) -> torch.Tensor:
    """Fill ``t`` with NaN (bytes 0x7f for 1-byte types: NaN in e4m3fn)."""
    if t.element_size() == 1:
        t.view(torch.uint8).fill_(0x7F)
    else:
        t.fill_(float("nan"))
    return t


# ------------------------------------------------------------------ the ops

def _norm_spec(name: str, fused: bool) -> OpSpec:
    def make(shape: Shape, rn: RandomTensor) -> Inputs:
        t, h = shape.tokens, shape.hidden
        inputs = {"x": rn(t, h), "w": rn(h)}
        if fused:
            inputs["r"] = rn(t, h)
        else:
            inputs["out"] = _blank(rn, t, h)
        return inputs

    def call(i: Inputs) -> Any:
        fn = getattr(K, name)
        if fused:
            return fn(i["x"], i["r"], i["w"])
        return fn(i["x"], i["w"], out=i["out"])

    def outputs(i: Inputs, result: Any) -> list[Out]:
        if fused:  # in place: the norm into x (summed in fp32), the rounded sum into r
            return [Out(i["x"], exact=False, fill=False), Out(i["r"], exact=True, fill=False)]
        return [Out(i["out"], exact=False, fill=True)]

    return OpSpec(
        name, norm.KNOBS, lambda s: f"{s.tokens}x{s.hidden}", make, call, outputs,
        lambda s, c: norm.grid(s.tokens, c),
        lambda s, c, quick: norm.candidates(s.tokens, s.hidden, c, quick), rtol=2.0**-7)


def _act_spec(name: str) -> OpSpec:
    def make(shape: Shape, rn: RandomTensor) -> Inputs:
        return {"x": rn(shape.tokens, 2 * shape.hidden), "out": _blank(rn, shape.tokens,
                                                                         shape.hidden)}

    return OpSpec(
        name, activation.KNOBS, lambda s: f"{s.tokens}x2*{s.hidden}", make,
        lambda i: getattr(K, name)(i["x"], i["out"]),
        lambda i, result: [Out(i["out"], exact=True, fill=True)],
        lambda s, c: activation.grid(s.tokens, s.hidden, c),
        lambda s, c, quick: activation.candidates(s.tokens, s.hidden, c, quick))


def _moe_sum_spec() -> OpSpec:
    def make(shape: Shape, rn: RandomTensor) -> Inputs:
        return {"y": rn(shape.tokens, TOPK, shape.hidden),
                "out": _blank(rn, shape.tokens, shape.hidden)}

    return OpSpec(
        "moe_sum_reduce", moe_align.SUM_KNOBS, lambda s: f"{s.tokens}x{TOPK}x{s.hidden}", make,
        lambda i: K.moe_sum_reduce(i["y"], i["out"], 2.5),
        lambda i, result: [Out(i["out"], exact=True, fill=True)],
        lambda s, c: moe_align.sum_grid(s.tokens, s.hidden, c),
        lambda s, c, quick: moe_align.sum_candidates(s.tokens, s.hidden, c, quick))


def _group_quant_spec() -> OpSpec:
    def make(shape: Shape, rn: RandomTensor) -> Inputs:
        t, h = shape.tokens, shape.hidden
        return {"x": rn(t, h), "q": _blank(rn, t, h, dtype=FP8),
                "s": _blank(rn, t, h // GROUP, dtype=torch.float32)}

    def groups(shape: Shape) -> int:
        return shape.tokens * shape.hidden // GROUP

    return OpSpec(
        "sgl_per_token_group_quant_fp8", fp8_quant.GROUP_KNOBS,
        lambda s: f"{s.tokens}x{s.hidden} g{GROUP}", make,
        lambda i: K.sgl_per_token_group_quant_fp8(i["x"], i["q"], i["s"], GROUP, 1e-10,
                                                  -448.0, 448.0),
        lambda i, result: [Out(i["q"], exact=True, fill=True), Out(i["s"], exact=True,
                                                                    fill=True)],
        lambda s, c: fp8_quant.group_grid(groups(s), c),
        lambda s, c, quick: fp8_quant.group_candidates(groups(s), c, quick),
        cannot=lambda s: "" if s.hidden % GROUP == 0 else f"width not a multiple of {GROUP}")


def _token_quant_spec() -> OpSpec:
    def make(shape: Shape, rn: RandomTensor) -> Inputs:
        t, h = shape.tokens, shape.hidden
        return {"x": rn(t, h), "q": _blank(rn, t, h, dtype=FP8),
                "s": _blank(rn, t, 1, dtype=torch.float32)}

    return OpSpec(
        "sgl_per_token_quant_fp8", fp8_quant.TOKEN_KNOBS, lambda s: f"{s.tokens}x{s.hidden}",
        make, lambda i: K.sgl_per_token_quant_fp8(i["x"], i["q"], i["s"]),
        lambda i, result: [Out(i["q"], exact=True, fill=True), Out(i["s"], exact=True,
                                                                    fill=True)],
        lambda s, c: fp8_quant.token_grid(s.tokens, c),
        lambda s, c, quick: fp8_quant.token_candidates(s.tokens, s.hidden, c, quick))


def _gemm_spec() -> OpSpec:
    def make(shape: Shape, rn: RandomTensor) -> Inputs:
        t, h = shape.tokens, shape.hidden
        return {"a": rn(t, h, dtype=FP8), "w": rn(h, h, dtype=FP8),
                "sa": rn(t, 1, dtype=torch.float32).abs(), "sb": rn(h, dtype=torch.float32).abs()}

    return OpSpec(
        "fp8_scaled_mm", fp8_gemm.KNOBS,
        lambda s: f"{s.tokens}x{s.hidden}x{s.hidden} token x channel", make,
        lambda i: K.fp8_scaled_mm(i["a"], i["w"].t(), i["sa"], i["sb"], DTYPE),
        lambda i, result: [Out(result, exact=False, fill=True)],
        lambda s, c: fp8_gemm.grid(s.tokens, s.hidden, c),
        lambda s, c, quick: fp8_gemm.candidates(s.tokens, s.hidden, c, quick),
        rtol=2.0**-7, atol_of_max=2.0**-10)


OPS: dict[str, OpSpec] = {s.name: s for s in (
    _norm_spec("rmsnorm", fused=False),
    _norm_spec("gemma_rmsnorm", fused=False),
    _norm_spec("fused_add_rmsnorm", fused=True),
    _norm_spec("gemma_fused_add_rmsnorm", fused=True),
    _act_spec("gelu_tanh_and_mul"),
    _moe_sum_spec(),
    _token_quant_spec(),
    _group_quant_spec(),
    _gemm_spec(),
    _act_spec("silu_and_mul"),
    _act_spec("gelu_and_mul"),
)}
#: The ops below goal in the 2026-12-01 AOT comparison, in the order they are swept.
DEFAULT_OPS = ("rmsnorm", "gemma_rmsnorm", "fused_add_rmsnorm", "gemma_fused_add_rmsnorm",
               "gelu_tanh_and_mul", "moe_sum_reduce", "sgl_per_token_quant_fp8",
               "sgl_per_token_group_quant_fp8", "fp8_scaled_mm")


def shapes(which: str, tokens: Sequence[int] = (), hidden: Sequence[int] = ()) -> list[Shape]:
    """benchmarks/kernels.py's token counts (decode, prefill or both) x its hidden sizes;
    ``tokens`` / ``hidden``, where given, replace either."""
    tokens = tokens or {"decode": BENCH.DECODE, "prefill": BENCH.PREFILL,
                        "all": BENCH.DECODE + BENCH.PREFILL}[which]
    return [Shape(t, h) for t in tokens for h in hidden or BENCH.HIDDEN]


def _ints(text: str) -> tuple[int, ...]:
    """``N,N,...`` as positive integers (an argparse type: a bad list is a usage error)."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N,N,...: {text!r}") from None
    if any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive counts: {text!r}")
    return values


def _widths(text: str) -> tuple[int, ...] | str:
    return "models" if text == "models" else _ints(text)


# ------------------------------------------------------------------ recording and replaying


def record_launch(spec: OpSpec, inputs: Inputs) -> Launch:
    """The one kernel launch the public op makes on ``inputs`` (recorded, not made)."""
    with compile_lock.recording() as launches:
        result = spec.call(inputs)
    if len(launches) != 1:
        raise SweepError(f"{spec.name}: the public op made {len(launches)} kernel launches, "
                         "one expected (is the Triton path on? CUDA tensors, or "
                         "TRITON_INTERPRET=1)")
    made = launches[0]
    if callable(made.grid):
        raise SweepError("the wrapper passes a grid function; the sweep records tuples")
    return Launch(made.kernel, tuple(int(g) for g in made.grid), made.args, dict(made.kwargs),
                  made.key, result)


def current_config(spec: OpSpec, launch: Launch) -> Config:
    """Today's value of each knob in a recorded launch (Triton's default where the wrapper
    passes none)."""
    config: Config = {}
    for knob in spec.knobs:
        if knob in launch.kwargs:
            config[knob] = int(launch.kwargs[knob])
        elif knob in triton_defaults():
            config[knob] = triton_defaults()[knob]
        else:
            raise SweepError(f"{spec.name}: the wrapper no longer passes {knob} to "
                             f"{kernel_name(launch.kernel)}")
    return config


def clone(inputs: Inputs) -> Inputs:
    return {k: v.clone() for k, v in inputs.items()}


def prepare(spec: OpSpec, shape: Shape, pristine: Inputs, config: Config
            ) -> tuple[Callable[[], None], list[Out]]:
    """A launch of ``config`` on a copy of ``pristine``, and the outputs it writes (those
    written from scratch already NaN-filled)."""
    unknown = set(config) - set(spec.knobs)
    if unknown:
        raise SweepError(f"{spec.name}: not a knob of its kernel: {sorted(unknown)}")
    inputs = clone(pristine)
    launch = record_launch(spec, inputs)
    outs = spec.outputs(inputs, launch.result)
    for o in outs:
        if o.fill:
            poison(o.tensor)
    kernel = launch.kernel
    grid = spec.grid(shape, config)
    kwargs = {**launch.kwargs, **config}
    args = launch.args

    def run() -> None:
        kernel[grid](*args, **kwargs)
    return run, outs


def reference(spec: OpSpec, pristine: Inputs) -> list[torch.Tensor]:
    """The public op's outputs on a copy of ``pristine``."""
    inputs = clone(pristine)
    result = spec.call(inputs)
    return [o.tensor.clone() for o in spec.outputs(inputs, result)]


def _bits(t: torch.Tensor) -> torch.Tensor:
    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return t.contiguous().view(as_int[t.element_size()])


def mismatch(actual: torch.Tensor, ref: torch.Tensor, exact: bool, rtol: float,
             atol_of_max: float) -> str:
    """Why ``actual`` is not ``ref`` ("" when it is, bit for bit or within tolerance)."""
    if actual.shape != ref.shape or actual.dtype != ref.dtype:
        return f"got {actual.dtype} {list(actual.shape)}, want {ref.dtype} {list(ref.shape)}"
    if exact:
        bad = int((_bits(actual) != _bits(ref)).sum())
        return f"{bad} of {ref.numel()} values differ (bit-exact comparison)" if bad else ""
    a, r = actual.double(), ref.double()
    top = float(r.abs().max()) if r.numel() else 0.0
    err = (a - r).abs()
    ok = err <= rtol * r.abs() + atol_of_max * top  # NaN compares False: a failure
    bad = int((~ok).sum())
    if not bad:
        return ""
    worst = float(torch.nan_to_num(err, nan=math.inf).max())
    return (f"{bad} of {ref.numel()} values outside |a - b| <= {rtol:.3g} |b| + "
            f"{atol_of_max * top:.3g} (largest difference {worst:.3g})")


def _sync(outs: Sequence[Out]) -> None:
    if any(o.tensor.is_cuda for o in outs):
        torch.cuda.synchronize()


def check(spec: OpSpec, shape: Shape, pristine: Inputs, ref: Sequence[torch.Tensor],
          config: Config) -> tuple[Callable[[], None] | None, str]:
    """Launch ``config`` once and compare with the public op: (the launch, "") when it
    matches, else (None, why it is dropped)."""
    try:
        run, outs = prepare(spec, shape, pristine, config)
        run()
        _sync(outs)
    except SweepError:
        raise
    except Exception as exc:  # compile errors, out of resources, bad constexprs
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        return None, f"launch failed: {type(exc).__name__}: {first}"
    for n, (o, r) in enumerate(zip(outs, ref, strict=True)):
        why = mismatch(o.tensor, r, o.exact, spec.rtol, spec.atol_of_max)
        if why:
            return None, f"output {n}: {why}"
    return run, ""


# ------------------------------------------------------------------ the sweep


@dataclass
class Row:
    op: str
    shape: str
    tokens: int
    hidden: int
    current: Config = field(default_factory=dict)
    candidates: int = 0
    timings: list[tuple[Config, float]] = field(default_factory=list)  # (config, µs)
    dropped: list[tuple[Config, str]] = field(default_factory=list)
    aot_us: float | None = None
    aot_note: str = ""
    public_us: float | None = None
    partial: bool = False  # the shape's share of the budget ran out
    error: str = ""

    @property
    def current_us(self) -> float | None:
        return next((us for c, us in self.timings if c == self.current), None)

    @property
    def best(self) -> tuple[Config, float] | None:
        return min(self.timings, key=lambda t: t[1]) if self.timings else None


@dataclass
class Result:
    rows: list[Row] = field(default_factory=list)
    not_run: list[tuple[str, str]] = field(default_factory=list)  # (op, shape)
    # (op, shape, why): shapes of the sweep the op refuses (a group quantiser's width that
    # is no multiple of its group), listed, not timed
    not_applicable: list[tuple[str, str, str]] = field(default_factory=list)
    elapsed_s: float = 0.0
    stopped: str = ""  # why the sweep ended early ("" if it did not)


Bench = Callable[[Callable[[], object]], float]  # a callable -> its time in µs
AotLookup = Callable[[str, str], tuple[Callable[[], object] | None, str]]


def dedupe(configs: Sequence[Config]) -> list[Config]:
    seen: set[tuple[tuple[str, int], ...]] = set()
    out = []
    for c in configs:
        key = tuple(sorted(c.items()))
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def sweep_shape(spec: OpSpec, shape: Shape, *, quick: bool, deadline: float, bench: Bench,
                aot: AotLookup | None, device: str, clock: Callable[[], float],
                seed: int = 0) -> Row:
    """Today's configuration, the AOT op, then candidates until ``deadline``."""
    row = Row(spec.name, spec.label(shape), shape.tokens, shape.hidden)
    gen = torch.Generator(device=device).manual_seed(seed)

    def rn(*size: int, dtype: torch.dtype = DTYPE) -> torch.Tensor:
        return torch.randn(*size, generator=gen, device=device, dtype=torch.float32).to(dtype)

    pristine = spec.make(shape, rn)
    launch = record_launch(spec, clone(pristine))
    row.current = current_config(spec, launch)
    if spec.grid(shape, row.current) != launch.grid:
        row.error = (f"grid mismatch: the wrapper launches {launch.grid}, the sweep computes "
                     f"{spec.grid(shape, row.current)} for the same config")
        return row
    configs = dedupe([row.current, *spec.candidates(shape, row.current, quick)])
    row.candidates = len(configs)
    ref = reference(spec, pristine)
    if aot is not None:
        fn, row.aot_note = aot(spec.name, row.shape)
        if fn is not None:
            try:
                row.aot_us = bench(fn)
            except Exception as exc:  # an op that AOT build cannot run at this shape
                row.aot_note = f"error: {type(exc).__name__}"
    public = clone(pristine)
    row.public_us = bench(lambda: spec.call(public))
    for n, config in enumerate(configs):
        if n and clock() >= deadline:
            row.partial = True
            break
        run, why = check(spec, shape, pristine, ref, config)
        if run is None:
            if n == 0:
                row.error = f"today's config does not reproduce the public op: {why}"
                return row
            row.dropped.append((config, why))
            continue
        row.timings.append((config, bench(run)))
    return row


def sweep(ops: Sequence[OpSpec], op_shapes: Sequence[Shape], *, quick: bool, budget_s: float,
          bench: Bench, aot: AotLookup | None, device: str,
          clock: Callable[[], float] = time.monotonic,
          on_row: Callable[[Row], None] | None = None,
          progress: Callable[[str], None] | None = None,
          result: Result | None = None) -> Result:
    """Every (op, shape) within ``budget_s`` seconds, shared fairly (module docstring)."""
    result = Result() if result is None else result
    start = clock()
    deadline = start + budget_s
    for i, spec in enumerate(ops):
        refused = [(s, spec.cannot(s)) for s in op_shapes]
        result.not_applicable += [(spec.name, spec.label(s), why) for s, why in refused if why]
        spec_shapes = [s for s, why in refused if not why]
        now = clock()
        if now >= deadline:
            result.stopped = f"budget of {budget_s:.0f} s spent"
            result.not_run += [(spec.name, spec.label(s)) for s in spec_shapes]
            continue
        op_deadline = now + (deadline - now) / (len(ops) - i)
        if progress:
            progress(f"[sweep] {spec.name}: {len(spec_shapes)} shapes, {op_deadline - now:.0f} s "
                     f"of {deadline - now:.0f} s left")
        timed = dropped = 0
        for j, shape in enumerate(spec_shapes):
            now = clock()
            if now >= deadline:
                result.stopped = f"budget of {budget_s:.0f} s spent"
                result.not_run.append((spec.name, spec.label(shape)))
                continue
            shape_deadline = now + (op_deadline - now) / (len(spec_shapes) - j)
            try:
                row = sweep_shape(spec, shape, quick=quick, deadline=shape_deadline,
                                  bench=bench, aot=aot, device=device, clock=clock)
            except SweepError as exc:
                row = Row(spec.name, spec.label(shape), shape.tokens, shape.hidden,
                          error=str(exc))
            timed += len(row.timings)
            dropped += len(row.dropped)
            result.rows.append(row)
            if on_row:
                on_row(row)
        if progress:
            progress(f"[sweep] {spec.name}: done, {timed} timed, {dropped} dropped, "
                     f"{clock() - start:.0f} s elapsed")
        result.elapsed_s = clock() - start
    result.elapsed_s = clock() - start
    return result


# ------------------------------------------------------------------ reporting


def fmt_config(config: Config) -> str:
    short = {"num_warps": "warps", "num_stages": "stages"}
    return " ".join(f"{short.get(k, k.removeprefix('BLOCK_'))}={v}" for k, v in config.items())


def _us(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _ratio(aot: float | None, ours: float | None) -> str:
    return "-" if aot is None or not ours else f"{aot / ours:.2f}x"


TABLE_HEAD = ("| op | shape | current config | current µs | best config | best µs | AOT µs | "
              "current/AOT | best/AOT | timed |\n"
              "|---|---|---|---|---|---|---|---|---|---|")


def row_line(row: Row) -> str:
    if row.error:
        return (f"| {row.op} | {row.shape} | {fmt_config(row.current)} | - | error: "
                f"{row.error} | - | {_us(row.aot_us)} | - | - | 0 |")
    best = row.best
    timed = f"{len(row.timings)}/{row.candidates}" + (" (budget)" if row.partial else "")
    aot = _us(row.aot_us) if row.aot_us is not None else (row.aot_note or "-")
    return (f"| {row.op} | {row.shape} | {fmt_config(row.current)} | {_us(row.current_us)} | "
            f"{fmt_config(best[0]) if best else '-'} | {_us(best[1] if best else None)} | "
            f"{aot} | {_ratio(row.aot_us, row.current_us)} | "
            f"{_ratio(row.aot_us, best[1] if best else None)} | {timed} |")


def header_lines(meta: dict[str, Any]) -> list[str]:
    return [f"# Launch-configuration sweep ({meta.get('date', '?')})", "",
            "; ".join(f"{k}: {v}" for k, v in meta.items() if k != "date"), "",
            "current = the launch the wrapper makes today; ratios = AOT µs / our µs "
            "(> 1 = ours faster); timed = candidates timed / generated", ""]


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def footer_lines(result: Result) -> list[str]:
    lines = [""]
    pairs = [(r.aot_us / r.current_us, r.aot_us / r.best[1]) for r in result.rows
             if r.aot_us and r.current_us and r.best]
    if pairs:
        today, best = _geomean([p[0] for p in pairs]), _geomean([p[1] for p in pairs])
        lines.append(f"vs AOT over {len(pairs)} rows: geometric mean {today:.2f}x today, "
                     f"{best:.2f}x with the best configs")
    better = [r for r in result.rows
              if r.current_us and r.best and r.best[1] < 0.97 * r.current_us]
    lines.append(f"rows where the best config is > 3% faster than today's: {len(better)} of "
                 f"{len(result.rows)}")
    dropped = [(r, c, why) for r in result.rows for c, why in r.dropped]
    if dropped:
        lines += ["", f"dropped candidates ({len(dropped)}):"]
        lines += [f"- {r.op} {r.shape} [{fmt_config(c)}]: {why}" for r, c, why in dropped]
    if result.not_applicable:
        lines += ["", f"not applicable ({len(result.not_applicable)}): " + ", ".join(
            f"{op} {shape} ({why})" for op, shape, why in result.not_applicable)]
    if result.not_run:
        lines += ["", f"not run ({result.stopped or 'stopped'}): "
                  + ", ".join(f"{op} {shape}" for op, shape in result.not_run)]
    lines.append(f"\nelapsed: {result.elapsed_s:.0f} s" + (f"; stopped: {result.stopped}"
                                                            if result.stopped else ""))
    return lines


def render_markdown(result: Result, meta: dict[str, Any]) -> str:
    return "\n".join([*header_lines(meta), TABLE_HEAD, *map(row_line, result.rows),
                      *footer_lines(result)]) + "\n"


def to_json(result: Result, meta: dict[str, Any]) -> dict[str, Any]:
    """Per (op, shape): today's and the best config with their times, every timing, drops."""
    rows = []
    for r in result.rows:
        best = r.best
        rows.append({
            "op": r.op, "shape": r.shape, "tokens": r.tokens, "hidden": r.hidden,
            "current": r.current, "current_us": r.current_us,
            "best": best[0] if best else None, "best_us": best[1] if best else None,
            "aot_us": r.aot_us, "aot_note": r.aot_note, "public_us": r.public_us,
            "candidates": r.candidates, "partial": r.partial, "error": r.error,
            "timings": [{"config": c, "us": us} for c, us in r.timings],
            "dropped": [{"config": c, "reason": why} for c, why in r.dropped],
        })
    return {"meta": meta, "rows": rows, "elapsed_s": result.elapsed_s,
            "stopped": result.stopped,
            "not_run": [{"op": op, "shape": shape} for op, shape in result.not_run],
            "not_applicable": [{"op": op, "shape": shape, "reason": why}
                               for op, shape, why in result.not_applicable]}


def write_json(path: Path, result: Result, meta: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(to_json(result, meta), indent=1) + "\n")
    tmp.replace(path)


# ------------------------------------------------------------------ GPU-only parts


class AotColumn:
    """The real kernel's time per (op, shape label), from benchmarks/kernels.py's cases.
    GPU only (those cases are built on CUDA)."""

    def __init__(self, shapes: Sequence[Shape] = ()) -> None:
        self.module, self.note = BENCH.real_sgl_kernel()
        # kernels.py's cases at the sweep's own token counts and widths (default: its own)
        tokens = tuple(sorted({s.tokens for s in shapes}))
        widths = tuple(sorted({s.hidden for s in shapes}))
        self.shapes = (BENCH.Shapes(tokens=tokens, hidden=widths, act=widths) if shapes
                       else BENCH.Shapes())
        self._op = ""
        self._cases: dict[str, Callable[[], object]] = {}

    def __call__(self, op: str, label: str) -> tuple[Callable[[], object] | None, str]:
        if self.module is None:
            return None, "-"
        if not hasattr(self.module, op):
            return None, "not in this kernel"
        if op != self._op:
            self._cases = {}  # free the previous op's inputs first
            self._op = op
            try:
                self._cases = {c.shape: c.ours for c in BENCH.build_cases(
                    {op}, self.module, self.shapes) if c.op == op}
            except Exception as exc:
                return None, f"error building the case: {type(exc).__name__}"
        fn = self._cases.get(label)
        return (fn, "") if fn is not None else (None, f"no case {label!r} in kernels.py")

    def warm(self, ops: Sequence[str], shape: Shape, progress: Callable[[str], None]) -> None:
        """Call each AOT op once before the sweep: a kernel that JIT-compiles on first use
        (sgl-kernel 0.4.5 hands the norms to flashinfer when flashinfer imports) does it
        here, not inside one op's share of the budget."""
        start = time.monotonic()
        for op in ops:
            spec = OPS[op]
            fn, _ = self(op, spec.label(shape))
            if fn is None:
                continue
            try:
                fn()
                torch.cuda.synchronize()
            except Exception as exc:  # reported again, per shape, in the table
                progress(f"[sweep] AOT {op}: {type(exc).__name__}: {exc}")
        progress(f"[sweep] AOT ops warmed in {time.monotonic() - start:.1f} s")


def gpu_bench(fn: Callable[[], object]) -> float:
    """µs per call: benchmarks/kernels.py's ``bench_ms`` (CUDA-graph replays)."""
    return float(BENCH.bench_ms(fn)) * 1e3


def device_meta(args: argparse.Namespace, aot_note: str) -> dict[str, Any]:
    import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]

    props = torch.cuda.get_device_properties(0)
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "GPU": f"{props.name} ({props.multi_processor_count} SMs)",
            "torch": torch.__version__, "triton": triton.__version__,
            "Python": platform.python_version(), "dtype": str(DTYPE).removeprefix("torch."),
            "AOT": aot_note, "budget_s": args.budget, "quick": args.quick,
            "shapes": args.shapes, "jobs": args.jobs}


def candidates_for(spec: OpSpec, shape: Shape, quick: bool, device: str) -> list[Config]:
    """The configs :func:`sweep_shape` tries for ``shape``, today's first, found without
    running anything (inputs from ``torch.empty``, the launch recorded, not made)."""

    def empty(*size: int, dtype: torch.dtype = DTYPE) -> torch.Tensor:
        return torch.empty(*size, device=device, dtype=dtype)

    current = current_config(spec, record_launch(spec, spec.make(shape, empty)))
    return dedupe([current, *spec.candidates(shape, current, quick)])


def plan(specs: Sequence[OpSpec], op_shapes: Sequence[Shape], quick: bool, device: str,
         chunk: int = 4) -> list[tuple[str, int, int, int, int, bool]]:
    """Compile jobs in the order the sweep will want them: (op, tokens, hidden, first
    candidate, how many, quick)."""
    jobs = []
    for spec in specs:
        for shape in (s for s in op_shapes if not spec.cannot(s)):
            n = len(candidates_for(spec, shape, quick, device))
            jobs += [(spec.name, shape.tokens, shape.hidden, start, chunk, quick)
                     for start in range(0, n, chunk)]
    return jobs


def precompile(job: tuple[str, int, int, int, int, bool]) -> int:
    """A pool worker: compile candidates ``start .. start + count`` of one (op, shape) into
    Triton's on-disk cache, where the sweep's first launch of each then finds it.

    Inputs are ``torch.empty`` on the GPU (compiling needs their dtypes and how Triton
    specialises their sizes, not their values, and empty launches no kernel that would
    share the GPU with the timing).  Failures are left for the sweep to meet and report."""
    name, tokens, hidden, start, count, quick = job
    spec, shape = OPS[name], Shape(tokens, hidden)

    def empty(*size: int, dtype: torch.dtype = DTYPE) -> torch.Tensor:
        return torch.empty(*size, device="cuda", dtype=dtype)

    inputs = spec.make(shape, empty)
    launch = record_launch(spec, inputs)
    configs = candidates_for(spec, shape, quick, "cuda")[start:start + count]
    done = 0
    for config in configs:
        try:
            launch.kernel.warmup(*launch.args, grid=spec.grid(shape, config),
                          **{**launch.kwargs, **config})
            done += 1
        except Exception:
            pass
    del inputs, launch
    torch.cuda.empty_cache()
    return done


class Precompiler:
    """``jobs`` spawned processes compiling ahead of the sweep (GPU only).  Nothing waits on
    them: a config they have not reached yet is compiled by the sweep itself, as without
    them, so they can only save time."""

    def __init__(self, jobs: int, specs: Sequence[OpSpec], op_shapes: Sequence[Shape],
                 quick: bool) -> None:
        import multiprocessing

        work = plan(specs, op_shapes, quick, "cuda")
        self.pool = multiprocessing.get_context("spawn").Pool(jobs)
        self.pending = [self.pool.apply_async(precompile, (job,)) for job in work]

    def close(self) -> str:
        """Stop the workers; how far they got."""
        ready = [r for r in self.pending if r.ready()]
        compiled = sum(r.get() for r in ready if r.successful())
        failed = sum(1 for r in ready if not r.successful())
        self.pool.terminate()
        self.pool.join()
        return (f"precompile: {compiled} configs compiled ahead, {len(ready)} of "
                f"{len(self.pending)} jobs done, {failed} failed")


class _Stopped(Exception):
    pass


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Stopped("SIGTERM")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--ops", default=",".join(DEFAULT_OPS),
                        help=f"comma-separated ops (default: {','.join(DEFAULT_OPS)}; also "
                        f"{', '.join(sorted(set(OPS) - set(DEFAULT_OPS)))})")
    parser.add_argument("--shapes", choices=("decode", "prefill", "all"), default="all")
    parser.add_argument("--tokens", type=_ints, default=(), metavar="N,N",
                        help="token counts instead of --shapes' own")
    parser.add_argument("--hidden", type=_widths, default=(), metavar="N,N|models",
                        help="widths instead of 4096 and 8192 (models: the hidden sizes of"
                             " benchmarks/model_shapes.toml and its odd widths)")
    parser.add_argument("--quick", action="store_true", help="a reduced candidate set")
    parser.add_argument("--budget", type=float, default=200.0,
                        help="seconds for the whole sweep (default 200)")
    parser.add_argument("--json", type=Path, help="write the results here (rewritten per row)")
    parser.add_argument("--no-aot", action="store_true", help="no AOT column")
    parser.add_argument("--jobs", type=int, default=8,
                        help="processes compiling candidates ahead of the sweep (0: none)")
    args = parser.parse_args(argv)
    names = [o.strip() for o in args.ops.split(",") if o.strip()]
    unknown = [o for o in names if o not in OPS]
    if unknown or not names:
        parser.error(f"unknown ops {unknown}; known: {', '.join(OPS)}")
    args.op_names = names
    if args.hidden == "models":
        args.hidden = BENCH.model_shapes().hidden
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("benchmarks/sweep.py needs a CUDA GPU (the tests run its CPU parts)",
              file=sys.stderr)
        return 2
    started = time.monotonic()  # the budget covers everything from here
    specs = [OPS[o] for o in args.op_names]
    op_shapes = shapes(args.shapes, args.tokens, args.hidden)
    aot = None if args.no_aot else AotColumn(op_shapes)
    meta = device_meta(args, "off" if aot is None else aot.note)
    print("\n".join(header_lines(meta)))
    print(TABLE_HEAD, flush=True)
    result = Result()

    def on_row(row: Row) -> None:
        print(row_line(row), flush=True)
        if args.json:
            write_json(args.json, result, meta)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, _on_sigterm)
    pool = None
    if args.jobs > 0:
        try:
            pool = Precompiler(args.jobs, specs, op_shapes, args.quick)
        except Exception as exc:  # the sweep compiles everything itself, as with --jobs 0
            progress(f"[sweep] no compile pool ({type(exc).__name__}: {exc})")
    try:
        if aot is not None:
            aot.warm([s.name for s in specs], op_shapes[0], progress)
        left = args.budget - (time.monotonic() - started)  # the set-up counts against it
        sweep(specs, op_shapes, quick=args.quick, budget_s=left, bench=gpu_bench,
              aot=aot, device="cuda", on_row=on_row, progress=progress, result=result)
        result.elapsed_s = time.monotonic() - started
    except (_Stopped, KeyboardInterrupt) as exc:
        result.stopped = f"interrupted ({type(exc).__name__} {exc})"
        result.elapsed_s = time.monotonic() - started
        done = {(r.op, r.shape) for r in result.rows}
        result.not_run = [(s.name, s.label(sh)) for s in specs for sh in op_shapes
                          if (s.name, s.label(sh)) not in done and not s.cannot(sh)]
    finally:
        if pool is not None:
            progress(pool.close())
    print("\n".join(footer_lines(result)), flush=True)
    if args.json:
        write_json(args.json, result, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
