"""End to end: a real sglang serves through sglang-shims with no sgl-kernel installed.

One command, on a machine with one NVIDIA GPU, sglang (e.g. 0.5.1) and sglang-shims
installed in the Python running this script, and no network:

    python examples/e2e_serve.py --out results/

It builds a small BPE tokenizer and two small random-weight models (Qwen3 and Llama
architectures) offline, then

1. greedy-decodes 8 prompts x 32 tokens with Hugging Face transformers (the reference);
2. serves Qwen3 through ``python -m sglang_shims.launch`` and Llama through plain
   ``python -m sglang.launch_server`` (the .pth hook), both in float32, and compares the
   tokens of ``/generate`` (greedy) with the reference;
3. checks, from the per-process reports, that every patch that acted was applied in
   every sglang process (launcher / tokenizer manager, scheduler, detokenizer);
4. measures decode throughput in bfloat16 at batch 1 and 32 with the Triton tier and
   with the eager-PyTorch tier (``SGLANG_SHIMS_KERNEL_BACKEND=torch``), same settings.

Token criterion: identical greedy tokens in float32, where both sides compute the same
math in the same precision (the float32 runs set ``TRITON_F32_DEFAULT=ieee``: Triton's
``tl.dot`` otherwise rounds float32 inputs to TF32, and sglang's Triton attention uses
it); a sequence may differ from its first differing position only where the
reference's own top-2 logit margin there is below 1e-3 (a tie that float32 rounding may
break either way), which is reported.

``--fp32-tiers triton,torch`` also runs the float32 check on the eager-PyTorch tier and
``--attention-backend torch_native`` swaps sglang's attention backend, to bisect a
mismatch; ``e2e.json`` keeps every run's tokens and the reference's tokens and margins.

It prints a markdown table and writes ``e2e.json`` and the server logs to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

FLAGS = ["--attention-backend", "triton", "--sampling-backend", "pytorch",
         "--disable-custom-all-reduce", "--mm-attention-backend", "sdpa",
         "--grammar-backend", "none", "--disable-cuda-graph", "--mem-fraction-static", "0.3",
         "--context-length", "1024", "--log-level", "warning"]
ENV = {"SGLANG_IS_FLASHINFER_AVAILABLE": "false"}
# Triton computes tl.dot on float32 inputs in TF32 by default on sm_80+ (sglang's Triton
# attention does); the float32 correctness runs ask for IEEE float32 so that both sides
# really compute in the same precision.
FP32_ENV = {"TRITON_F32_DEFAULT": "ieee"}
CORPUS = ("the quick brown fox jumps over the lazy dog while a small model learns to serve "
          "tokens on a large gpu through patches that keep old releases alive on new stacks "
          "every kernel is compiled for the device in hand and every process reports what "
          "it did so that nobody has to edit site packages by hand again ")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_assets(work: Path) -> dict[str, Any]:
    """Tokenizer + Qwen3 + Llama with random weights, saved with save_pretrained."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import (
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
        Qwen3Config,
        Qwen3ForCausalLM,
    )

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<unk>", "<s>", "</s>"])
    tok.train_from_iterator([CORPUS] * 50, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")
    vocab = len(fast)
    common = dict(vocab_size=vocab, hidden_size=512, intermediate_size=1024,
                  num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                  head_dim=64, max_position_embeddings=1024, rope_theta=1_000_000.0,
                  rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=1,
                  eos_token_id=2, initializer_range=0.08, torch_dtype="float32")
    out = {}
    for name, cfg_cls, model_cls in (("qwen3", Qwen3Config, Qwen3ForCausalLM),
                                     ("llama", LlamaConfig, LlamaForCausalLM)):
        torch.manual_seed(1234)
        model = model_cls(cfg_cls(**common))
        with torch.no_grad():  # peakier logits: fewer near-ties in greedy decoding
            model.lm_head.weight.mul_(4.0)
        folder = work / name
        model.save_pretrained(folder, safe_serialization=True)
        fast.save_pretrained(folder)
        out[name] = folder
    prompts = [fast.encode(CORPUS[i * 23:i * 23 + 40 + 7 * i]) for i in range(8)]
    return {"models": out, "prompts": prompts, "vocab": vocab}


def reference(folder: Path, prompts: list[list[int]], new: int) -> list[dict[str, Any]]:
    """Greedy decoding with transformers in float32 on the GPU, with top-2 margins."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).cuda()
    model.eval()
    out = []
    for ids in prompts:
        with torch.no_grad():
            res = model.generate(torch.tensor([ids]).cuda(), max_new_tokens=new,
                                 do_sample=False, output_scores=True,
                                 return_dict_in_generate=True, pad_token_id=2,
                                 min_new_tokens=new)
        tokens = res.sequences[0, len(ids):].tolist()
        margins = []
        for score in res.scores:
            top = torch.topk(score[0].float(), 2).values
            margins.append(float(top[0] - top[1]))
        out.append({"tokens": tokens, "margins": margins})
    del model
    torch.cuda.empty_cache()
    return out


class Server:
    def __init__(self, cmd: list[str], env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.log = log
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([*cmd, "--port", str(self.port)], env=env,
                                     stdout=log.open("w"), stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def wait(self, timeout: float = 150) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}); see {self.log}")
            try:
                with urllib.request.urlopen(self.url + "/get_model_info", timeout=2):
                    return
            except OSError:
                time.sleep(1)
        raise RuntimeError(f"server not ready after {timeout}s; see {self.log}")

    def generate(self, prompts: list[list[int]], new: int) -> tuple[list[list[int]], float]:
        body = {"input_ids": prompts, "sampling_params": {
            "temperature": 0.0, "max_new_tokens": new, "ignore_eos": True}}
        req = urllib.request.Request(self.url + "/generate", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        start = time.perf_counter()
        with urllib.request.urlopen(req, timeout=600) as resp:
            data = json.loads(resp.read())
        elapsed = time.perf_counter() - start
        return [d["output_ids"] for d in data], elapsed

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def compare(got: list[list[int]], ref: list[dict[str, Any]], tie: float = 1e-3
            ) -> dict[str, Any]:
    """Greedy tokens against the reference; a sequence of the wrong length is its own
    failure (``length``), never a difference "at token 0" (sglang 0.5.1-0.5.4.post2
    put the prompt's tail in ``output_ids``: patch ``output-ids-prompt-tail``)."""
    exact, ties, bad = 0, [], []
    for i, (tokens, r) in enumerate(zip(got, ref, strict=True)):
        if tokens == r["tokens"]:
            exact += 1
            continue
        if len(tokens) != len(r["tokens"]):
            bad.append({"prompt": i, "length": len(tokens), "expected": len(r["tokens"])})
            continue
        pos = next(j for j, (a, b) in enumerate(zip(tokens, r["tokens"], strict=True))
                   if a != b)
        entry = {"prompt": i, "first_difference": pos, "reference_margin": r["margins"][pos]}
        (ties if r["margins"][pos] < tie else bad).append(entry)
    return {"identical": exact, "of": len(ref), "near_tie_divergences": ties, "mismatches": bad,
            "pass": not bad}


def report_summary(directory: Path) -> dict[str, Any]:
    from sglang_shims.cli.status import aggregate

    summary = aggregate(directory)
    data = summary.as_dict()
    return {"processes": [(p["role"], p["origin"], p["applied"]) for p in summary.processes],
            "verdicts": {k: v["verdict"] for k, v in data["patches"].items()},
            "problems": summary.problems}


def server_flags(attention_backend: str, cuda_graphs: bool) -> list[str]:
    """FLAGS with the chosen attention backend; CUDA graphs on (up to batch 32) or off."""
    flags = list(FLAGS)
    flags[flags.index("--attention-backend") + 1] = attention_backend
    if cuda_graphs:
        flags.remove("--disable-cuda-graph")
        flags += ["--cuda-graph-max-bs", "32"]
    return flags


def serve(name: str, cmd: list[str], model: Path, dtype: str, out: Path,
          extra_env: dict[str, str], work: list[tuple[list[list[int]], int]],
          flags: list[str]) -> dict[str, Any]:
    reports = out / f"reports-{name}"
    env = {**os.environ, **ENV, **extra_env, "SGLANG_SHIMS_REPORT_DIR": str(reports)}
    server = Server([*cmd, "--model-path", str(model), "--dtype", dtype, *flags], env,
                    out / f"server-{name}.log")
    result: dict[str, Any] = {"command": " ".join(cmd)}
    try:
        start = time.time()
        server.wait()
        result["ready_s"] = round(time.time() - start, 1)
        result["runs"] = []
        for prompts, new in work:
            for _ in range(2):  # warm-up at this batch size (Triton JIT, allocator, graphs)
                server.generate(prompts, 8)
            tokens, seconds = server.generate(prompts, new)
            result["runs"].append({"batch": len(prompts), "new": new, "seconds": seconds,
                                   "tokens": tokens,
                                   "tok_per_s": round(len(prompts) * new / seconds, 1)})
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        server.stop()
    time.sleep(2)
    result["report"] = report_summary(reports) if reports.is_dir() else None
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("e2e-results"))
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--decode", type=int, default=128, help="tokens per throughput run")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--models", default="qwen3,llama",
                        help="which correctness runs (qwen3 via the launcher, llama via .pth)")
    parser.add_argument("--attention-backend", default="triton",
                        help="sglang attention backend for every run (triton, torch_native)")
    parser.add_argument("--cuda-graphs", action="store_true",
                        help="throughput runs with sglang's CUDA graphs (up to batch 32)")
    parser.add_argument("--fp32-tiers", default="triton",
                        help="kernel tiers for the float32 correctness runs: triton,torch")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    work_dir = Path(tempfile.mkdtemp(prefix="sglang-shims-e2e-"))
    assets = build_assets(work_dir)
    prompts = assets["prompts"]
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "gpu": torch.cuda.get_device_name(0),
        "python": platform.python_version(), "torch": torch.__version__}
    for dist in ("sglang", "transformers", "triton", "sglang-shims", "sgl-kernel"):
        try:
            from importlib.metadata import version

            results[dist] = version(dist)
        except Exception:
            results[dist] = None
    launcher = [sys.executable, "-m", "sglang_shims.launch"]
    plain = [sys.executable, "-m", "sglang.launch_server"]
    for name, cmd in (("qwen3", launcher), ("llama", plain)):
        if name not in args.models.split(","):
            continue
        ref = reference(assets["models"][name], prompts, args.new)
        results[f"{name}-reference"] = ref
        for tier in args.fp32_tiers.split(","):
            key = f"{name}-fp32" + ("" if tier == "triton" else f"-{tier}")
            env = dict(FP32_ENV)
            if tier != "triton":
                env["SGLANG_SHIMS_KERNEL_BACKEND"] = tier
            run = serve(key, cmd, assets["models"][name], "float32", args.out, env,
                        [(prompts, args.new)],
                        server_flags(args.attention_backend, cuda_graphs=False))
            if run.get("runs"):  # tokens are kept in e2e.json for bisecting a mismatch
                run["compare"] = compare(run["runs"][0]["tokens"], ref)
            results[key] = run
            print(json.dumps({key: {k: v for k, v in run.items() if k != "runs"}}, indent=1),
                  flush=True)
    if not args.skip_throughput:
        batch32 = (prompts * 4)[:32]
        for tier, env in (("triton", {}), ("torch", {"SGLANG_SHIMS_KERNEL_BACKEND": "torch"})):
            run = serve(f"qwen3-bf16-{tier}", plain, assets["models"]["qwen3"], "bfloat16",
                        args.out, env, [(prompts[:1], args.decode), (batch32, args.decode)],
                        server_flags(args.attention_backend, args.cuda_graphs))
            run["cuda_graphs"] = args.cuda_graphs
            for r in run.get("runs", []):
                r.pop("tokens", None)
            results[f"qwen3-bf16-{tier}"] = run
            print(json.dumps({tier: run}, indent=1), flush=True)
    (args.out / "e2e.json").write_text(json.dumps(results, indent=1))
    print(markdown(results))
    ok = all(results[k].get("compare", {}).get("pass") for k in results if "-fp32" in k)
    return 0 if ok else 1


def markdown(results: dict[str, Any]) -> str:
    lines = [f"date {results['date']}; {results['gpu']}; torch {results['torch']}; sglang"
             f" {results['sglang']}; transformers {results['transformers']}; triton"
             f" {results['triton']}; sgl-kernel installed: {results['sgl-kernel']}", "",
             "| run | started by | tokens vs transformers | processes (role, origin, applied)"
             " | patch verdicts |", "|---|---|---|---|---|"]
    for key in [k for k in results if "-fp32" in k]:
        run = results.get(key, {})
        cmp = run.get("compare", {})
        verdicts = "; ".join(f"{k}: {v}" for k, v in (run.get("report") or {}).get(
            "verdicts", {}).items() if "not-applicable" not in v and "disabled" not in v)
        ties = f", {len(cmp.get('near_tie_divergences', []))} near-tie" if cmp else ""
        tokens = f"{cmp['identical']}/{cmp['of']} identical{ties}" if cmp else "no tokens"
        error = f", ERROR {run['error']}" if "error" in run else ""
        processes = (run.get("report") or {}).get("processes")
        lines.append(f"| {key} | {run.get('command', '')} | {tokens}{error} | {processes}"
                     f" | {verdicts} |")
    graphs = results.get("qwen3-bf16-triton", {}).get("cuda_graphs")
    label = {True: "CUDA graphs on", False: "CUDA graphs off"}.get(graphs, "CUDA graphs ?")
    lines += ["", f"| decode throughput, bf16, {label} | batch 1 tok/s | batch 32 tok/s |",
              "|---|---|---|"]
    tiers = {}
    for tier in ("triton", "torch"):
        runs = results.get(f"qwen3-bf16-{tier}", {}).get("runs", [])
        tiers[tier] = [r["tok_per_s"] for r in runs]
        lines.append(f"| {tier} tier | " + " | ".join(str(x) for x in tiers[tier]) + " |")
    if len(tiers["triton"]) == 2 and len(tiers["torch"]) == 2:
        ratios = [a / b for a, b in zip(tiers["triton"], tiers["torch"], strict=True)]
        lines.append("| ratio Triton / eager | " + " | ".join(f"{r:.2f}x" for r in ratios) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
