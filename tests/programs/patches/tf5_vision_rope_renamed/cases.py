"""Vision RoPE cases: (dim, theta or None for the default, seqlen), head_dim // 2 of real
towers and odd ones; ``compute`` gives each case's inverse frequencies, output and state
dict keys for a rotary class."""
import torch

CASES = [(40, None, 1), (40, None, 64), (64, None, 100), (64, 1e4, 17), (32, 5e5, 33),
         (20, 2.5e3, 7), (80, None, 256)]


def compute(cls):
    out = []
    for dim, theta, seqlen in CASES:
        module = cls(dim) if theta is None else cls(dim, theta)
        out.append((module.inv_freq, module(seqlen), sorted(module.state_dict())))
    return out
