"""benchmarks/sweep.py without a GPU: candidates, today's config, checking, budget, reports.

Under Triton's interpreter (``TRITON_INTERPRET=1``, set as tests/support/kernels.py does; compiled
kernels instead where CUDA is present), on tiny shapes:

* every op's candidate generator yields configs its kernel accepts and whose output equals
  the public op's.  The interpreter ignores ``num_warps`` and ``num_stages``, so configs that
  differ only in those run once here; whether the GPU compiles them is the sweep's to find
  out (it drops and lists those it cannot launch);
* today's config, as the sweep records it, is what the wrapper launches: a spy passing the
  wrapper's launch through to the real kernel sees the same options and grid, the sweep's
  relaunch writes the same bits, and changing a wrapper constant changes it;
* the checker drops a config with a wrong output (bit-exact and tolerance paths) and one
  that cannot launch;
* the budget ends the sweep cleanly (fake clock) with what did not run listed;
* the markdown and JSON writers, on synthetic timings.

GPU only, not tested here: the timing itself (``do_bench_cudagraph``), the AOT column (its
cases are built on CUDA by benchmarks/kernels.py) and the compile-ahead pool.
Run time: ~15 s on the 2-core development VM.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import torch
else:
    torch = pytest.importorskip("torch", reason="torch is not installed: the sweep needs it")

from ..support.kernels import load_triton, select_backend
from ..support.scripts import load_script

HAS_CUDA = torch.cuda.is_available()
KERNEL_MODULES = ("ops.norm.triton", "ops.activation.triton", "ops.moe_align.triton",
                  "ops.fp8_quant.triton", "ops.fp8_gemm.triton")
NO_TRITON = load_triton(KERNEL_MODULES, HAS_CUDA)
needs_triton = pytest.mark.skipif(bool(NO_TRITON), reason=NO_TRITON)


def _load_sweep() -> types.ModuleType:
    return load_script("benchmarks/sweep.py", "bench_sweep")


S: Any = _load_sweep()

#: Per op, tiny shapes that take each branch of its candidate generator and wrapper
#: (several rows per program, a row of 1, the GEMM's decode and prefill tiles).
SHAPES: dict[str, list[Any]] = {name: [S.Shape(3, 256)] for name in S.OPS}
for _name in ("rmsnorm", "fused_add_rmsnorm", "sgl_per_token_quant_fp8"):
    SHAPES[_name].append(S.Shape(1, 512))
for _name in ("gelu_tanh_and_mul", "silu_and_mul", "gelu_and_mul"):
    SHAPES[_name] = [S.Shape(3, 1024)]  # several column blocks to choose from
SHAPES["fp8_scaled_mm"].append(S.Shape(65, 128))
INTERPRETER_BLIND = ("num_warps", "num_stages")


@pytest.fixture
def dev(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """On the Triton path (the interpreter without a GPU); yields the tensors' device."""
    yield select_backend("triton", monkeypatch, HAS_CUDA)


def _inputs(spec: Any, shape: Any, dev: str, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator(device=dev).manual_seed(seed)

    def rn(*size: int, dtype: torch.dtype = S.DTYPE) -> torch.Tensor:
        return torch.randn(*size, generator=gen, device=dev).to(dtype)

    made: dict[str, torch.Tensor] = spec.make(shape, rn)
    return made


def _bits(t: torch.Tensor) -> torch.Tensor:
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32}
    return t.contiguous().view(ints[t.element_size()])


def _current(spec: Any, shape: Any, dev: str) -> dict[str, int]:
    config: dict[str, int] = S.current_config(
        spec, S.record_launch(spec, _inputs(spec, shape, dev)))
    return config


CASES = [(name, shape) for name, shapes in SHAPES.items() for shape in shapes]
IDS = [f"{name}-{shape.tokens}x{shape.hidden}" for name, shape in CASES]


@needs_triton
@pytest.mark.parametrize(("name", "shape"), CASES, ids=IDS)
def test_every_candidate_launches_and_matches_the_public_op(name: str, shape: Any,
                                                            dev: str) -> None:
    spec = S.OPS[name]
    pristine = _inputs(spec, shape, dev)
    ref = S.reference(spec, pristine)
    for quick in (False, True):
        current = _current(spec, shape, dev)
        configs = S.candidates_for(spec, shape, quick, dev)
        assert configs[0] == current
        assert len(configs) > 1, f"{name}: nothing to compare today's config with"
        for config in configs:
            assert set(config) == set(spec.knobs)
        seen = set()
        for config in configs:
            key = tuple(sorted((k, v) for k, v in config.items() if k not in INTERPRETER_BLIND))
            if key in seen:
                continue
            seen.add(key)
            run, why = S.check(spec, shape, pristine, ref, config)
            assert run is not None, f"{name} {config}: {why}"


@needs_triton
@pytest.mark.parametrize("name", list(S.OPS))
def test_current_config_is_what_the_wrapper_launches(name: str, dev: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    spec = S.OPS[name]
    shape = SHAPES[name][0]
    pristine = _inputs(spec, shape, dev)
    launch = S.record_launch(spec, S.clone(pristine))
    current = S.current_config(spec, launch)

    real = launch.kernel
    kernels, name = importlib.import_module(real.fn.__module__), real.fn.__name__
    assert getattr(kernels, name) is real
    seen: list[tuple[tuple[int, ...], dict[str, Any]]] = []

    class Spy:
        """The wrapper's launch, observed on its way to the real kernel."""

        def __getitem__(self, grid: tuple[int, ...]) -> Callable[..., None]:
            def go(*args: Any, **kwargs: Any) -> None:
                seen.append((tuple(grid), kwargs))
                real[grid](*args, **kwargs)
            return go

    inputs = S.clone(pristine)
    monkeypatch.setattr(kernels, name, Spy())
    result = spec.call(inputs)
    monkeypatch.setattr(kernels, name, real)

    assert len(seen) == 1
    grid, kwargs = seen[0]
    assert spec.grid(shape, current) == grid == launch.grid
    assert {k: kwargs.get(k, S.triton_defaults().get(k)) for k in spec.knobs} == current
    run, outs = S.prepare(spec, shape, pristine, current)
    run()
    for got, want in zip(outs, spec.outputs(inputs, result), strict=True):
        assert torch.equal(_bits(got.tensor), _bits(want.tensor))


@needs_triton
def test_current_config_is_read_from_the_wrapper_not_rederived(
        dev: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from sglang_shims.kernels.ops.fp8_quant import launch as fp8_launch
    from sglang_shims.kernels.ops.norm import launch as norm_launch
    from sglang_shims.kernels.runtime import next_pow2

    shape = S.Shape(3, 256)
    quant = S.OPS["sgl_per_token_quant_fp8"]
    # a row wider than the wrapper's step (2 * TILE columns): the step follows TILE
    before = _current(quant, S.Shape(2, 16384), dev)
    monkeypatch.setattr(fp8_launch, "TILE", 1024)
    after = _current(quant, S.Shape(2, 16384), dev)
    assert before["BLOCK_N"] == 8192 and after["BLOCK_N"] == 2048

    norm = S.OPS["rmsnorm"]
    before = _current(norm, shape, dev)
    monkeypatch.setattr(norm_launch, "next_pow2", lambda n: 2 * next_pow2(n))
    after = _current(norm, shape, dev)
    assert after["BLOCK_N"] == 2 * before["BLOCK_N"]


@needs_triton
def test_check_drops_wrong_outputs_and_failed_launches(dev: str) -> None:
    norm, shape = S.OPS["rmsnorm"], S.Shape(3, 256)
    pristine = _inputs(norm, shape, dev)
    ref = S.reference(norm, pristine)
    current = _current(norm, shape, dev)
    run, why = S.check(norm, shape, pristine, ref, current)
    assert run is not None and why == ""
    # half the row in a single pass: the mean of squares misses half the values
    run, why = S.check(norm, shape, pristine, ref, {**current, "BLOCK_N": current["BLOCK_N"] // 2})
    assert run is None and "outside" in why
    run, why = S.check(norm, shape, pristine, ref, {**current, "BLOCK_M": 3})  # not a power of 2
    assert run is None and why.startswith("launch failed")

    # bit-exact path: a grid one program wide leaves columns unwritten (NaN-filled first)
    moe = S.OPS["moe_sum_reduce"]
    pristine = _inputs(moe, shape, dev)
    ref = S.reference(moe, pristine)
    current = _current(moe, shape, dev)
    narrow = dataclasses.replace(moe, grid=lambda s, c: (s.tokens, 1))
    run, why = S.check(narrow, shape, pristine, ref, {**current, "BLOCK_H": 128})
    assert run is None and "bit-exact" in why
    with pytest.raises(S.SweepError, match="not a knob"):
        S.check(moe, shape, pristine, ref, {**current, "BLOCK_X": 4})


def test_mismatch_tolerances() -> None:
    ref = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.bfloat16)
    one_step = (ref.view(torch.int16) + torch.tensor([1, 0, 0, 0], dtype=torch.int16)
                ).view(torch.bfloat16)  # the next bf16 value above 1
    assert S.mismatch(one_step, ref, False, 2.0**-7, 0.0) == ""
    assert "1 of 4 values differ" in S.mismatch(one_step, ref, True, 2.0**-7, 0.0)
    far = ref.clone()
    far[1] = -2.125  # 4 bf16 steps at 2
    assert "1 of 4 values outside" in S.mismatch(far, ref, False, 2.0**-7, 0.0)
    assert S.mismatch(far, ref, False, 2.0**-7, 2.0**-4) == ""  # 0.1875 of slack at max 3
    nan = ref.clone()
    nan[2] = float("nan")
    assert "1 of 4" in S.mismatch(nan, ref, False, 1.0, 1.0)
    fp8 = ref.float().to(torch.float8_e4m3fn)
    assert S.mismatch(fp8, fp8.clone(), True, 0.0, 0.0) == ""
    assert "got" in S.mismatch(ref[:2], ref, True, 0.0, 0.0)


@needs_triton
def test_plan_covers_each_candidate_once_in_the_sweeps_order(dev: str) -> None:
    specs = [S.OPS["rmsnorm"], S.OPS["fp8_scaled_mm"]]
    shapes = [S.Shape(3, 256), S.Shape(65, 128)]
    jobs = S.plan(specs, shapes, False, dev, chunk=4)
    for spec in specs:
        for shape in shapes:
            configs = S.candidates_for(spec, shape, False, dev)
            mine = [j for j in jobs if j[:3] == (spec.name, shape.tokens, shape.hidden)]
            covered = [c for j in mine for c in configs[j[3]:j[3] + j[4]]]
            assert covered == configs


@needs_triton
def test_shapes_an_op_refuses_are_listed_not_run(dev: str, tmp_path: Path) -> None:
    # the model widths include 1000, which no 128-wide group divides: the group quantiser
    # refuses it (its public op raises), the per-token one takes it
    group, token = S.OPS["sgl_per_token_group_quant_fp8"], S.OPS["sgl_per_token_quant_fp8"]
    shapes = [S.Shape(2, 256), S.Shape(2, 1000)]
    assert {job[2] for job in S.plan([group], shapes, True, dev)} == {256}
    fake = FakeTime()
    result = S.sweep([group, token], shapes, quick=True, budget_s=1e9, bench=fake.bench,
                     aot=None, device=dev, clock=fake.clock)
    assert [(r.op, r.hidden) for r in result.rows] == [
        (group.name, 256), (token.name, 256), (token.name, 1000)]
    assert all(not r.error for r in result.rows) and not result.not_run
    assert result.not_applicable == [
        (group.name, "2x1000 g128", "width not a multiple of 128")]
    assert "not applicable (1): sgl_per_token_group_quant_fp8 2x1000 g128 (width not a " \
           "multiple of 128)" in "\n".join(S.footer_lines(result))
    S.write_json(tmp_path / "s.json", result, {})
    assert json.loads((tmp_path / "s.json").read_text())["not_applicable"] == [
        {"op": group.name, "shape": "2x1000 g128", "reason": "width not a multiple of 128"}]


class FakeTime:
    """A clock that moves only when something is timed: one second per timing."""

    def __init__(self, times: list[float] | None = None) -> None:
        self.now = 0.0
        self.times = times
        self.calls = 0

    def clock(self) -> float:
        return self.now

    def bench(self, fn: Callable[[], object]) -> float:
        fn()
        self.now += 1.0
        self.calls += 1
        if self.times is None:
            return 10.0
        return self.times[(self.calls - 1) % len(self.times)]


@needs_triton
def test_budget_ends_the_sweep_cleanly(dev: str) -> None:
    specs = [S.OPS["moe_sum_reduce"], S.OPS["gelu_tanh_and_mul"], S.OPS["rmsnorm"]]
    shapes = [S.Shape(3, 256), S.Shape(2, 128)]
    fake = FakeTime()
    seen: list[Any] = []
    lines: list[str] = []
    result = S.sweep(specs, shapes, quick=True, budget_s=7, bench=fake.bench, aot=None,
                     device=dev, clock=fake.clock, on_row=seen.append, progress=lines.append)
    assert result.stopped and result.not_run
    done = [(r.op, r.shape) for r in result.rows]
    assert done == [(r.op, r.shape) for r in seen]
    every = [(s.name, s.label(sh)) for s in specs for sh in shapes]
    assert sorted(done + result.not_run) == sorted(every)
    assert all(r.current_us is not None for r in result.rows)  # today's: always timed
    assert any(r.partial for r in result.rows)
    # a started shape times the public op and today's config (2 s here) past its share
    assert result.elapsed_s <= 7 + 2
    assert any(line.startswith("[sweep] moe_sum_reduce: done") for line in lines)


@needs_triton
def test_rows_take_today_first_and_the_fastest_as_best(dev: str) -> None:
    spec, shape = S.OPS["moe_sum_reduce"], S.Shape(3, 256)
    n = len(S.candidates_for(spec, shape, True, dev))
    # timings in call order: the public op, today's config, then each candidate
    times = [7.0, 5.0] + [6.0 + i for i in range(n - 1)]
    times[2 + (n - 1) // 2] = 3.0
    fake = FakeTime(times)
    result = S.sweep([spec], [shape], quick=True, budget_s=1e9, bench=fake.bench, aot=None,
                     device=dev, clock=fake.clock)
    (row,) = result.rows
    assert row.public_us == 7.0 and row.current_us == 5.0
    assert len(row.timings) == row.candidates == n and not row.partial
    best = row.best
    assert best is not None and best[1] == 3.0
    assert best[0] == row.timings[1 + (n - 1) // 2][0] != row.current


def _synthetic() -> tuple[Any, dict[str, Any]]:
    cur = {"BLOCK_M": 1, "BLOCK_N": 8192, "num_warps": 8}
    wide = {"BLOCK_M": 1, "BLOCK_N": 8192, "num_warps": 16}
    widest = {"BLOCK_M": 1, "BLOCK_N": 8192, "num_warps": 32}
    gemm = {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 4,
            "num_stages": 3}
    rows = [
        S.Row("rmsnorm", "1x8192", 1, 8192, current=cur, candidates=3,
              timings=[(cur, 2.6), (wide, 2.0), (widest, 2.4)], aot_us=2.1,
              dropped=[({"BLOCK_M": 2, "BLOCK_N": 8192, "num_warps": 1}, "launch failed: X")]),
        S.Row("fp8_scaled_mm", "1x4096x4096 token x channel", 1, 4096, current=gemm,
              candidates=40, timings=[(gemm, 11.3)], partial=True, aot_note="not in this kernel"),
        S.Row("moe_sum_reduce", "1x8x4096", 1, 4096, current={"BLOCK_H": 1024, "num_warps": 4},
              error="grid mismatch: x"),
    ]
    result = S.Result(rows=rows, not_run=[("moe_sum_reduce", "8x8x4096")], elapsed_s=12.0,
                      stopped="budget of 10 s spent")
    return result, {"date": "2026-12-02", "GPU": "test"}


def test_markdown_report() -> None:
    result, meta = _synthetic()
    text = S.render_markdown(result, meta)
    lines = text.splitlines()
    norm = next(line for line in lines if line.startswith("| rmsnorm |"))
    cells = [c.strip() for c in norm.strip("|").split("|")]
    assert cells == ["rmsnorm", "1x8192", "M=1 N=8192 warps=8", "2.6", "M=1 N=8192 warps=16",
                     "2.0", "2.1", f"{2.1 / 2.6:.2f}x", f"{2.1 / 2.0:.2f}x", "3/3"]
    gemm = next(line for line in lines if line.startswith("| fp8_scaled_mm |"))
    assert "not in this kernel" in gemm and "1/40 (budget)" in gemm
    assert "error: grid mismatch" in next(line for line in lines if "moe_sum_reduce |" in line)
    assert "rows where the best config is > 3% faster than today's: 1 of 3" in text
    assert "launch failed: X" in text and "8x8x4096" in text and "budget of 10 s spent" in text
    assert lines.index(S.TABLE_HEAD.splitlines()[0]) < lines.index(norm)


def test_json_report(tmp_path: Path) -> None:
    result, meta = _synthetic()
    path = tmp_path / "sweep.json"
    S.write_json(path, result, meta)
    data = json.loads(path.read_text())
    assert data["meta"] == meta
    first = data["rows"][0]
    assert first["best"] == {"BLOCK_M": 1, "BLOCK_N": 8192, "num_warps": 16}
    assert (first["best_us"], first["current_us"], first["aot_us"]) == (2.0, 2.6, 2.1)
    assert [t["us"] for t in first["timings"]] == [2.6, 2.0, 2.4]
    assert first["dropped"][0]["reason"] == "launch failed: X"
    assert data["rows"][1]["partial"] is True and data["rows"][2]["best"] is None
    assert data["not_run"] == [{"op": "moe_sum_reduce", "shape": "8x8x4096"}]
    assert not list(tmp_path.glob("*.tmp"))


def test_command_line() -> None:
    assert S.parse_args([]).op_names == list(S.DEFAULT_OPS)
    assert set(S.DEFAULT_OPS) <= set(S.OPS)
    assert S.parse_args(["--ops", "rmsnorm, fp8_scaled_mm"]).op_names == ["rmsnorm",
                                                                         "fp8_scaled_mm"]
    with pytest.raises(SystemExit):
        S.parse_args(["--ops", "rmsnorm,nope"])
    default = S.parse_args(["--shapes", "decode"])
    assert S.shapes("decode", default.tokens, default.hidden) == S.shapes("decode")
    assert {sh.hidden for sh in S.shapes("decode")} == set(S.BENCH.HIDDEN)
    picked = S.parse_args(["--tokens", "1,32", "--hidden", "models"])
    models = S.BENCH.model_shapes().hidden
    assert 4608 in models and 5120 in models
    assert S.shapes("all", picked.tokens, picked.hidden) == [
        S.Shape(t, h) for t in (1, 32) for h in models]
    assert S.parse_args(["--hidden", "5120"]).hidden == (5120,)
    for bad in (["--hidden", "51x20"], ["--tokens", "0,1"], ["--tokens", "a"]):
        with pytest.raises(SystemExit):
            S.parse_args(bad)
    if not HAS_CUDA:
        assert S.main(["--ops", "rmsnorm"]) == 2


def test_the_aot_column_builds_cases_at_the_sweeps_widths() -> None:
    """The AOT column times kernels.py's case for the same label, so it builds the cases at
    the sweep's own token counts and widths (a model width has no case among the default
    ones)."""
    col = S.AotColumn([S.Shape(t, h) for t in (1, 32) for h in (5120, 4608)])
    assert (col.shapes.tokens, col.shapes.hidden, col.shapes.act) == ((1, 32), (4608, 5120),
                                                                      (4608, 5120))
    assert S.AotColumn().shapes == S.BENCH.Shapes()
