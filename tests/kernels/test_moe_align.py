"""``moe_align_block_size`` and ``moe_sum`` / ``moe_sum_reduce`` (``kernels.ops.moe_align``).

The alignment against an exact reference in plain Python lists (bucket = expert + 1,
tokens in order, each bucket padded to the block size), compared element for element,
with sentinels in every buffer so that a slot written when it must not be (or not written
when it must) fails; its single-program path has ``test_moe_align_one_launch.py``.  The
sums against float64 (tolerances in ``tests/support/references.py``).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K

from ..support.align import align_buffers
from ..support.kernels import triton_skip
from ..support.references import DTYPE_IDS, DTYPES, assert_close

SEED = 20261201
triton_skip()  # Triton's interpreter on CPU: before any kernel is defined


def ref_align(ids: list[int], n_buckets: int, bs: int, ignore_invalid: bool = False
              ) -> tuple[list[int], list[int], list[int]]:
    """(sorted ids without the tail, expert of each block, bucket starts + total)."""
    buckets: list[list[int]] = [[] for _ in range(n_buckets)]
    for i, e in enumerate(ids):
        if (1 if ignore_invalid else 0) <= e + 1 < n_buckets:
            buckets[e + 1].append(i)
    out: list[int] = []
    experts: list[int] = []
    starts: list[int] = []
    for b, toks in enumerate(buckets):
        starts.append(len(out))
        n = -(-len(toks) // bs) * bs
        out += toks + [len(ids)] * (n - len(toks))
        experts += [b - 1] * (n // bs)
    return out, experts, [*starts, len(out)]


ALIGN_CASES = [  # tokens, top-k, experts, block size
    (4, 3, 4, 4), (1, 2, 8, 16), (37, 2, 8, 16), (300, 8, 64, 64), (5, 8, 256, 128),
    (700, 1, 3, 16),
]


@pytest.mark.parametrize("case", ALIGN_CASES, ids=lambda c: "t{}-k{}-e{}-b{}".format(*c))
@pytest.mark.parametrize("id_dtype", [torch.int32, torch.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("scan", ["fused", "separate"])
def test_moe_align(backend: str, gen: torch.Generator, case: tuple[int, int, int, int],
                   id_dtype: torch.dtype, scan: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both chunked paths (the scan inside the placement, two launches; a one-program scan
    between them, three) on every case, the single programs off (they have
    test_moe_align_one_launch.py)."""
    from sglang_shims.kernels.ops.moe_align import launch

    monkeypatch.setattr(launch, "FUSED_MAX_CHUNKS", 16 if scan == "fused" else 0)
    monkeypatch.setattr(launch, "ONE_LAUNCH_MAX_ENTRIES", 0)
    tokens, k, experts, bs = case
    ids = torch.randint(-1, experts, (tokens, k), generator=gen).to(id_dtype).to(backend)
    n_buckets = experts + 1  # as sglang calls it
    sorted_ids, expert_ids, post_pad, cumsum = align_buffers(ids.numel(), n_buckets, bs, backend)
    K.moe_align_block_size(ids, n_buckets, bs, sorted_ids, expert_ids, post_pad, cumsum, True)
    want, want_experts, want_cumsum = ref_align(ids.flatten().tolist(), n_buckets, bs)
    total = len(want)
    assert post_pad.tolist() == [total]
    assert sorted_ids[:total].tolist() == want
    assert (sorted_ids[total:] == ids.numel()).all(), "the padding fill stops short"
    assert expert_ids[:total // bs].tolist() == want_experts
    assert (expert_ids[total // bs:] == -9).all(), "blocks past the total were written"
    assert cumsum.tolist() == want_cumsum


def test_moe_align_without_padding_fill(backend: str) -> None:
    """pad_sorted_token_ids=False: only token slots are written; padding keeps the caller's."""
    ids = torch.tensor([[2, 0], [2, 2], [-1, 1]], dtype=torch.int32, device=backend)
    sorted_ids, expert_ids, post_pad, cumsum = align_buffers(6, 4, 4, backend)
    K.moe_align_block_size(ids, 4, 4, sorted_ids, expert_ids, post_pad, cumsum, False)
    assert post_pad.item() == 16
    assert sorted_ids[:16].tolist() == [4, -7, -7, -7, 1, -7, -7, -7, 5, -7, -7, -7,
                                        0, 2, 3, -7]
    assert expert_ids[:4].tolist() == [-1, 0, 1, 2]


def test_moe_align_ignore_invalid_and_out_of_range(backend: str) -> None:
    """sglang 0.5.17's ninth argument drops the -1 ids; ids past the buckets never land."""
    ids = torch.tensor([[-1, 0], [5, 1], [1, -1], [-3, 0]], dtype=torch.int64, device=backend)
    sorted_ids, expert_ids, post_pad, cumsum = align_buffers(8, 3, 2, backend)
    K.moe_align_block_size(ids, 3, 2, sorted_ids, expert_ids, post_pad, cumsum, True, True)
    assert post_pad.item() == 4
    assert sorted_ids[:4].tolist() == [1, 7, 3, 4]
    assert expert_ids[:2].tolist() == [0, 1]
    sorted_ids, expert_ids, post_pad, cumsum = align_buffers(8, 3, 2, backend)
    K.moe_align_block_size(ids, 3, 2, sorted_ids, expert_ids, post_pad, cumsum, True, False)
    assert sorted_ids[:6].tolist() == [0, 5, 1, 7, 3, 4]
    assert expert_ids[:3].tolist() == [-1, 0, 1]


def test_moe_align_empty_and_rejects(backend: str) -> None:
    ids = torch.empty((0, 2), dtype=torch.int32, device=backend)
    sorted_ids, expert_ids, post_pad, cumsum = align_buffers(0, 5, 16, backend)
    K.moe_align_block_size(ids, 5, 16, sorted_ids, expert_ids, post_pad, cumsum, True)
    assert post_pad.item() == 0 and cumsum.tolist() == [0] * 6
    ids = torch.zeros((8, 2), dtype=torch.int32, device=backend)
    small = torch.empty(4, dtype=torch.int32, device=backend)
    with pytest.raises(ValueError, match="too small"):
        K.moe_align_block_size(ids, 5, 16, small, expert_ids, post_pad, cumsum, True)
    with pytest.raises(TypeError, match="int32 or int64"):
        K.moe_align_block_size(ids.float(), 5, 16, sorted_ids, expert_ids, post_pad, cumsum)
    with pytest.raises(TypeError, match="token_cnts_buffer"):
        K.moe_align_block_size(ids, 5, 16, sorted_ids, expert_ids, post_pad, cumsum, cumsum)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", [(1, 2, 64), (5, 8, 1000), (3, 1, 7), (9, 9, 130)],
                         ids=lambda s: "x".join(map(str, s)))
def test_moe_sum_reduce(backend: str, gen: torch.Generator, shape: tuple[int, int, int],
                        dtype: torch.dtype) -> None:
    x = torch.randn(*shape, generator=gen).to(dtype).to(backend)
    out = torch.full((shape[0], shape[2]), float("nan"), dtype=dtype, device=backend)
    K.moe_sum_reduce(x, out, 2.5)
    assert_close(out, x.double().sum(dim=1) * 2.5, dtype, "moe_sum_reduce")
    out.fill_(float("nan"))
    K.moe_sum(x, out)
    assert_close(out, x.double().sum(dim=1), dtype, "moe_sum")


def test_moe_sum_reduce_default_factor_is_sgl_kernels_zero(backend: str) -> None:
    """Called without a factor, the output is 0 x the sum, as sgl-kernel's default makes it."""
    x = torch.ones(3, 2, 8, dtype=torch.float32, device=backend)
    out = torch.full((3, 8), 7.0, dtype=torch.float32, device=backend)
    K.moe_sum_reduce(x, out)
    assert out.tolist() == [[0.0] * 8] * 3


def test_moe_sum_layouts(backend: str, gen: torch.Generator) -> None:
    """A strided input (a slice) and an output that is a column slice of a wider buffer."""
    big = torch.randn(4, 3, 200, generator=gen).to(backend)
    x = big[:, :, 10:110]
    wide = torch.full((4, 300), float("nan"), device=backend)
    out = wide[:, 50:150]
    K.moe_sum_reduce(x, out, 0.5)
    assert_close(out, x.double().sum(dim=1) * 0.5, torch.float32, "a strided sum")
    assert torch.isnan(wide[:, :50]).all() and torch.isnan(wide[:, 150:]).all()


def test_moe_sum_rejects(backend: str) -> None:
    x = torch.zeros(2, 3, 8, device=backend)
    with pytest.raises(ValueError, match="do not match"):
        K.moe_sum(x, torch.zeros(2, 9, device=backend))
    with pytest.raises(TypeError, match=r"must be torch\.float32"):
        K.moe_sum(x, torch.zeros(2, 8, dtype=torch.float16, device=backend))
