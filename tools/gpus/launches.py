"""Every kernel launch the fallback's wrappers can choose, per GPU, found by calling them.

Why by calling: the launch a wrapper makes (kernel, block sizes, warps, stages, the
dtypes in the signature, the integer sizes Triton specialises on) is decided by the
wrapper and its launch rule together, so reading either alone would miss what the other
adds.  Each public op is called on CPU tensors of the shapes below inside
:func:`sglang_shims.kernels.compile_lock.recording` with a :class:`Device` assumed: nothing
runs, every launch is recorded, and the rules choose for that GPU.

The shapes are the models' (``benchmarks/model_shapes.toml``): hidden and intermediate
widths (the latter also split by tensor parallelism, as each rank sees it), head sizes,
(experts, top-k) pairs and grouped gates, attention heads, plus the odd widths; rows 1, 32,
33 (either side of the decode/prefill switch) and 4096; each dtype an op accepts; the
options that select another kernel body (residual, Gemma weight, activation, bias,
renormalisation, padding, ...); and programmatic dependent launch on the GPUs that have it.

What reaches the compiler is the variant: the kernel with the signature Triton derives from
the arguments (dtypes, and which integers are 1 or multiples of 16), its constexprs and its
options.  Launches with equal variants compile to the same binary, so they are compiled
once (:func:`variants`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from sglang_shims.kernels import compile_lock, runtime
from sglang_shims.kernels.device import Device
from sglang_shims.kernels.ops.fp8_quant.launch import pads_a_quarter
from sglang_shims.kernels.runtime import next_pow2

from .limits import REPO, read_toml

SHAPES = REPO / "benchmarks" / "model_shapes.toml"
ROWS = (1, 32, 33, 4096)
TENSOR_PARALLEL = (1, 2, 4, 8)
EDGES = (32768, 40000)
"""Rows at the norm's single-pass limit and beyond it: no model has them, but the wrapper
chooses their configurations (the widest single-pass tile, the loop)."""
BLOCK_SIZES = (16, 64)
"""``moe_align_block_size``'s block sizes: sglang's fused-MoE ``BLOCK_SIZE_M`` runs 16-128."""


@dataclass(frozen=True)
class Widths:
    """What the calls are made at (see the module docstring)."""

    hidden: tuple[int, ...]
    intermediate: tuple[int, ...]
    head_dims: tuple[int, ...]
    routing: tuple[tuple[int, int], ...]
    """(experts, top-k)."""
    gates: tuple[tuple[int, int, int, int, int], ...]
    """(experts, groups, kept groups, top-k, fused shared experts)."""
    rope: tuple[tuple[int, int, int, int], ...]
    """(query heads, key heads, head size, rotary dim) a rank sees."""
    rows: tuple[int, ...] = ROWS


def model_widths(path: Path = SHAPES) -> Widths:
    """The widths of every model in ``path``, as each tensor-parallel rank sees them."""
    data = read_toml(path)
    widths, models = data["widths"], data["model"]
    odd = tuple(widths["odd"])
    inter = {w // tp for w in widths["intermediate"] for tp in TENSOR_PARALLEL if w % tp == 0}
    routing, gates, rope = set(), set(), set()
    for m in models:
        if m.get("num_experts"):
            experts, k = m["num_experts"], m["num_experts_per_tok"]
            routing.add((experts, k))
            if m.get("n_group"):
                groups = m["n_group"]
                kept = m.get("topk_group", groups)
                gates.add((experts, groups, kept, k, 0))
                if m.get("n_shared_experts"):
                    gates.add((experts, groups, kept, k + 1, 1))
        heads, kv, head = m["num_attention_heads"], m["num_key_value_heads"], m["head_dim"]
        rotary = m.get("rotary_dim", head)
        for tp in TENSOR_PARALLEL:
            if heads % tp:
                continue
            if m.get("v_head_dim"):  # MLA: the rope part of q, one shared key head
                rope.add((heads // tp, 1, rotary, rotary))
            else:
                rope.add((heads // tp, max(1, kv // tp), head, rotary))
    return Widths(hidden=classes({*widths["hidden"], *odd, *EDGES}),
                  intermediate=classes({*inter, *odd}),
                  head_dims=classes(widths["head_dim"]),
                  routing=tuple(sorted(routing)), gates=tuple(sorted(gates)),
                  rope=tuple(sorted(rope)))


def classes(widths: Iterable[int]) -> tuple[int, ...]:
    """The smallest width of each class that launches the same variants: equal next power
    of two (the launch rules read a width through ``next_pow2``, and their thresholds are
    powers of two), the same answer to whether that power pads the width by more than a
    quarter (the per-token quantiser's one switch inside a class), and equal remainder mod
    16 (what Triton specialises a size, and every stride that is a multiple of it, on).
    ``tests/kernels`` checks the claim: the widths left out add no variant."""
    seen: dict[tuple[int, bool, int], int] = {}
    for w in sorted(widths):
        seen.setdefault((next_pow2(w), pads_a_quarter(w), w % 16), w)
    return tuple(sorted(seen.values()))


Call = tuple[str, Callable[[], object]]


def _calls(w: Widths) -> Iterator[Call]:
    """``(label, call)`` for every op call at every shape, dtype and option; each call's
    tensors are made when it is reached, and dropped after it."""
    import torch

    from sglang_shims import kernels as K

    e = torch.empty
    floats = (torch.float16, torch.bfloat16, torch.float32)
    for rows in w.rows:
        for dt in floats:
            weights = (dt, torch.float32) if dt != torch.float32 else (dt,)
            for hidden in (*w.hidden, *w.head_dims):
                for wdt in weights:
                    x, wt = e(rows, hidden, dtype=dt), e(hidden, dtype=wdt)
                    tag = f"{dt} rows={rows} hidden={hidden} weight={wdt}"
                    yield f"rmsnorm {tag}", partial(K.rmsnorm, x, wt)
                    yield f"gemma_rmsnorm {tag}", partial(K.gemma_rmsnorm, x, wt)
                    yield f"fused_add_rmsnorm {tag}", partial(
                        K.fused_add_rmsnorm, x, torch.empty_like(x), wt)
                    yield f"gemma_fused_add_rmsnorm {tag}", partial(
                        K.gemma_fused_add_rmsnorm, x, torch.empty_like(x), wt)
            for d in w.intermediate:
                x = e(rows, 2 * d, dtype=dt)
                for name in ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul"):
                    yield f"{name} {dt} rows={rows} d={d}", partial(getattr(K, name), x)
            yield from _rope_calls(w, rows, dt)
            yield from _moe_calls(w, rows, dt)
            yield from _fp8_calls(w, rows, dt)
        yield from _align_calls(w, rows)


def _rope_calls(w: Widths, rows: int, dt: Any) -> Iterator[Call]:
    import torch

    from sglang_shims import kernels as K

    e = torch.empty
    pos = torch.zeros(rows, dtype=torch.int64)
    for heads, kv, head, rotary in w.rope:
        cache = e(8, rotary, dtype=torch.float32)
        for neox in (True, False):
            for save in (False, True):
                arg = None
                if save:
                    arg = K.FusedSetKVBufferArg(
                        value=e(rows, kv * head, dtype=dt), k_buffer=e(rows, kv * head, dtype=dt),
                        v_buffer=e(rows, kv * head, dtype=dt), k_scale=None, v_scale=None,
                        cache_loc=torch.zeros(rows, dtype=torch.int64))
                tag = (f"rope {dt} rows={rows} heads={heads}/{kv} head={head} rotary={rotary} "
                       f"neox={neox} save_kv={save}")
                yield tag, partial(K.apply_rope_with_cos_sin_cache_inplace, pos,
                                   e(rows, heads * head, dtype=dt), e(rows, kv * head, dtype=dt),
                                   head, cache, neox, arg)


def _moe_calls(w: Widths, rows: int, dt: Any) -> Iterator[Call]:
    import torch

    from sglang_shims import kernels as K

    e, i32 = torch.empty, torch.int32
    for experts, k in w.routing:
        logits = e(rows, experts, dtype=dt)
        for renorm in (False, True):
            for softcap in (0.0, 30.0):
                for bias in (None, e(experts, dtype=torch.float32)):
                    tag = (f"topk_softmax {dt} rows={rows} experts={experts} k={k} "
                           f"renormalize={renorm} softcap={softcap} bias={bias is not None}")
                    yield tag, partial(K.topk_softmax, e(rows, k), e(rows, k, dtype=i32), logits,
                                       renorm, softcap, bias)
        yield (f"topk_softmax legacy {dt} rows={rows} experts={experts} k={k}",
               partial(K.topk_softmax, e(rows, k), e(rows, k, dtype=i32), e(rows, k, dtype=i32),
                       logits))
    for experts, groups, kept, k, shared in w.gates:
        for scale in (False, True):
            tag = (f"moe_fused_gate {dt} rows={rows} experts={experts} groups={groups}/{kept} "
                   f"k={k} shared={shared} scale_output={scale}")
            yield tag, partial(K.moe_fused_gate, e(rows, experts, dtype=dt),
                               e(experts, dtype=dt), groups, kept, k, shared, 2.5, scale)
    for k in sorted({k for _experts, k in w.routing}):  # moe_sum reads no expert count
        for hidden in w.hidden:
            x, out = e(rows, k, hidden, dtype=dt), e(rows, hidden, dtype=dt)
            tag = f"{dt} rows={rows} topk={k} hidden={hidden}"
            yield f"moe_sum {tag}", partial(K.moe_sum, x, out)
            yield f"moe_sum_reduce {tag}", partial(K.moe_sum_reduce, x, out, 2.5)


def _align_calls(w: Widths, rows: int) -> Iterator[Call]:
    import torch

    from sglang_shims import kernels as K

    e, i32 = torch.empty, torch.int32
    for experts, k in w.routing:
        buckets = experts + 1  # sglang passes num_experts + 1: bucket 0 takes the -1 ids
        for ids_dt in (torch.int32, torch.int64):
            ids = e(rows, k, dtype=ids_dt)
            for bs in BLOCK_SIZES:
                most = min(ids.numel() * bs, ids.numel() + buckets * (bs - 1))
                for pad in (False, True):
                    for ignore in (False, True):
                        tag = (f"moe_align_block_size {ids_dt} rows={rows} experts={experts} "
                               f"k={k} block={bs} pad={pad} ignore_invalid={ignore}")
                        yield tag, partial(
                            K.moe_align_block_size, ids, buckets, bs, e(most, dtype=i32),
                            e(-(-most // bs), dtype=i32), e(1, dtype=i32),
                            e(buckets + 1, dtype=i32), pad, ignore)


def _fp8_calls(w: Widths, rows: int, dt: Any) -> Iterator[Call]:
    import torch

    from sglang_shims import kernels as K

    e, f32, fp8 = torch.empty, torch.float32, torch.float8_e4m3fn
    for width in sorted({*w.hidden, *w.intermediate} - set(EDGES)):
        x, q = e(rows, width, dtype=dt), e(rows, width, dtype=fp8)
        tag = f"{dt} rows={rows} width={width}"
        if width % 128 == 0:
            for ue8m0 in (False, True):
                yield (f"sgl_per_token_group_quant_8bit {tag} group=128 ue8m0={ue8m0}",
                       partial(K.sgl_per_token_group_quant_8bit, x, q, e(rows, width // 128),
                               128, 1e-10, -448.0, 448.0, ue8m0))
        yield f"sgl_per_token_quant_fp8 {tag}", partial(K.sgl_per_token_quant_fp8, x, q, e(rows))
        for static in (False, True):
            yield (f"sgl_per_tensor_quant_fp8 {tag} static={static}",
                   partial(K.sgl_per_tensor_quant_fp8, x, q, e(1), static))
    if dt == f32:
        return
    odd = min(set(w.hidden) - {h for h in w.hidden if h % 16 == 0})
    for n in w.hidden:
        # N and K reach the kernel as sizes only (the tiles follow M): each width once as
        # both, and against an odd one, covers every specialisation Triton makes of them.
        for k in dict.fromkeys((n, odd)):
            if n in EDGES or k in EDGES:
                continue
            a, b = e(rows, k, dtype=fp8), e(n, k, dtype=fp8).t()
            for bias in (None, e(n, dtype=dt)):
                yield (f"fp8_scaled_mm out={dt} m={rows} n={n} k={k} bias={bias is not None}",
                       partial(K.fp8_scaled_mm, a, b, e(rows, 1, dtype=f32), e(n, 1, dtype=f32),
                               dt, bias))
            kb, nb = -(-k // 128), -(-n // 128)
            yield (f"fp8_blockwise_scaled_mm out={dt} m={rows} n={n} k={k}",
                   partial(K.fp8_blockwise_scaled_mm, a, b, e(rows, kb, dtype=f32),
                           e(kb, nb, dtype=f32), dt))


@dataclass
class Variant:
    """One compiled kernel: what ``triton.compile`` is given."""

    module: str
    kernel: str
    signature: dict[str, str]
    constexprs: dict[str, Any]
    """By parameter name (``ASTSource`` takes them by position: :meth:`source`)."""
    attrs: dict[str, list[list[Any]]]
    options: dict[str, Any]
    calls: list[str] = field(default_factory=list)
    """The op calls that launch it (labels)."""
    _id: str = ""

    @property
    def id(self) -> str:
        """A short, stable name for the variant (what changes the binary, hashed)."""
        if not self._id:
            text = json.dumps([self.module, self.kernel, self.signature, self.constexprs,
                               self.attrs, self.options], sort_keys=True, default=str)
            self._id = hashlib.sha256(text.encode()).hexdigest()[:12]
        return self._id

    @property
    def name(self) -> str:
        return f"{self.module.rsplit('.', 2)[-2]}.{self.kernel}"

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "kernel": self.name, "constexprs": self.constexprs,
                "options": self.options, "signature": self.signature,
                "calls": self.calls[:3], "n_calls": len(self.calls)}


def _plain(value: Any) -> Any:
    """Triton's constexpr and attribute values as JSON-able Python."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


class Specialiser:
    """Triton's own reading of a launch's arguments (``JITFunction.run`` does the same
    before it compiles): the signature, constexprs and divisibility attributes."""

    def __init__(self, cc: int) -> None:
        from triton.backends.compiler import GPUTarget  # type: ignore[import-not-found, import-untyped, unused-ignore]
        from triton.compiler import make_backend  # type: ignore[import-not-found, import-untyped, unused-ignore]

        self.backend = make_backend(GPUTarget("cuda", cc, 32))
        self._binders: dict[int, Any] = {}
        self._seen: dict[tuple[Any, ...], Variant] = {}

    def variant(self, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Variant:
        from triton.runtime.jit import create_function_from_signature  # type: ignore[import-not-found, import-untyped, unused-ignore]

        binder = self._binders.get(id(kernel))
        if binder is None:
            binder = create_function_from_signature(kernel.signature, kernel.params,
                                                    self.backend)
            self._binders[id(kernel)] = binder
        bound, specialization, options = binder(*args, **kwargs)
        names = [p.name for p in kernel.params]
        given = {k: v for k, v in kwargs.items() if k not in names}
        # What Triton's own cache key is made of: equal keys, equal binaries.
        key = (id(kernel), tuple(specialization), tuple(sorted(given.items())))
        known = self._seen.get(key)
        if known is not None:
            return known
        _opts, signature, constexprs, attrs = kernel._pack_args(
            self.backend, kwargs, bound, specialization, options)
        v = Variant(
            module=kernel.fn.__module__, kernel=kernel.fn.__name__, signature=dict(signature),
            constexprs={names[path[0]]: _plain(v) for path, v in constexprs.items()},
            attrs={names[path[0]]: _plain(v) for path, v in attrs.items()},
            options={k: _plain(v) for k, v in sorted(given.items())})
        self._seen[key] = v
        return v


def record(dev: Device, pdl: bool, widths: Widths,
           only: Callable[[str], bool] = lambda label: True) -> Iterator[tuple[str, Any]]:
    """``(call label, launch)`` for every call, launched for ``dev`` (``pdl``: with
    programmatic dependent launch where the wrappers would use it).  One call's tensors
    at a time: they are large (4096 rows of the widest widths), if never touched.

    An op whose first call launches nothing takes its plain-PyTorch path on ``dev`` (the FP8
    ops below compute capability 8.9): its other calls are not made, since that path would
    compute for real, on the CPU, at every shape."""
    shipped = runtime.PDL_SHIPPED
    runtime.PDL_SHIPPED = pdl
    seen: set[str] = set()
    on_torch: set[str] = set()
    try:
        for label, call in _calls(widths):
            op = label.split()[0]
            if not only(label) or op in on_torch:
                continue
            with compile_lock.recording(dev) as launches:
                call()
            if not launches and op not in seen:
                on_torch.add(op)
            seen.add(op)
            for launch in launches:
                yield label, launch
            launches.clear()
    finally:
        runtime.PDL_SHIPPED = shipped


def variants(dev: Device, widths: Widths, specialiser: Specialiser,
             only: Callable[[str], bool] = lambda label: True) -> list[Variant]:
    """The distinct compiled kernels the wrappers launch for ``dev``, PDL off and, where
    ``dev`` has it, on."""
    found: dict[str, Variant] = {}
    for pdl in (False, True) if dev.pdl else (False,):
        for label, launch in record(dev, pdl, widths, only):
            v = specialiser.variant(launch.kernel, launch.args, launch.kwargs)
            found.setdefault(v.id, v).calls.append(label)
    return sorted(found.values(), key=lambda v: (v.name, v.id))
