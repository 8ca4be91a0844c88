"""Whether the compile check's enumeration loses anything: every width of the models
against one width per class, and two SM counts, on sm_120 (a few ops); prints the verdicts."""
import json

from tools.gpus import launches as kl
from tools.gpus import limits as gl

limits = gl.load()["sm_120"]
classed = kl.model_widths()
shapes = gl.read_toml(kl.SHAPES)["widths"]
every = {*shapes["hidden"], *shapes["odd"], *kl.EDGES}
full = kl.Widths(hidden=tuple(sorted(every)), intermediate=classed.intermediate,
                 head_dims=tuple(shapes["head_dim"]), routing=classed.routing[:2],
                 gates=classed.gates[:1], rope=classed.rope[:2], rows=(1, 4096))
small = kl.Widths(hidden=classed.hidden, intermediate=classed.intermediate,
                  head_dims=classed.head_dims, routing=full.routing, gates=full.gates,
                  rope=full.rope, rows=full.rows)


def only(label):
    return label.split()[0] in ("rmsnorm", "moe_sum", "sgl_per_token_quant_fp8")


def ids(widths, dev):
    return sorted(v.id for v in kl.variants(dev, widths, kl.Specialiser(limits.cc), only))


print(json.dumps({"classes": ids(full, limits.device()) == ids(small, limits.device()),
                  "sm_count": ids(small, limits.device(36)) == ids(small, limits.device(170)),
                  "widths": [len(every), len(classed.hidden)]}))
