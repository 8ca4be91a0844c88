"""The single-program ``moe_align_block_size`` (decode sizes) against an exact reference.

Why a file of its own: the one-launch kernel is a second implementation of the same op,
picked by size, so it needs (1) the op's full semantics checked on inputs that really
take it, (2) proof that the size dispatch sends small inputs to it and large ones to
the chunks, and (3) proof that the Triton path never reads a device value on the
host, which would break sglang's CUDA graph capture of the decode step.

(1) ``reference`` below is written in plain Python lists from the module docstring of
``sglang_shims.kernels.ops.moe_align``; every output buffer starts full of a sentinel, and
the whole buffer is compared, so a slot written when it must not be (padding without
``pad_sorted_token_ids``, ``experts_ids`` past the padded total, ``cumsum_buffer`` past
the total) fails as surely as a wrong value.  Each call also records the launches and
fails unless the one-launch kernel ran.

Without a GPU the kernels run under Triton's interpreter (``TRITON_INTERPRET=1``, see
tests/support/kernels.py); 15-20 s on the 2-core VM.  On a GPU the same tests run compiled,
and ``test_one_launch_replays_in_a_cuda_graph`` also captures the op in a CUDA graph.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims.kernels.ops import moe_align as A
from sglang_shims.kernels.ops.moe_align import launch as L

from ..support.align import align_buffers, align_reference, sort_within_buckets
from ..support.kernels import has_cuda, select_backend, triton_skip

HAS_CUDA = has_cuda()
NO_TRITON = triton_skip()
pytestmark = pytest.mark.skipif(bool(NO_TRITON), reason=NO_TRITON or "triton is here")

ONE = ["moe_align_one"]
ATOMIC = ["moe_align_one_atomic"]
THREE = ["moe_align_count", "moe_align_scan", "moe_align_place"]
TWO = ["moe_align_count", "moe_align_scan_place"]


def chunked(numel: int, n_buckets: int) -> list[str]:
    """The launches of the chunked path for ``numel`` routed tokens."""
    return TWO if L.fused(numel, n_buckets) else THREE


@pytest.fixture(autouse=True)
def one_launch_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The single programs at every size up to :data:`L.ONE_LAUNCH_ON` routed tokens, the
    sorting one unless a test asks for the other (the measured rule has tests of its own):
    each is checked on more than the sizes it ships for."""
    monkeypatch.setattr(L, "ONE_LAUNCH_MAX_ENTRIES", L.ONE_LAUNCH_ON)
    monkeypatch.setattr(L, "ATOMIC_ONE_LAUNCH", False)


@contextmanager
def recorded_launches(run_kernels: bool = True) -> Iterator[list[str]]:
    """The names of the kernels the op launches; with ``run_kernels=False`` only the
    dispatch decision is made (the kernels do not run)."""
    names: list[str] = []
    real = A.launch_kernel

    def spy(key: Hashable, kernel: Any, grid: Any, *args: Any, **kwargs: Any) -> None:
        assert isinstance(key, tuple)
        names.append(str(key[0]))
        if run_kernels:
            real(key, kernel, grid, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(A, "launch_kernel", spy)
        yield names


@contextmanager
def triton_backend() -> Iterator[str]:
    with pytest.MonkeyPatch.context() as mp:
        yield select_backend("triton", mp, HAS_CUDA)


def align_and_compare(ids: torch.Tensor, n_buckets: int, bs: int, pad: bool,
                      ignore_invalid: bool, want_launches: list[str] = ONE,
                      slack: int = 0, any_order: bool = False) -> None:
    """Run the op on sentinel buffers; compare every buffer whole with the reference.  With
    ``any_order`` the tokens of a bucket may come in any order, but must fill the first
    slots of its share (the padding after them exactly as the reference has it)."""
    bufs = align_buffers(ids.numel(), n_buckets, bs, str(ids.device), slack)
    before = [b.tolist() for b in bufs]
    with recorded_launches() as names:
        A.moe_align_block_size(ids, n_buckets, bs, *bufs, pad, ignore_invalid)
    assert names == want_launches
    flat = ids.flatten().tolist()
    want = align_reference(flat, n_buckets, bs, pad, ignore_invalid, before)
    got = [b.tolist() for b in bufs]
    if any_order:
        sort_within_buckets(got, want, len(flat))
    for label, found, expected in zip(("sorted_token_ids", "experts_ids",
                                       "num_tokens_post_pad", "cumsum_buffer"),
                                      got, want, strict=True):
        assert found == expected, label


# ------------------------------------------------------------------ (1) the semantics


@st.composite
def align_inputs(draw: st.DrawFn) -> tuple[list[list[int]], int, int, bool, bool, bool]:
    """Decode-sized routing: 1..64 tokens x top 1..8 over 2..257 buckets, with the -1 ids
    of expert parallelism and ids on both sides of the valid range (int64 ones past the
    int32 range too, which must not wrap into a bucket)."""
    tokens = draw(st.integers(1, 64))
    k = draw(st.integers(1, 8))
    n_buckets = draw(st.integers(2, 257))
    wide = draw(st.booleans())  # int64 ids
    valid = st.integers(-1, n_buckets - 2)
    junk = [st.integers(-50, -2), st.integers(n_buckets - 1, n_buckets + 50)]
    if wide:
        junk += [st.sampled_from([2**32 + 1, 2**32 - 1, -(2**32) + 3, 2**31, 2**40 + 1])]
    ident = st.one_of(valid, valid, valid, *junk)
    # few distinct experts at times, so that buckets hold many tokens across chunks
    if draw(st.booleans()):
        ident = st.sampled_from(draw(st.lists(ident, min_size=1, max_size=4)))
    rows = draw(st.lists(st.lists(ident, min_size=k, max_size=k), min_size=tokens,
                         max_size=tokens))
    bs = draw(st.sampled_from([1, 16, 64, 128]))
    return rows, n_buckets, bs, draw(st.booleans()), draw(st.booleans()), wide


@settings(max_examples=150 if HAS_CUDA else 12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=align_inputs())
def test_one_launch_matches_reference(case: tuple[list[list[int]], int, int, bool, bool,
                                                  bool]) -> None:
    """150 examples on a GPU, 12 under the interpreter (its sort and scans run element by
    element there, 0.7 s an example: 60 took 23 s of CI)."""
    rows, n_buckets, bs, pad, ignore_invalid, wide = case
    with triton_backend() as dev:
        ids = torch.tensor(rows, dtype=torch.int64 if wide else torch.int32, device=dev)
        align_and_compare(ids, n_buckets, bs, pad, ignore_invalid)


@settings(max_examples=100 if HAS_CUDA else 10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=align_inputs())
def test_atomic_one_launch_matches_reference(case: tuple[list[list[int]], int, int, bool,
                                                         bool, bool]) -> None:
    """The single program that ranks by atomic increments (above 32 routed tokens): the
    same inputs, the tokens of a bucket in any order."""
    rows, n_buckets, bs, pad, ignore_invalid, wide = case
    with triton_backend() as dev, pytest.MonkeyPatch.context() as mp:
        mp.setattr(L, "ATOMIC_ONE_LAUNCH", True)
        ids = torch.tensor(rows, dtype=torch.int64 if wide else torch.int32, device=dev)
        align_and_compare(ids, n_buckets, bs, pad, ignore_invalid,
                          want_launches=ATOMIC, any_order=True)


def test_any_order_still_checks_the_slots() -> None:
    """The order-blind comparison above fails a token moved into its bucket's padding or
    into another bucket, and a lost token."""
    ids = torch.tensor([2, 0, 2, 1, 2], dtype=torch.int32)
    bufs = align_buffers(5, 4, 4, "cpu")
    want = align_reference(ids.tolist(), 4, 4, True, False, [b.tolist() for b in bufs])
    real = A.moe_align_block_size

    def wrong(move: Callable[[list[int]], None]) -> Callable[..., None]:
        def run(ids: torch.Tensor, n: int, bs: int, *out: torch.Tensor) -> None:
            rows = list(want[0])
            move(rows)
            for buf, values in zip(out[:4], (rows, *want[1:]), strict=True):
                buf.copy_(torch.tensor(values, dtype=torch.int32))
        return run

    def to_padding(rows: list[int]) -> None:  # bucket 3 (expert 2) starts at slot 8
        rows[8], rows[11] = rows[11], rows[8]

    def across(rows: list[int]) -> None:  # bucket 2's token and bucket 3's swapped
        rows[4], rows[8] = rows[8], rows[4]

    def lost(rows: list[int]) -> None:
        rows[9] = 5

    def reordered(rows: list[int]) -> None:  # inside bucket 3: allowed
        rows[8], rows[10] = rows[10], rows[8]

    for move, ok in ((reordered, True), (to_padding, False), (across, False), (lost, False)):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(A, "moe_align_block_size", wrong(move))
            if ok:
                align_and_compare(ids, 4, 4, True, False, want_launches=[], any_order=True)
                continue
            with pytest.raises(AssertionError):
                align_and_compare(ids, 4, 4, True, False, want_launches=[], any_order=True)
            with pytest.raises(AssertionError):  # and exact comparison fails all
                align_and_compare(ids, 4, 4, True, False, want_launches=[])
    assert A.moe_align_block_size is real


@pytest.mark.parametrize("pad", [True, False], ids=["pad", "nopad"])
@pytest.mark.parametrize("ignore_invalid", [True, False], ids=["ignore", "keep"])
@pytest.mark.parametrize("fill", [-1, 5, -4], ids=["all-minus-one", "all-past", "all-below"])
def test_one_launch_when_nothing_or_only_minus_one_is_routed(
        pad: bool, ignore_invalid: bool, fill: int) -> None:
    """Every id -1 or out of range: with nothing to place the padded total is 0 (no
    ``experts_ids`` written), or one block of bucket 0 when the -1 ids count."""
    with triton_backend() as dev:
        ids = torch.full((3, 4), fill, dtype=torch.int32, device=dev)
        align_and_compare(ids, 5, 16, pad, ignore_invalid, slack=3)


@pytest.mark.parametrize("id_dtype", [torch.int32, torch.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("bs", [1, 16, 64, 128])
def test_one_launch_one_bucket_across_many_chunks(id_dtype: torch.dtype, bs: int) -> None:
    """512 routed tokens of 257 buckets sorted at once: the tokens of one expert keep their
    order (the sort's key carries the position), the -1 ids of bucket 0 included."""
    with triton_backend() as dev:
        n = torch.arange(512)
        ids = torch.where(n % 3 == 0, 7, torch.where(n % 3 == 1, 255, -1)).to(id_dtype)
        align_and_compare(ids.view(64, 8).to(dev), 257, bs, True, False)


def test_one_launch_at_its_limits() -> None:
    """1024 routed tokens over 1024 buckets: one sort of 1024 keys, 2048 bucket lanes."""
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(-1, 1023, (128, 8), generator=g, dtype=torch.int32)
    with triton_backend() as dev:
        align_and_compare(ids.to(dev), L.ONE_LAUNCH_MAX_BUCKETS, 16, False, False)


def test_one_launch_strided_ids_and_longer_buffers() -> None:
    """A non-contiguous ``topk_ids`` view; buffers longer than needed keep their tails."""
    g = torch.Generator().manual_seed(6)
    base = torch.randint(-1, 12, (8, 5), generator=g, dtype=torch.int64)
    with triton_backend() as dev:
        align_and_compare(base.to(dev).t(), 13, 4, True, True, slack=9)
        align_and_compare(base.to(dev).t(), 13, 4, False, False, slack=9)


@pytest.mark.parametrize("one", [True, False], ids=["one-launch", "chunked"])
def test_wide_int64_ids_never_wrap_into_a_bucket(monkeypatch: pytest.MonkeyPatch,
                                                 one: bool) -> None:
    """An int64 id past the int32 range is out of range, on both Triton paths (narrowed
    first, 2**32 + 1 would read as expert 1)."""
    if not one:
        monkeypatch.setattr(L, "ONE_LAUNCH_MAX_ENTRIES", 0)
    ids = torch.tensor([[2**32 + 1, 1], [2**32 - 1, -(2**32) + 2], [2**31, 0]],
                       dtype=torch.int64)
    with triton_backend() as dev:
        for ignore_invalid in (False, True):
            align_and_compare(ids.to(dev), 4, 2, True, ignore_invalid,
                              want_launches=ONE if one else chunked(ids.numel(), 4))


def test_both_paths_agree_across_the_entry_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the limit lowered to 40 entries, 40 take one launch and 41 the chunks; both
    exact."""
    monkeypatch.setattr(L, "ONE_LAUNCH_MAX_ENTRIES", 40)
    g = torch.Generator().manual_seed(8)
    with triton_backend() as dev:
        for shape, want in (((5, 8), ONE), ((41, 1), chunked(41, 10))):  # 40 and 41 entries
            ids = torch.randint(-1, 9, shape, generator=g, dtype=torch.int32)
            align_and_compare(ids.to(dev), 10, 16, True, False, want_launches=want)


# ------------------------------------------------------------------ (2) the dispatch


def _dispatch(numel: int, n_buckets: int, bs: int, pad: bool) -> list[str]:
    """The launches the op makes for these sizes (the kernels themselves do not run)."""
    with triton_backend() as dev, recorded_launches(run_kernels=False) as names:
        ids = torch.zeros(numel, dtype=torch.int32, device=dev)
        A.moe_align_block_size(ids, n_buckets, bs, *align_buffers(numel, n_buckets, bs, dev), pad)
    return names


def test_dispatch_by_size(monkeypatch: pytest.MonkeyPatch) -> None:
    most_e, most_b = L.ONE_LAUNCH_MAX_ENTRIES, L.ONE_LAUNCH_MAX_BUCKETS
    assert _dispatch(1, 129, 64, True) == ONE  # 1 token, top-1
    assert _dispatch(8, 129, 64, True) == ONE  # 1 token, top-8 of 128: decode
    assert _dispatch(most_e, most_b, 16, False) == ONE
    assert _dispatch(most_e + 1, 129, 16, False) == chunked(most_e + 1, 129)
    assert _dispatch(8, most_b + 1, 16, False) == chunked(8, most_b + 1)
    # the padding fill: one program writes at most ONE_LAUNCH_MAX_FILL slots alone
    assert align_buffers(most_e, 1000, 128, "cpu")[0].numel() > L.ONE_LAUNCH_MAX_FILL
    assert _dispatch(most_e, 1000, 128, True) == chunked(most_e, 1000)
    assert _dispatch(most_e, 1000, 128, False) == ONE
    assert _dispatch(512, 257, 128, True) == ONE  # 64 tokens x top-8, DeepSeek V3
    monkeypatch.setattr(L, "ONE_LAUNCH_MAX_ENTRIES", 0)  # the switch: all to the chunks
    assert _dispatch(8, 129, 64, True) == chunked(8, 129)


def test_dispatch_by_the_measured_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """As shipped (no override): the sorting program up to 32 routed tokens, the atomic one
    beyond, up to 512 on 9 buckets, 256 on 129 (Qwen3-30B-A3B: 32 tokens x top-8), 64 on
    257 (DeepSeek V3: 8 tokens x top-8), 128 on 513 (Qwen3-Next); then the chunks."""
    monkeypatch.setattr(L, "ONE_LAUNCH_MAX_ENTRIES", None)
    monkeypatch.setattr(L, "ATOMIC_ONE_LAUNCH", None)
    for buckets, most in ((9, 512), (129, 256), (257, 64), (513, 128)):
        assert _dispatch(1, buckets, 64, True) == ONE
        assert _dispatch(L.SORT_MAX_ENTRIES, buckets, 64, True) == ONE
        assert _dispatch(L.SORT_MAX_ENTRIES + 1, buckets, 64, True) == ATOMIC
        assert _dispatch(most, buckets, 64, True) == ATOMIC
        assert _dispatch(most + 1, buckets, 64, True) == chunked(most + 1, buckets)
    assert _dispatch(513, 9, 64, True) == TWO and _dispatch(65, 257, 64, True) == THREE
    monkeypatch.setattr(L, "ATOMIC_ONE_LAUNCH", False)  # the same sizes, the sorting program
    assert _dispatch(512, 9, 64, True) == ONE
    assert _dispatch(513, 9, 64, True) == TWO
    monkeypatch.setattr(L, "ATOMIC_ONE_LAUNCH", True)  # and the atomic one from the first
    assert _dispatch(1, 9, 64, True) == ATOMIC


def test_dispatch_of_the_chunked_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two launches (the scan inside the placement) up to 16 chunks of at most 256 bucket
    lanes, three beyond either or with FUSED_MAX_CHUNKS at 0."""
    many = L.CHUNK_MIN * 16
    assert _dispatch(many, 129, 16, False) == TWO
    assert _dispatch(many + 1, 129, 16, False) == THREE
    assert _dispatch(many, 257, 16, False) == THREE
    monkeypatch.setattr(L, "FUSED_MAX_CHUNKS", 0)
    assert _dispatch(many, 129, 16, False) == THREE


# ------------------------------------------------------------------ (3) no host reads

_READS = ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__")


@contextmanager
def host_reads_fail() -> Iterator[list[str]]:
    """Every way our wrapper could read a device value raises, except while a kernel is
    being launched (Triton's interpreter copies tensors to numpy there, which on a GPU is
    the launch itself).  Yields the names of the kernels launched."""
    inside = [False]
    names: list[str] = []
    real_launch = A.launch_kernel

    def guarded(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def read(*args: Any, **kwargs: Any) -> Any:
            if not inside[0]:
                raise AssertionError(f"host read of a device value: Tensor.{name}")
            return real(*args, **kwargs)
        return read

    def spy(key: Hashable, kernel: Any, grid: Any, *args: Any, **kwargs: Any) -> None:
        assert isinstance(key, tuple)
        names.append(str(key[0]))
        inside[0] = True
        try:
            real_launch(key, kernel, grid, *args, **kwargs)
        finally:
            inside[0] = False

    with pytest.MonkeyPatch.context() as mp:
        for name in _READS:
            mp.setattr(torch.Tensor, name, guarded(name, getattr(torch.Tensor, name)))
        mp.setattr(torch.cuda, "synchronize", guarded("synchronize", torch.cuda.synchronize))
        mp.setattr(A, "launch_kernel", spy)
        yield names


def test_the_guard_catches_a_host_read() -> None:
    """The guard below is live: an ``.item()`` outside a launch fails."""
    t = torch.ones(1)
    with host_reads_fail(), pytest.raises(AssertionError, match=r"Tensor\.item"):
        t.item()


@pytest.mark.parametrize("entries", [8, 2000], ids=["one-launch", "chunked"])
def test_triton_path_reads_no_device_value(entries: int) -> None:
    g = torch.Generator().manual_seed(9)
    ids = torch.randint(-1, 16, (entries,), generator=g, dtype=torch.int32)
    with triton_backend() as dev:
        ids = ids.to(dev)
        bufs = align_buffers(entries, 17, 16, dev)
        with host_reads_fail() as names:
            A.moe_align_block_size(ids, 17, 16, *bufs, True, False)
        assert names == (ONE if entries <= L.one_launch_limit(17) else chunked(entries, 17))
        before = [b.tolist() for b in align_buffers(entries, 17, 16, dev)]
        want = align_reference(ids.tolist(), 17, 16, True, False, before)
        assert [b.tolist() for b in bufs] == want


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU: CUDA graph capture needs one")
@pytest.mark.parametrize("tokens", [1, 8, 64])
def test_one_launch_replays_in_a_cuda_graph(tokens: int) -> None:
    """Captured once, replayed on new ids: the kernel's sizes come from its arguments only."""
    g = torch.Generator().manual_seed(10)
    ids = torch.randint(0, 128, (tokens, 8), generator=g, dtype=torch.int32).cuda()
    bufs = align_buffers(ids.numel(), 129, 64, "cuda")
    before = [b.tolist() for b in bufs]
    with recorded_launches() as names:
        A.moe_align_block_size(ids, 129, 64, *bufs, True, False)  # compiles outside
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            A.moe_align_block_size(ids, 129, 64, *bufs, True, False)
    assert names == ONE * 2
    for _ in range(3):
        ids.copy_(torch.randint(-1, 128, (tokens, 8), generator=g, dtype=torch.int32))
        for b, s in zip(bufs, before, strict=True):
            b.copy_(torch.tensor(s, dtype=torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        want = align_reference(ids.flatten().tolist(), 129, 64, True, False, before)
        assert [b.tolist() for b in bufs] == want
