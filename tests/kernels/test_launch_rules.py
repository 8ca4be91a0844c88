"""The launch rules (``kernels/ops/<family>/launch.py``) and their sweep spaces, asked directly.

What no output can tell: a wrong block size or warp count mostly still gives the right
answer under Triton's interpreter (it ignores warps, and masks cover a block too big), but a
block that is not a power of two, or a warp count Triton refuses, fails to compile on the
GPU, and a tile far from the measured one costs time there.  So these tests hold the rules
to what Triton accepts (``tl.arange`` takes powers of two, ``num_warps`` a power of two up
to 32), to grids that cover every row once, and to the settings the comments say were
measured.  Pure arithmetic, no kernel is run.  Each test's name carries its family
(the mutation harness picks a family's tests by it).
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from sglang_shims.kernels.device import MEASURED, Device
from sglang_shims.kernels.ops import space
from sglang_shims.kernels.ops.activation import launch as act_launch
from sglang_shims.kernels.ops.fp8_gemm import launch as mm_launch
from sglang_shims.kernels.ops.fp8_quant import launch as quant_launch
from sglang_shims.kernels.ops.moe_align import launch as align_launch
from sglang_shims.kernels.ops.moe_gate import launch as gate_launch
from sglang_shims.kernels.ops.moe_topk import launch as topk_launch
from sglang_shims.kernels.ops.norm import launch as norm_launch
from sglang_shims.kernels.ops.rope import launch as rope_launch
from sglang_shims.kernels.ops.space import Config
from sglang_shims.kernels.runtime import DECODE_ROWS, cdiv, next_pow2

SIZES = (1, 2, 3, 7, 8, 31, 32, 33, 64, 96, 100, 128, 255, 256, 1000, 4096, 5000, 8192,
         16384)
"""Counts on both sides of the powers of two the rules switch at, and some that are none."""


def is_pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def assert_launchable(cfg: Config, what: object) -> None:
    """Every block a power of two (``tl.arange``); warps one of Triton's counts."""
    for knob, value in cfg.items():
        if knob == "num_warps":
            assert value in space.WARPS, (what, cfg)
        elif knob not in {"num_stages", "GROUP_M"}:
            assert is_pow2(value), (what, knob, cfg)


def assert_covers(n: int, programs: int, block: int, what: object) -> None:
    """``programs`` of ``block`` cover ``n`` items, none of them with nothing to do."""
    assert (programs - 1) * block < n <= programs * block, (what, n, programs, block)


def prev_pow2(v: int) -> int:
    return 1 << (v.bit_length() - 1)


def per_thread(configs: Iterable[Config], values: str) -> set[float]:
    """What each thread of every candidate holds (``values``: the knobs whose product is a
    program's tile); every candidate is also checked to be launchable."""
    out = set()
    for cfg in configs:
        assert_launchable(cfg, cfg)
        tile = 1
        for knob in values.split():
            tile *= cfg[knob]
        out.add(tile / (32 * cfg["num_warps"]))
    return out


# ------------------------------------------------------------------ space


def test_space_warps_are_every_power_of_two_a_program_may_have() -> None:
    assert space.WARPS == (1, 2, 4, 8, 16, 32)


def test_space_pow2s_upto_and_fits_at_their_bounds() -> None:
    assert space.pow2s(1, 1) == [1]
    assert space.pow2s(3, 16) == [4, 8, 16]
    assert space.pow2s(4, 17) == [4, 8, 16]
    assert space.pow2s(5, 4) == []
    assert space.upto((256, 512, 1024), 512) == [256, 512]
    assert space.upto((256, 512, 1024), 128) == [128]
    # 2 warps are 64 threads: 64..128 values give each 1..2
    assert space.fits(64, 2, 1, 2) and space.fits(128, 2, 1, 2)
    assert not space.fits(63, 2, 1, 2) and not space.fits(129, 2, 1, 2)


# ------------------------------------------------------------------ activation


def test_activation_rules_blocks_and_a_warp_per_256_columns() -> None:
    """Decode rows of 4096 or more: 512 columns and 4 warps a program (measured); else
    up to 2048 columns, a warp per 256 of them, 1 to 4; every column gets a program."""
    for rows in (1, 32, 33, 4096):
        for d in SIZES:
            cfg = act_launch.config(rows, d)
            assert_launchable(cfg, (rows, d))
            if rows <= 32 and d >= 4096:
                assert cfg == {"BLOCK": 512, "num_warps": 4}
            else:
                assert cfg["BLOCK"] == min(next_pow2(d), 2048)
                assert cfg["num_warps"] == max(1, min(4, cfg["BLOCK"] // 256)), (rows, d, cfg)
            assert_covers(d, act_launch.grid(rows, d, cfg)[1], cfg["BLOCK"], (rows, d))


def test_activation_sweep_space_gives_each_thread_1_to_32_values() -> None:
    current = act_launch.config(1, 8192)
    full = act_launch.candidates(1, 8192, current, False)
    assert min(per_thread(full, "BLOCK")) == 1 and max(per_thread(full, "BLOCK")) == 32
    assert {c["num_warps"] for c in full} == {1, 2, 4, 8, 16}
    assert {c["BLOCK"] for c in full} == set(space.pow2s(256, 8192))
    quick = act_launch.candidates(1, 8192, current, True)
    assert {c["num_warps"] for c in quick} == {2, 4, 8}
    assert {c["BLOCK"] for c in act_launch.candidates(1, 300, current, True)} == {512}


# ------------------------------------------------------------------ moe_gate


@pytest.mark.parametrize("experts", (1, 2, 96, 256, 4096, 8192))
def test_moe_gate_tile_follows_the_tokens_up_to_4096_scores(experts: int) -> None:
    """A program takes ``BLOCK_M`` tokens of all their experts: no more tokens than the call
    has (rounded up to a power of two), at most 4096 scores (one token where a row alone
    is wider), and a grid that gives every token a program."""
    for tokens in SIZES:
        cfg = gate_launch.config(tokens, experts, 8, 8)
        assert_launchable(cfg, (tokens, experts))
        assert cfg["BLOCK_E"] >= experts
        assert cfg["BLOCK_M"] <= next_pow2(tokens)
        assert cfg["BLOCK_M"] * cfg["BLOCK_E"] <= max(4096, cfg["BLOCK_E"])
        assert cfg["BLOCK_M"] == 1 or cfg["BLOCK_M"] * cfg["BLOCK_E"] > 2048 \
            or cfg["BLOCK_M"] == next_pow2(tokens)
        (programs,) = gate_launch.grid(tokens, cfg)
        assert_covers(tokens, programs, cfg["BLOCK_M"], (tokens, experts))


# ------------------------------------------------------------------ moe_topk


def test_topk_softmax_rules_measured_tile_and_a_warp_per_512_scores() -> None:
    """Rows a program grow with the tokens per expert lane (the H100 measurement): 8 experts
    take 4 rows at 32 tokens and 16 from 128 on; 128 experts 1 row up to 255 tokens, 4 from
    512.  Never more than 16 rows or 512 scores (one token where a row alone is wider),
    with a warp per 512 of them, 1 to 8; more tokens never take fewer rows; fewer than 8
    experts as 8."""
    measured = {(8, 1): 1, (8, 32): 4, (8, 256): 16, (8, 16384): 16, (64, 32): 1,
                (64, 256): 4, (64, 16384): 8, (128, 4): 1, (128, 255): 1, (128, 256): 2,
                (128, 2048): 4, (128, 16384): 4, (256, 256): 1, (512, 16384): 1}
    for (experts, tokens), rows in measured.items():
        cfg = topk_launch.config(tokens, experts, 8)
        assert (cfg["BLOCK_M"], cfg["num_warps"]) == (rows, 1), (experts, tokens, cfg)
    for tokens in (32, 256, 16384):  # fewer experts are taken as 8 (none measured)
        assert topk_launch.config(tokens, 2, 1) == {**topk_launch.config(tokens, 8, 1),
                                                    "BLOCK_E": 2}
    for experts in (1, 2, 3, 8, 60, 128, 1000, 1024, 2048, 4096, topk_launch.MAX_EXPERTS):
        before = 1
        for tokens in SIZES:
            cfg = topk_launch.config(tokens, experts, 8)
            assert_launchable(cfg, (tokens, experts))
            tile = cfg["BLOCK_M"] * cfg["BLOCK_E"]
            assert cfg["BLOCK_E"] == next_pow2(experts) and cfg["K_BLOCK"] == 8
            assert cfg["BLOCK_M"] <= min(16, next_pow2(tokens)) and before <= cfg["BLOCK_M"]
            assert cfg["BLOCK_M"] == next_pow2(cfg["BLOCK_M"])
            before = cfg["BLOCK_M"]
            assert tile <= max(512, cfg["BLOCK_E"])
            assert cfg["num_warps"] == max(1, min(8, tile // 512)), (tokens, experts, cfg)
            (programs,) = topk_launch.grid(tokens, cfg)
            assert_covers(tokens, programs, cfg["BLOCK_M"], (tokens, experts))


def test_topk_softmax_rows_wider_than_8192_experts_take_the_torch_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A row must fit one program: up to ``MAX_EXPERTS`` (8192, a power of two, so the
    block is the row) the kernel runs, above it the plain-PyTorch path."""
    torch = pytest.importorskip("torch", reason="torch is not installed")
    from sglang_shims.kernels.ops import moe_topk

    taken: list[str] = []
    monkeypatch.setattr(moe_topk, "use_triton", lambda t: True)
    monkeypatch.setattr(moe_topk, "_triton", lambda *a: taken.append("triton"))
    monkeypatch.setattr(moe_topk, "topk_softmax_torch", lambda *a: taken.append("torch"))
    assert is_pow2(topk_launch.MAX_EXPERTS)
    for experts in (8192, 8193):
        w, ids = torch.empty(1, 2), torch.empty(1, 2, dtype=torch.int32)
        moe_topk.topk_softmax(w, ids, torch.zeros(1, experts))
    assert taken == ["triton", "torch"]


# ------------------------------------------------------------------ rope


def test_rope_rules_blocks_heads_and_a_warp_per_256_pairs() -> None:
    """A program rotates some query and key heads of one token: blocks that Triton takes,
    the pass-through and value blocks at most 256 wide, and a warp per 256 rotated pairs
    it holds (the H200's 4096 query values took 8 warps, 2048 took 4), 1 to 8; the grid's
    second axis gives every head a program."""
    for n_q in (1, 3, 8, 28, 32, 64, 100):
        for n_k in (1, 2, 8, 32):
            for head, rotary in ((64, 64), (80, 32), (128, 128), (256, 64), (512, 64), (512, 512)):
                cfg = rope_launch.config(n_q, n_k, head, rotary)
                what = (n_q, n_k, head, rotary)
                assert_launchable(cfg, what)
                assert cfg["HALF_BLOCK"] == next_pow2(rotary // 2)
                assert cfg["PASS_BLOCK"] == min(256, next_pow2(max(1, head - rotary)))
                assert cfg["V_BLOCK"] == min(256, next_pow2(head))
                pairs = (cfg["Q_HEADS"] + cfg["K_HEADS"]) * cfg["HALF_BLOCK"]
                assert cfg["num_warps"] == max(1, min(8, prev_pow2(max(1, pairs // 256)))), \
                    (what, cfg)
                _, blocks = rope_launch.grid(5, n_q, n_k, cfg)
                assert cdiv(n_q, blocks) <= cfg["Q_HEADS"] and cdiv(n_k, blocks) <= cfg["K_HEADS"]


# ------------------------------------------------------------------ norm


@pytest.mark.parametrize("fused", [False, True], ids=["plain", "fused"])
def test_norm_rules_rows_a_program_and_warps(fused: bool) -> None:
    """A program takes whole rows, as many as make ~2048 values (never more than the call
    has); decode rows of 4096 or more get a warp per 256 values, up to 32 (measured), the
    rest a warp per 512, 1 to 8 (32 for the fused norm); every row gets a program."""
    for rows in (1, 3, DECODE_ROWS, DECODE_ROWS + 1, 1000):
        for hidden in (*SIZES, 32768, 32769, 65536):
            cfg = norm_launch.config(rows, hidden, fused)
            assert_launchable(cfg, (rows, hidden))
            tile = cfg["BLOCK_M"] * cfg["BLOCK_N"]
            if norm_launch.single_pass(hidden):
                assert cfg["BLOCK_N"] == next_pow2(hidden)
                assert cfg["BLOCK_M"] == max(1, min(2048 // cfg["BLOCK_N"], next_pow2(rows)))
            else:
                assert (cfg["BLOCK_M"], cfg["BLOCK_N"]) == (1, norm_launch.LOOP_BLOCK)
            if rows <= DECODE_ROWS and cfg["BLOCK_N"] >= 4096:
                assert cfg["num_warps"] == min(32, tile // 256), (rows, hidden, cfg)
            else:
                top = 32 if fused else 8
                assert cfg["num_warps"] == max(1, min(top, tile // 512)), (rows, hidden, cfg)
            assert_covers(rows, norm_launch.grid(rows, cfg)[0], cfg["BLOCK_M"], (rows, hidden))


def test_norm_sweep_space_keeps_the_row_block_and_gives_each_thread_2_to_64_values() -> None:
    current = norm_launch.config(1, 1024, False)
    full = norm_launch.candidates(64, 1024, current, False)
    assert {c["BLOCK_N"] for c in full} == {1024}
    assert {c["BLOCK_M"] for c in full} == {1, 2, 4, 8}
    assert {c["num_warps"] for c in full} == set(space.WARPS)
    assert min(per_thread(full, "BLOCK_M BLOCK_N")) == 2
    assert max(per_thread(full, "BLOCK_M BLOCK_N")) == 64
    quick = norm_launch.candidates(64, 1024, current, True)
    assert {c["BLOCK_M"] for c in quick} == {1, 2}
    assert {c["num_warps"] for c in quick} == {4, 8, 16, 32}
    assert {c["BLOCK_M"] for c in norm_launch.candidates(3, 1024, current, False)} == {1, 2, 4}


# ------------------------------------------------------------------ fp8 quantisation


def test_quant_rules_groups_rows_and_tensor_blocks() -> None:
    """Per group: 4096 values a program (1024 at decode rows, measured), never more groups
    than there are.  Per token: a row whole in one program at every row count, up to 8192
    columns a step, a warp per 512, 1 to 8; above 256 rows a 4096-wide step takes 4 warps,
    and up to 4096 rows a row over 2048 columns that its step pads by more than a quarter
    takes 1024-column steps with 2 warps (measured).  Per tensor: blocks of up to 4096.
    Grids cover."""
    for rows in (1, DECODE_ROWS, DECODE_ROWS + 1, 256, 257, 4096, 4097):
        for n_groups in (1, 3, 8, 31, 32, 33, 4096):
            for size in (32, 64, 128, 8192):
                cfg = quant_launch.group_config(rows, n_groups, size)
                assert_launchable(cfg, (rows, n_groups, size))
                tile = 1024 if rows <= DECODE_ROWS else 4096
                assert cfg["BLOCK_K"] == size
                assert cfg["BLOCK_G"] == max(1, min(next_pow2(n_groups), tile // size))
                assert_covers(n_groups, quant_launch.group_grid(n_groups, cfg)[0],
                              cfg["BLOCK_G"], n_groups)
        # the padding rule's edges: 2049 and 3071 pad by more than a quarter, 3072 by one;
        # 11000 is stepped in 8192 columns whatever its power of two pads
        for cols in (*SIZES, 2048, 2049, 2304, 3071, 3072, 3584, 6143, 6144, 7168, 11000):
            cfg = quant_launch.token_config(rows, cols)
            assert_launchable(cfg, (rows, cols))
            block_n = min(next_pow2(cols), 8192)
            want = {"BLOCK_M": 1, "BLOCK_N": block_n,
                    "num_warps": max(1, min(8, block_n // 512))}
            if rows > 256 and block_n == 4096:
                want["num_warps"] = 4
            if 256 < rows <= 4096 and 2048 < cols <= 8192 and block_n - cols > block_n / 4:
                want = {"BLOCK_M": 1, "BLOCK_N": 1024, "num_warps": 2}
            assert cfg == want, (rows, cols)
            assert_covers(rows, quant_launch.token_grid(rows, cfg)[0], cfg["BLOCK_M"], rows)
    for n in SIZES:
        block = quant_launch.tensor_block(n)
        assert block == min(next_pow2(n), 4096)
        assert_covers(n, quant_launch.tensor_grid(n, block)[0], block, n)


def test_quant_sweep_spaces_keep_the_fixed_block_and_their_bounds() -> None:
    group = quant_launch.group_config(1, 64, 128)
    full = quant_launch.group_candidates(128, group, False)
    assert {c["BLOCK_K"] for c in full} == {128}
    assert {c["BLOCK_G"] for c in full} == set(space.pow2s(1, 64))
    assert {c["num_warps"] for c in full} == {1, 2, 4, 8}
    assert min(per_thread(full, "BLOCK_G BLOCK_K")) == 1
    assert max(per_thread(full, "BLOCK_G BLOCK_K")) == 64
    quick = quant_launch.group_candidates(128, group, True)
    assert {c["BLOCK_G"] for c in quick} == set(space.pow2s(1, 8))
    assert {c["num_warps"] for c in quick} == {1, 2, 4}
    token = quant_launch.token_config(1, 8192)
    full = quant_launch.token_candidates(64, 16384, token, False)
    assert {c["BLOCK_M"] for c in full} == {1, 2, 4}
    assert {c["BLOCK_N"] for c in full} == {1024, 2048, 4096, 8192}
    assert {c["num_warps"] for c in full} == {2, 4, 8, 16, 32}
    assert min(per_thread(full, "BLOCK_M BLOCK_N")) == 2
    assert max(per_thread(full, "BLOCK_M BLOCK_N")) == 64
    quick = quant_launch.token_candidates(64, 3000, token, True)
    assert {c["BLOCK_M"] for c in quick} == {1, 2}
    assert {c["BLOCK_N"] for c in quick} == {1024, 4096}
    assert {c["num_warps"] for c in quick} == {4, 8, 16}
    assert {c["BLOCK_N"] for c in quant_launch.token_candidates(1, 1000, token, False)} \
        == {1024}


# ------------------------------------------------------------------ moe_align / moe_sum


@pytest.mark.parametrize(("buckets", "most"), [
    (1, 512), (9, 512), (65, 512), (127, 512),  # up to 128 lanes: 512 routed tokens
    (128, 256), (161, 256), (255, 256),  # 256 lanes: 256
    (256, 64), (385, 64), (511, 64),  # 512 lanes: 64
    (512, 128), (513, 128), (1024, 128)])  # 1024 lanes and more: 128 again (measured)
def test_moe_align_one_launch_only_while_small(buckets: int, most: int) -> None:
    fill = align_launch.ONE_LAUNCH_MAX_FILL
    assert align_launch.one_launch_limit(buckets) == most
    assert align_launch.one_launch(1, buckets, 10, True)
    assert align_launch.one_launch(most, buckets, fill, True)
    assert not align_launch.one_launch(0, buckets, 10, True)
    assert not align_launch.one_launch(most + 1, buckets, 10, True)
    assert not align_launch.one_launch(1, buckets, fill + 1, True)
    assert align_launch.one_launch(1, buckets, fill + 1, False)
    assert not align_launch.one_launch(1, align_launch.ONE_LAUNCH_MAX_BUCKETS + 1, 10, True)


def test_moe_align_single_program_sorts_only_the_smallest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The sorting program up to 32 routed tokens, the atomic one beyond (measured); the
    switch forces either at every size."""
    assert align_launch.ATOMIC_ONE_LAUNCH is None  # as shipped: the rule
    for dev in (MEASURED, Device((7, 0), 98304, 80), Device((12, 0), 101376, 36)):
        assert not align_launch.one_launch_atomic(1, dev)
        assert not align_launch.one_launch_atomic(align_launch.SORT_MAX_ENTRIES, dev)
        assert align_launch.one_launch_atomic(33, dev)
        assert align_launch.one_launch_atomic(1024, dev)
    assert align_launch.SORT_MAX_ENTRIES == 32
    pascal = Device((6, 1), 49152, 20)  # Triton's atomics need sm_70: the sort, always
    assert not pascal.atomics and not align_launch.one_launch_atomic(33, pascal)
    monkeypatch.setattr(align_launch, "ATOMIC_ONE_LAUNCH", True)
    assert align_launch.one_launch_atomic(1, MEASURED)
    assert not align_launch.one_launch_atomic(1, pascal)
    monkeypatch.setattr(align_launch, "ATOMIC_ONE_LAUNCH", False)
    assert not align_launch.one_launch_atomic(1024, MEASURED)


def test_moe_align_one_launch_bounds() -> None:
    """1024 buckets (a 512-expert model takes 513) and a fill of 65536 slots (256 KiB written
    by one program) are the single program's last sizes."""
    assert align_launch.one_launch(1, 1024, 10, True)
    assert not align_launch.one_launch(1, 1025, 10, True)
    assert align_launch.one_launch(1, 9, 65536, True)
    assert not align_launch.one_launch(1, 9, 65537, True)


def test_moe_align_one_launch_limit_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    """A number in ONE_LAUNCH_MAX_ENTRIES holds for every bucket count (0: never)."""
    for limit in (0, 40, align_launch.ONE_LAUNCH_ON):
        monkeypatch.setattr(align_launch, "ONE_LAUNCH_MAX_ENTRIES", limit)
        assert {align_launch.one_launch_limit(b) for b in (1, 257, 1024)} == {limit}


def test_moe_align_steps_and_tiles_are_powers_of_two() -> None:
    """The fixed steps go to ``tl.arange`` as they are."""
    for step in (align_launch.TILE, align_launch.FILL_STEP, align_launch.COUNT_FILL_STEP,
                 align_launch.MAX_BUCKETS, align_launch.ONE_LAUNCH_WARPS,
                 align_launch.ONE_LAUNCH_ON, align_launch.FUSED_MAX_LANES,
                 align_launch.CHUNK_MIN, align_launch.CHUNK_MAX):
        assert is_pow2(step), step


def test_moe_align_scan_inside_the_placement_up_to_16_chunks_of_256_lanes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two launches up to 16 chunks (of 256 routed tokens: 4096) while the bucket lanes are
    at most 256 (255 buckets); three beyond either; 0 chunks turns it off."""
    for buckets in (9, 65, 128, 255):
        assert align_launch.fused(33, buckets) and align_launch.fused(16 * 256, buckets)
        assert not align_launch.fused(16 * 256 + 1, buckets)
    for buckets in (256, 257, 513):
        assert not any(align_launch.fused(n, buckets) for n in (33, 256, 4096))
    monkeypatch.setattr(align_launch, "FUSED_MAX_CHUNKS", 0)
    assert not any(align_launch.fused(n, 9) for n in (1, 33, 256, 4096, 10**6))


def test_moe_align_more_than_4096_buckets_take_the_torch_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed")
    from sglang_shims.kernels.ops import moe_align

    taken: list[str] = []
    monkeypatch.setattr(moe_align, "use_triton", lambda t: True)
    monkeypatch.setattr(moe_align, "_triton_align", lambda *a: taken.append("triton"))
    monkeypatch.setattr(moe_align, "moe_align_torch", lambda *a: taken.append("torch"))
    for buckets in (4096, 4097):
        ids, sorted_ids, expert_ids, post_pad, cumsum = (
            torch.zeros(n, dtype=torch.int32) for n in (1, 1, 1, 1, buckets + 1))
        moe_align.moe_align_block_size(ids.view(1, 1), buckets, 1, sorted_ids, expert_ids,
                                       post_pad, cumsum)
    assert taken == ["triton", "torch"]


def test_moe_align_rules_sort_chunks_and_a_junk_bucket() -> None:
    """The bucket lanes are a power of two above the bucket count (the last lane takes the
    ids left out); the single program sorts all its tokens at once, the chunked path aims
    at 128 chunks of 256-2048 tokens; the block lookup tile stays within ``TILE``."""
    for buckets in (1, 2, 3, 64, 65, 257, 1024, 4096):
        block_e = next_pow2(buckets + 1)
        assert block_e > buckets
        steps = max(1, 8192 // block_e)
        for numel, sub in ((1, 256), (32768, 256), (32769, 512), (131072, 1024),
                           (262145, 2048), (10**7, 2048)):
            chunked = align_launch.chunked_config(numel, buckets)
            assert_launchable(chunked, (numel, buckets))
            assert chunked == {"SUB": sub, "BLOCK_E": block_e, "BLOCK_J": steps}
        for numel, sub in ((1, 16), (2, 16), (17, 32), (32, 32), (1024, 1024)):
            one = align_launch.one_config(numel, buckets)
            assert_launchable(one, (numel, buckets))
            assert one == {"SUB": sub, "BLOCK_E": block_e, "BLOCK_J": steps,
                           "BLOCK_F": 2048, "num_warps": 8}


def test_moe_sum_rules_and_sweep_space() -> None:
    """Decode: 512 columns and 8 warps a program (measured); else up to 1024 columns and
    4 warps.  The sweep: 128-4096 columns, a thread holding 1 to 32 values."""
    for tokens in (1, DECODE_ROWS, DECODE_ROWS + 1, 4096):
        for hidden in SIZES:
            cfg = align_launch.sum_config(tokens, hidden)
            assert_launchable(cfg, (tokens, hidden))
            decode = tokens <= DECODE_ROWS
            assert cfg["BLOCK_H"] == min(next_pow2(hidden), 512 if decode else 1024)
            assert cfg["num_warps"] == (8 if decode and cfg["BLOCK_H"] == 512 else 4)
            grid = align_launch.sum_grid(tokens, hidden, cfg)
            assert grid[0] == tokens
            assert_covers(hidden, grid[1], cfg["BLOCK_H"], (tokens, hidden))
    current = align_launch.sum_config(1, 4096)
    full = align_launch.sum_candidates(1, 8192, current, False)
    assert {c["BLOCK_H"] for c in full} == set(space.pow2s(128, 4096))
    assert {c["num_warps"] for c in full} == {1, 2, 4, 8, 16}
    assert min(per_thread(full, "BLOCK_H")) == 1 and max(per_thread(full, "BLOCK_H")) == 32
    quick = align_launch.sum_candidates(1, 300, current, True)
    assert {c["BLOCK_H"] for c in quick} == {256, 512}
    assert {c["BLOCK_H"] for c in align_launch.sum_candidates(1, 4096, current, True)} \
        == {256, 512, 1024}
    assert {c["num_warps"] for c in quick} == {1, 2, 4}


# ------------------------------------------------------------------ fp8_gemm


def test_fp8_gemm_rules_tiles_warps_and_stages() -> None:
    """Prefill: row tiles of 16-128, 128-wide column tiles past 64 rows (64 below), K steps
    of 128 in 3 stages, 8 warps for a 128 x 128 tile.  Decode (swept for
    ``fp8_scaled_mm``): 16 rows, 32 columns up to 16 tokens, 64 beyond, K steps of 256 in 4
    stages.  Stages drop, to no fewer than 2, where a GPU's shared memory holds fewer."""
    for decode_tiles in (False, True):
        for m in (1, 16, 17, DECODE_ROWS, DECODE_ROWS + 1, 64, 65, 4096):
            for n in (1, 100, 4096):
                cfg = mm_launch.config(m, n, decode_tiles=decode_tiles, dev=MEASURED)
                assert_launchable(cfg, (m, n))
                assert cfg["GROUP_M"] == 8
                if decode_tiles and m <= DECODE_ROWS:
                    want = (16, 32 if m <= 16 else 64, 256, 4)
                elif decode_tiles and m == n == 4096:  # 512 wide tiles: 97% of 4 waves
                    want = (128, 256, 128, 3)
                else:
                    want = (min(max(16, next_pow2(m)), 128), 128 if m > 64 else 64, 128, 3)
                tiles = (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], cfg["num_stages"])
                assert tiles == want, (m, n, cfg)
                big = cfg["BLOCK_M"] * cfg["BLOCK_N"] >= 128 * 128
                assert cfg["num_warps"] == (8 if big else 4)
                (programs,) = mm_launch.grid(m, n, cfg)
                assert programs == cdiv(m, cfg["BLOCK_M"]) * cdiv(n, cfg["BLOCK_N"])
    per_stage = 128 * 128 * 2
    assert mm_launch.stages_that_fit(MEASURED, 128, 128, 128, 3) == 3
    room = Device((8, 9), 2 * per_stage + mm_launch.EPILOGUE, 1)
    assert mm_launch.stages_that_fit(room, 128, 128, 128, 3) == 2
    tight = Device((8, 9), 3 * per_stage + mm_launch.EPILOGUE, 1)
    assert mm_launch.stages_that_fit(tight, 128, 128, 128, 4) == 3
    assert mm_launch.stages_that_fit(Device((8, 0), 1024, 1), 128, 128, 128, 3) == 2


def test_fp8_scaled_mm_takes_wide_tiles_from_2048_rows_where_they_fill_their_waves() -> None:
    """128 x 256 from 2048 rows and columns where their last wave is 80% full or more (the
    H100's measured widths: 2048 / 3584 / 4096 / 5120 / 7168 yes, 2304 / 4608 no) and three
    stages fit; never for the block-scaled kernel, never below 2048 rows or columns."""
    def n_of(m: int, n: int, dev: Device = MEASURED, swept: bool = True) -> int:
        return int(mm_launch.config(m, n, decode_tiles=swept, dev=dev)["BLOCK_N"])

    for n, wide in ((2048, True), (2304, False), (3584, True), (4096, True), (4608, False),
                    (5120, True), (7168, True)):
        assert n_of(2048, n) == (256 if wide else 128), n
        assert n_of(2047, n) == n_of(256, n) == n_of(2048, n, swept=False) == 128
    assert n_of(16384, 1024) == n_of(16384, 2047) == 128 and n_of(16384, 2048) == 256
    # the wave: 2048 rows x 5120 columns are 320 tiles, 80.8% of 3 waves of 132; 134 SMs
    # make it 79.6%
    assert n_of(2048, 5120, Device((9, 0), 232448, 134)) == 128
    # one row or column past a tile: 136 / 144 tiles, a second wave nearly empty
    assert n_of(2049, 2048) == n_of(2048, 2049) == 128
    # exactly 80%: 128 tiles in 4 waves of 40; 41 SMs: 78%
    assert n_of(2048, 2048, Device((9, 0), 232448, 40)) == 256
    assert n_of(2048, 2048, Device((9, 0), 232448, 41)) == 128
    # three stages of 128 x 256 x 128 need 144 KiB and the epilogue
    per_stage = 128 * 128 + 128 * 256
    fits = Device((9, 0), 3 * per_stage + mm_launch.EPILOGUE, 132)
    short = Device((9, 0), 3 * per_stage + mm_launch.EPILOGUE - 1, 132)
    assert n_of(2048, 4096, fits) == 256 and n_of(2048, 4096, short) == 128
    cfg = mm_launch.config(2048, 4096, decode_tiles=True, dev=MEASURED)
    assert (cfg["num_warps"], cfg["num_stages"]) == (8, 3)
    assert mm_launch.grid(2048, 4096, cfg) == (16 * 16,)


def test_fp8_gemm_sweep_space_fits_its_shared_memory() -> None:
    current = mm_launch.config(8, 4096, decode_tiles=True, dev=MEASURED)
    for m, fast in ((8, False), (8, True), (4096, False), (4096, True)):
        configs = mm_launch.candidates(m, 4096, current, fast)
        assert configs
        for cfg in configs:
            assert_launchable(cfg, cfg)
            assert cfg["GROUP_M"] == current["GROUP_M"]
            assert cfg["num_stages"] * (cfg["BLOCK_M"] * cfg["BLOCK_K"]
                                        + cfg["BLOCK_K"] * cfg["BLOCK_N"]) <= mm_launch.SMEM
    decode = mm_launch.candidates(40, 4096, current, False)
    assert {c["BLOCK_M"] for c in decode} == {16, 64}
    assert {c["BLOCK_N"] for c in decode} == {16, 32, 64, 128}
    assert {c["num_stages"] for c in decode} == {3, 4, 5}
    assert {c["num_warps"] for c in decode} == {4, 8}
    quick = mm_launch.candidates(8, 4096, current, True)
    assert {c["BLOCK_N"] for c in quick} == {16, 32, 64}
    assert {c["num_stages"] for c in quick} == {3, 4} and {c["num_warps"] for c in quick} == {4}
    prefill = mm_launch.candidates(4096, 4096, current, False)
    assert {c["BLOCK_M"] for c in prefill} == {64, 128}
    assert {c["BLOCK_N"] for c in prefill} == {64, 128, 256}
    assert {c["BLOCK_K"] for c in prefill} == {64, 128}
    assert {c["num_warps"] for c in prefill} == {4, 8}
    quick = mm_launch.candidates(4096, 4096, current, True)
    assert {c["BLOCK_M"] for c in quick} == {128} and {c["num_warps"] for c in quick} == {8}
