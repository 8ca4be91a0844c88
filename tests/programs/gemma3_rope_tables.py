"""The two rotary tables of a Gemma 3 text model (hidden size 256) at given positions."""
import torch


def rope_tables(model, positions):
    """{name: {"inv_freq", "cos", "sin"}} for the model's global and local rotary tables."""
    tables = {}
    ids = torch.tensor([positions])
    x = torch.zeros(1, len(positions), 256)
    for name in ("rotary_emb", "rotary_emb_local"):
        rope = getattr(model, name)
        cos, sin = rope(x, ids)
        tables[name] = {"inv_freq": rope.inv_freq.tolist(), "cos": cos[0].tolist(),
                        "sin": sin[0].tolist()}
    return tables
