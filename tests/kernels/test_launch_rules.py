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

from sglang_shims.kernels.ops import space
from sglang_shims.kernels.ops.activation import launch as act_launch
from sglang_shims.kernels.ops.moe_gate import launch as gate_launch
from sglang_shims.kernels.ops.moe_topk import launch as topk_launch
from sglang_shims.kernels.ops.rope import launch as rope_launch
from sglang_shims.kernels.ops.space import Config
from sglang_shims.kernels.runtime import cdiv, next_pow2

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
    """128 experts, top-8: 4 tokens and 1 warp a program (the H200 measurement), from 4
    tokens up.  Elsewhere a program holds up to 512 scores (one token where a row alone is
    wider), with a warp per 512 of them, 1 to 8."""
    for tokens in (4, 5, 33, 16384):
        cfg = topk_launch.config(tokens, 128, 8)
        assert (cfg["BLOCK_M"], cfg["num_warps"]) == (4, 1)
    for experts in (1, 2, 3, 60, 128, 1000, 1024, 2048, 4096, topk_launch.MAX_EXPERTS):
        for tokens in SIZES:
            cfg = topk_launch.config(tokens, experts, 8)
            assert_launchable(cfg, (tokens, experts))
            tile = cfg["BLOCK_M"] * cfg["BLOCK_E"]
            assert cfg["BLOCK_E"] == next_pow2(experts) and cfg["K_BLOCK"] == 8
            assert cfg["BLOCK_M"] <= next_pow2(tokens)
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
