"""Whether the compile check's enumeration loses anything: every width of the models
against one width per class, and two SM counts, on sm_120 (a few ops), and the same for
fp8_scaled_mm's prefill tiles on sm_90 (three SM counts); prints the verdicts."""
import dataclasses
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


# fp8_scaled_mm on sm_90, whose shared memory takes the 128 x 256 prefill tiles: which width
# takes them depends on the SM count (their last wave's fill), the variants must not
hopper = gl.load()["sm_90"]
full_mm = dataclasses.replace(full, rows=(4096,))
small_mm = dataclasses.replace(small, rows=(4096,))


def mm_variants(widths, dev):
    return kl.variants(dev, widths, kl.Specialiser(hopper.cc),
                       lambda label: label.startswith("fp8_scaled_mm"))


def mm_ids(widths, dev):
    return sorted(v.id for v in mm_variants(widths, dev))


small_hopper = mm_variants(small_mm, hopper.device())


print(json.dumps({"classes": ids(full, limits.device()) == ids(small, limits.device()),
                  "sm_count": ids(small, limits.device(36)) == ids(small, limits.device(170)),
                  "mm_classes": mm_ids(full_mm, hopper.device()) == sorted(
                      v.id for v in small_hopper),
                  "mm_sm_count": len({tuple(mm_ids(small_mm, hopper.device(sms)))
                                      for sms in (114, 132, 170)}) == 1,
                  "mm_wide": any(v.constexprs.get("BLOCK_N") == 256 for v in small_hopper),
                  "widths": [len(every), len(classed.hidden)]}))
