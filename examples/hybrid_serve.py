"""sglang 0.5.1 served on the real sglang-kernel 0.4.5 (the hybrid tier), on a GPU.

sglang 0.5.1 pins sgl-kernel 0.3.5; sglang-kernel 0.4.5 (built for torch 2.11 + CUDA 13,
what an H200 with today's torch loads) no longer exports 15 names 0.5.1 imports, among
them ``apply_rope_with_cos_sin_cache_inplace``, which every model's rotary embedding
calls on every forward.  With sglang-shims the real kernel serves every op it still has;
the RoPE goes through an adapter to 0.4.5's ``rotary_embedding`` where that gives
sglang's result (float32, no fused KV write) and through our Triton kernel otherwise.
This script shows, in order:

1. **stock fails**: ``SGLANG_SHIMS=0``, importing sglang's rotary embedding on the real
   kernel raises ``ImportError: cannot import name ...`` (the line is kept);
2. **who serves each op**: in a child with the shims on, the per-op table of
   ``status()["sgl-kernel-missing-symbols"]["details"]["kernel_ops"]`` (real kernel /
   adapter / ours / none) and where ``sgl_kernel`` was loaded from;
3. **adapter or ours** (measure and choose): the RoPE of a Qwen3-0.6B-sized layer
   (16 query heads, 8 KV heads of 128) at 1, 32 and 4096 tokens through the adapter
   (the real kernel), through our Triton kernel, both in float32, and ours in bfloat16:
   median microseconds (CUDA events) and the largest difference adapter vs ours;
4. **serving**: ``examples/e2e_serve.py`` with mode ``real`` (= the hybrid: the real
   kernel first on ``PYTHONPATH``) for the Qwen3 and Llama models, float32 greedy tokens
   against transformers, and decode throughput at batch 1 and 32 for ``real:aot`` (the
   hybrid), ``none:triton`` (pure fallback) and ``none:torch`` (the eager tier).

Run on the GPU machine, with sglang 0.5.1 and its dependencies importable and this
project installed (benchmarks/README.md says how to carry them: the wheelhouse, and the
0.4.5 wheel's ``sgl_kernel/`` unpacked without ``flash_ops.abi3.so``, ``sm100/``,
``infllm_ops*`` and ``flashmla_ops*`` -- 19 MB -- plus its dist-info, into KERNEL_DIR)::

    python examples/hybrid_serve.py --kernel-dir KERNEL_DIR --out $OUT/hybrid

It writes ``hybrid.json`` and ``hybrid.md`` to ``--out`` (and e2e_serve's ``e2e.md`` /
``e2e.json`` under ``--out/e2e``).  Not run in CI: it needs the GPU and the real kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

STOCK = """
import traceback
try:
    import sglang.srt.layers.rotary_embedding
    print("IMPORTED")
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
"""

PROVIDERS = """
import json, sys
import sgl_kernel
import sglang.srt.layers.rotary_embedding, sglang.srt.layers.layernorm
import sglang.srt.layers.activation, sglang.srt.layers.sampler, sglang.srt.models.qwen3
import sglang.srt.models.llama
import sglang_shims
entry = sglang_shims.status()["sgl-kernel-missing-symbols"]
from importlib.metadata import version
print(json.dumps({"kernel_file": sgl_kernel.__file__, "kernel": version("sglang-kernel"),
                  "state": entry["state"], "reason": entry["reason"], "notes": entry["notes"],
                  "kernel_ops": entry["details"].get("kernel_ops", {})}))
"""

ROPE_BENCH = """
import json, torch
import sgl_kernel  # the patch binds the route on this module
from sglang_shims.kernels import apply_rope_with_cos_sin_cache_inplace as ours
adapter = sgl_kernel.apply_rope_with_cos_sin_cache_inplace
heads, kv, head, rows = 16, 8, 128, 40960
base = 1e6
inv = 1.0 / base ** (torch.arange(0, head, 2, dtype=torch.float32, device="cuda") / head)
freqs = torch.outer(torch.arange(rows, device="cuda", dtype=torch.float32), inv)
cache = torch.cat((freqs.cos(), freqs.sin()), -1)

def timed(fn, q, k, pos, reps=200):
    for _ in range(10):
        fn(pos, q, k, head, cache, True)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record(); fn(pos, q, k, head, cache, True); end.record()
        torch.cuda.synchronize(); times.append(start.elapsed_time(end) * 1000)
    return sorted(times)[len(times) // 2]

out = {}
for tokens in (1, 32, 4096):
    pos = torch.randint(0, rows, (tokens,), device="cuda")
    row = {}
    for label, fn, dtype in (("adapter_fp32", adapter, torch.float32),
                             ("ours_fp32", ours, torch.float32),
                             ("ours_bf16", ours, torch.bfloat16),
                             ("adapter_bf16 (= ours)", adapter, torch.bfloat16)):
        qkv = torch.randn(tokens, (heads + 2 * kv) * head, device="cuda", dtype=dtype)
        q, k = qkv[:, :heads * head], qkv[:, heads * head:(heads + kv) * head]
        row[label] = round(timed(fn, q, k, pos), 2)
    qkv = torch.randn(tokens, (heads + 2 * kv) * head, device="cuda")
    a = qkv.clone(); b = qkv.clone()
    for t, fn in ((a, adapter), (b, ours)):
        fn(pos, t[:, :heads * head], t[:, heads * head:(heads + kv) * head], head, cache, True)
    row["max_abs_diff_fp32"] = float((a - b).abs().max())
    out[str(tokens)] = row
print(json.dumps(out))
"""


def run(code: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    # cwd "/": ``-c`` puts the cwd first on sys.path; the installed sglang-shims is under test
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, text=True,
                          capture_output=True, timeout=timeout, check=False, cwd="/")


def last_json(proc: subprocess.CompletedProcess[str]) -> Any:
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": (proc.stderr or proc.stdout)[-3000:]}


def markdown(results: dict[str, Any]) -> str:
    lines = ["# sglang 0.5.1 on sglang-kernel 0.4.5 (hybrid tier)", "",
             f"Stock (SGLANG_SHIMS=0): `{results['stock']}`", "",
             "| op | served by |", "|---|---|"]
    ops = results["providers"].get("kernel_ops", {})
    lines += [f"| {name} | {who} |" for name, who in ops.items() if who != "real kernel"]
    real = sum(1 for who in ops.values() if who == "real kernel")
    lines += [f"| (every other name sglang 0.5.1 imports: {real}) | real kernel |", "",
              "RoPE, median us per call (CUDA events):", "",
              "| tokens | " + " | ".join(next(iter(results["rope"].values()), {})) + " |"]
    for tokens, row in results["rope"].items():
        if isinstance(row, dict):
            lines.append(f"| {tokens} | " + " | ".join(str(v) for v in row.values()) + " |")
    lines += ["", f"e2e_serve exit status: {results['e2e_rc']} (tables in e2e/e2e.md)", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel-dir", type=Path, required=True,
                        help="folder holding the real sgl_kernel 0.4.5 package and dist-info")
    parser.add_argument("--out", type=Path, default=Path("hybrid-results"))
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--skip-serve", action="store_true", help="steps 1-3 only")
    parser.add_argument("e2e_args", nargs="*",
                        help="after --: more e2e_serve.py arguments (e.g. --reps 2 --decode 64)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    kernel = str(args.kernel_dir.resolve())
    path = os.pathsep.join(p for p in (kernel, os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    results: dict[str, Any] = {}
    stock = run(STOCK, {**env, "SGLANG_SHIMS": "0"})
    results["stock"] = (stock.stdout.strip().splitlines() or [stock.stderr[-300:]])[-1]
    results["providers"] = last_json(run(PROVIDERS, env))
    results["rope"] = last_json(run(ROPE_BENCH, env))
    results["e2e_rc"] = None
    if not args.skip_serve:
        cmd = [sys.executable, str(HERE / "e2e_serve.py"), "--out", str(args.out / "e2e"),
               "--kernel-dir", kernel, "--modes", "real", "--real-float32", "--cuda-graphs",
               "--speed", "real:aot,none:triton,none:torch", "--batches", args.batches,
               *args.e2e_args]
        # e2e_serve puts --kernel-dir first on PYTHONPATH for mode real only; given this
        # script's env, its mode-none runs would load the real kernel too
        results["e2e_rc"] = subprocess.run(cmd, env=dict(os.environ), check=False).returncode
    (args.out / "hybrid.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    text = markdown(results)
    (args.out / "hybrid.md").write_text(text, encoding="utf-8")
    print(text)
    ok = "IMPORTED" not in results["stock"] and results["providers"].get("state") == "applied"
    return 0 if ok and results["e2e_rc"] in (0, None) else 1


if __name__ == "__main__":
    sys.exit(main())
