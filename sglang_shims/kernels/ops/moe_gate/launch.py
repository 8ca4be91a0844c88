"""Launch rules of the grouped top-k gate (``triton.moe_fused_gate_kernel``): a program
takes ``BLOCK_M`` tokens with all ``BLOCK_E`` experts of each."""

from __future__ import annotations

from ...runtime import cdiv, next_pow2
from ..space import Config


def config(tokens: int, experts: int, groups: int, topk: int) -> Config:
    """The kernel's blocks for ``tokens`` rows of ``experts`` in ``groups``, ``topk`` chosen
    (shared experts included)."""
    block_e = next_pow2(experts)
    return {"BLOCK_M": max(1, min(next_pow2(tokens), 4096 // block_e)), "BLOCK_E": block_e,
            "G_BLOCK": next_pow2(groups), "K_BLOCK": next_pow2(topk)}


def grid(tokens: int, cfg: Config) -> tuple[int]:
    return (cdiv(tokens, cfg["BLOCK_M"]),)
