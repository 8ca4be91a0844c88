"""End to end: a real sglang serves through sglang-shims, with and without a real sgl-kernel.

One command, on a machine with one NVIDIA GPU, sglang and sglang-shims installed in the
Python running this script, and no network:

    python examples/e2e_serve.py --out results/                       # sglang 0.5.1 style
    python examples/e2e_serve.py --out results/ --kernel-dir DIR --modes none,real,broken \
        --speed none:triton,none:torch,real:aot --cuda-graphs         # with a real kernel

(``benchmarks/gpu_e2e.sh`` installs a carried sglang and runs this.)  It builds a small
BPE tokenizer and two small random-weight models (Qwen3 and Llama architectures)
offline, then

1. greedy-decodes 8 prompts x 32 tokens with Hugging Face transformers (the reference);
2. serves Qwen3 through ``python -m sglang_shims.launch`` and Llama through plain
   ``python -m sglang.launch_server`` (the .pth hook), both in float32, once per kernel
   mode -- ``none``: no sgl_kernel importable (the fallback serves); ``real``: the
   ``sgl_kernel`` in ``--kernel-dir`` first on ``PYTHONPATH`` (stock; the shims stand
   back); ``broken``: a copy of it whose ``common_ops`` cannot load (it needs
   ``libcudart.so.12``, as a kernel built for CUDA 12 does on a CUDA 13 stack), so the
   fallback takes over and says why -- and compares the tokens of ``/generate`` with the
   reference and with the ``real`` run;
3. checks, from the per-process reports, that every patch that acted was applied in
   every sglang process (launcher / tokenizer manager, scheduler, detokenizer);
4. ``--speed``: one bfloat16 Qwen3 server per ``MODE:TIER`` (``none:triton``,
   ``none:torch`` = the eager tier, ``real:aot``), same flags: decode tok/s at each batch
   size (median of ``--reps``), per-step latency p50/p99 from the scheduler's own
   per-step log line (``--decode-log-interval 1``), TTFT of a long prompt, and the number
   of Triton kernels compiled during the timed part (a fresh ``TRITON_CACHE_DIR`` per
   server, counted before and after).

``--models`` also takes the issue-17 models (``examples/_e2e_models.py``): ``qwen3moe``
(Qwen3-MoE, 8 experts, top-2, served in float32 -- sglang's fused-MoE Triton kernel rounds
its expert outputs to float16 for any input that is not bfloat16, so float32 is the closest
fair comparison), ``qwen3-fp8`` (dense Qwen3, 128x128 block FP8 weights, bf16: what
sglang 0.5.17 serves with its own kernels only) and ``llama-fp8`` (dense Llama, per-tensor
FP8, bf16: needs ``sgl_kernel.fp8_scaled_mm``).  The reference runs the dequantised
weights with sglang's activation rounding; the criterion (printed, ``tolerance``) is
teacher-forced top-1 agreement against what rounding alone costs the reference, since
exact identity is not a fair test there.  The run prints which ops each of these models
calls on CUDA and whether the fallback implements them, checked against the installed
sglang's source.  ``--speed-models`` times them next to the eager tier.

What is compared is printed and kept (``--eos``): by default EOS is not special on
either side (transformers: argmax of the raw logits with its KV cache, no logits
processors; sglang: ``ignore_eos=True``); ``--eos min-new-tokens`` masks EOS for the
first N tokens on both sides instead.  Token criterion: identical greedy tokens in
float32, where both sides compute the same math in the same precision (the float32 runs
set ``TRITON_F32_DEFAULT=ieee``: Triton's ``tl.dot`` otherwise rounds float32 inputs to
TF32, and sglang's Triton attention uses it); a sequence may differ from its first
differing position only where the reference's own top-2 logit margin there is below
1e-3 (a tie that float32 rounding may break either way), which is reported.

The float32 servers run side by side (small models, one GPU); speed servers one at a
time.  It prints a markdown table and writes ``e2e.json`` (every run's tokens, the
reference's tokens and margins), ``e2e.md`` and the server logs to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import _e2e_models as e2e_models  # examples/, next to this script
import _e2e_trace as e2e_trace

STEP_TRACE = Path(__file__).resolve().parent / "step_trace"
"""Put first on a server's ``PYTHONPATH`` by ``--step-trace`` (see its ``sitecustomize``)."""

FLAGS = ["--attention-backend", "triton", "--sampling-backend", "pytorch",
         "--disable-custom-all-reduce", "--mm-attention-backend", "sdpa",
         "--grammar-backend", "none", "--disable-cuda-graph", "--mem-fraction-static", "0.3",
         "--context-length", "4096", "--log-level", "warning"]
ENV = {"SGLANG_IS_FLASHINFER_AVAILABLE": "false",
       # NVLink multicast off, always: on a shared multi-GPU host it can put the GPUs out of
       # service (the device notes); sglang's own --enable-nccl-nvls stays at its default off
       "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
       "NVSHMEM_DISABLE_NVLS": "1"}
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


DENSE_SHAPE = ("hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads",
               "num_key_value_heads", "head_dim")
"""The fields of ``--speed-model`` and ``--speed-fp8``, in their order."""
MOE_SHAPE = ("hidden_size", "num_hidden_layers", "moe_intermediate_size", "num_experts",
             "num_experts_per_tok", "num_attention_heads", "num_key_value_heads", "head_dim")
"""The fields of ``--speed-moe``, in its order."""


def build_assets(work: Path, speed_shape: str = "", extra: list[str] | None = None,
                 moe_shape: str = "", fp8_shape: str = "",
                 fp8_speed: tuple[str, ...] = ()) -> dict[str, Any]:
    """Tokenizer + Qwen3 + Llama with random weights, saved with save_pretrained, and the
    MoE/FP8 models of ``extra`` (``_e2e_models.build``: the folder sglang serves and the
    one transformers runs, which differ for FP8).

    ``speed_shape`` ("HIDDEN,LAYERS,INTERMEDIATE,HEADS,KV_HEADS,HEAD_DIM") adds a third,
    larger Qwen3 saved in bfloat16 that only the speed runs use: on the small model a decode
    step is bound by sglang's host-side loop, and the kernels' speed does not show.
    ``moe_shape`` (:data:`MOE_SHAPE`) likewise adds a bfloat16 Qwen3-MoE,
    ``qwen3moe-speed``, that the ``qwen3moe`` speed runs serve instead of the small one, and
    ``fp8_shape`` (:data:`DENSE_SHAPE`) an FP8 model of that shape for each name of
    ``fp8_speed`` (``qwen3-fp8-speed``, ...), served by their speed runs."""
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
                  head_dim=64, max_position_embeddings=4096, rope_theta=1_000_000.0,
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
    if speed_shape:
        torch.manual_seed(1234)
        big = dict(common, **shape_fields(DENSE_SHAPE, speed_shape), torch_dtype="bfloat16",
                   initializer_range=0.02)
        model = Qwen3ForCausalLM(Qwen3Config(**big)).to(torch.bfloat16)
        folder = work / "qwen3-speed"
        model.save_pretrained(folder, safe_serialization=True)
        fast.save_pretrained(folder)
        out["qwen3-speed"] = folder
    if moe_shape:
        moe = dict(common, **shape_fields(MOE_SHAPE, moe_shape), initializer_range=0.02,
                   torch_dtype="bfloat16")
        out["qwen3moe-speed"] = e2e_models.build("qwen3moe", moe, work / "speed", fast,
                                                 bf16=True)["serve"]
    for name in fp8_speed if fp8_shape else ():
        dense = dict(common, **shape_fields(DENSE_SHAPE, fp8_shape), initializer_range=0.02,
                     torch_dtype="bfloat16")
        out[f"{name}-speed"] = e2e_models.build(name, dense, work / "speed", fast,
                                                bf16=True)["serve"]
    references = dict(out)
    for name in extra or []:
        folders = e2e_models.build(name, common, work, fast)
        out[name], references[name] = folders["serve"], folders["reference"]
    prompts = [fast.encode(CORPUS[i * 23:i * 23 + 40 + 7 * i]) for i in range(8)]
    return {"models": out, "references": references, "prompts": prompts, "vocab": vocab}


def shape_fields(fields: tuple[str, ...], shape: str) -> dict[str, int]:
    """A ``--speed-*`` shape ("2048,6,...") as the config fields it names, in order."""
    return dict(zip(fields, (int(x) for x in shape.split(",")), strict=True))


def reference(folder: Path, prompts: list[list[int]], new: int, eos: str = "ignore",
              eos_id: int = 2, act_group: int | None = None, device: str = "cuda"
              ) -> list[dict[str, Any]]:
    """Greedy decoding with transformers in float32 on the GPU, with top-2 margins.

    ``act_group`` (FP8 models): every quantised linear's input is rounded as sglang's
    dynamic activation quantisation rounds it (``_e2e_models.fake_quant``), so that the
    reference computes the quantised model's math.

    ``eos="ignore"`` (default): a plain argmax loop over the model's raw logits with its
    KV cache -- no logits processors, EOS is a token like any other -- which is what
    sglang computes with ``ignore_eos=True`` and temperature 0.  ``eos="min-new-tokens"``:
    ``generate(min_new_tokens=new)``, which masks EOS until ``new`` tokens exist; sglang
    is then asked for ``min_new_tokens=new`` too (see :func:`sampling_params`).
    """
    import torch

    model = load_reference(folder, torch.float32, act_group, device)
    out = []
    for ids in prompts:
        with torch.no_grad():
            if eos == "min-new-tokens":
                res = model.generate(torch.tensor([ids], device=device), max_new_tokens=new,
                                     do_sample=False, output_scores=True,
                                     return_dict_in_generate=True, pad_token_id=eos_id,
                                     min_new_tokens=new)
                tokens = res.sequences[0, len(ids):].tolist()
                scores = [s[0] for s in res.scores]
            else:
                tokens, scores = [], []
                step = model(torch.tensor([ids], device=device), use_cache=True)
                for _ in range(new):
                    logits = step.logits[0, -1].float()
                    token = int(torch.argmax(logits))
                    tokens.append(token)
                    scores.append(logits)
                    step = model(torch.tensor([[token]], device=device),
                                 past_key_values=step.past_key_values, use_cache=True)
        margins = []
        for score in scores:
            top = torch.topk(score.float(), 2).values
            margins.append(float(top[0] - top[1]))
        out.append({"tokens": tokens, "margins": margins})
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return out


def load_reference(folder: Path, dtype: Any, act_group: int | None, device: str) -> Any:
    """A transformers model in ``dtype`` on ``device``, in eval mode; with ``act_group``,
    its quantised linears' inputs rounded as sglang's FP8 path rounds them."""
    import transformers
    from transformers import AutoModelForCausalLM

    key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    model = AutoModelForCausalLM.from_pretrained(folder, **{key: dtype}).to(device)
    model.eval()
    if act_group is not None and not e2e_models.install_fake_quant(model, act_group):
        raise RuntimeError(f"{folder}: no quantised linear layer found for the reference")
    return model


def forced_logits(model: Any, prompts: list[list[int]], ref: list[dict[str, Any]],
                  device: str) -> list[Any]:
    """Per prompt, the float32 logits that predicted each reference token, from one
    forward pass over the prompt and the reference's tokens (teacher forcing)."""
    import torch

    out = []
    with torch.no_grad():
        for ids, r in zip(prompts, ref, strict=True):
            seq = torch.tensor([ids + r["tokens"][:-1]], device=device)
            out.append(model(seq).logits[0, len(ids) - 1:].float())
    return out


def tolerance(folder: Path, prompts: list[list[int]], ref: list[dict[str, Any]],
              dtype: str, act_group: int | None, device: str = "cuda") -> dict[str, Any]:
    """The criterion for a model sglang cannot serve in plain float32 (MoE, FP8).

    The reference runs twice, teacher-forced on its own tokens: in float32 and in
    ``dtype`` (the precision sglang computes the model in, or, for the MoE model, the
    float16 its fused-MoE kernel rounds expert outputs to).  How often that run's top-1
    still equals the reference's token (``agreement``) is what rounding alone costs;
    sglang must reach it less ``AGREEMENT_SLACK`` (``floor``).  ``noise`` is the largest
    change of the float32 top-2 margin between the two runs, and ``tie = 2 x noise`` (at
    least 1e-3; 2 because sglang's rounding and the reference's are not the same draw)
    the margin below which a disagreement is excused.  FP8 rounds activations to 3
    mantissa bits, so a last-bit difference before quantisation flips whole steps:
    exact token identity is no fair test there (measured on CPU: a bf16 run of the FP8
    reference agrees with its float32 run at 84 % of positions)."""
    import torch

    runs = []
    for torch_dtype in (torch.float32, getattr(torch, dtype)):
        model = load_reference(folder, torch_dtype, act_group, device)
        runs.append(forced_logits(model, prompts, ref, device))
        del model
    noise, agree, total = 0.0, 0, 0
    for exact, low, r in zip(*runs, ref, strict=True):
        top = torch.topk(exact, 2, dim=-1).indices
        a, b = exact.gather(-1, top), low.gather(-1, top)
        noise = max(noise, float(((a[:, 0] - a[:, 1]) - (b[:, 0] - b[:, 1])).abs().max()))
        agree += sum(int(t) == want for t, want in zip(low.argmax(-1), r["tokens"], strict=True))
        total += len(r["tokens"])
    tie = round(max(1e-3, 2 * noise), 6)
    agreement = agree / total
    floor = round(agreement - AGREEMENT_SLACK, 4)
    return {"dtype": dtype, "noise": round(noise, 6), "tie": tie,
            "agreement": round(agreement, 4), "floor": floor,
            "rule": f"(a) teacher-forced on the reference's tokens, sglang's top-1 equals"
                    f" the reference's token at >= {floor:.1%} of positions (the reference's"
                    f" own {dtype} run: {agreement:.1%}, less {AGREEMENT_SLACK:.0%}), and no"
                    f" disagreement where the reference's top-2 margin is >= {tie:.4g};"
                    f" (b) the generated sequences leave the reference only where that"
                    f" margin is below {tie:.4g} (2 x {noise:.4g}, the largest change of the"
                    f" margin when the reference runs in {dtype}, teacher-forced: a loose"
                    f" bound, one rounding or routing flip sets it)"}


# Slack of criterion (a): with 8 x 32 = 256 positions, an agreement rate near 0.85 has a
# binomial standard deviation of about 2.2 points; 10 points is 4.5 of them.  Measured on
# CPU (4 prompts x 32 tokens): the references with one layer's MLP weights 10 % off agree
# at 73 % (FP8, floor 74 %) and 55 % (MoE, floor 90 %); a wrong scale layout or routing is
# far coarser than that.
AGREEMENT_SLACK = 0.10


def forced_compare(scored: list[list[tuple[int, float]]], ref: list[dict[str, Any]],
                   tie: float, floor: float) -> dict[str, Any]:
    """sglang's teacher-forced top-1 per position against the reference's tokens: the
    agreement rate must reach ``floor``, and every disagreement must sit where the
    reference's own top-2 margin is below ``tie``."""
    agree, total, bad = 0, 0, []
    for i, (got, r) in enumerate(zip(scored, ref, strict=True)):
        if len(got) != len(r["tokens"]):
            bad.append({"prompt": i, "positions": len(got), "expected": len(r["tokens"])})
            continue
        for pos, ((token, _margin), want) in enumerate(zip(got, r["tokens"], strict=True)):
            total += 1
            if token == want:
                agree += 1
            elif r["margins"][pos] >= tie:
                bad.append({"prompt": i, "position": pos, "got": token, "expected": want,
                            "reference_margin": r["margins"][pos]})
    rate = agree / total if total else 0.0
    return {"agreement": round(rate, 4), "positions": total, "floor": floor,
            "mismatches": bad, "pass": not bad and rate >= floor}


def sampling_params(new: int, eos: str = "ignore") -> dict[str, Any]:
    """What sglang is asked for: greedy, and EOS treated as the reference treats it."""
    params: dict[str, Any] = {"temperature": 0.0, "max_new_tokens": new}
    if eos == "min-new-tokens":
        params["min_new_tokens"] = new
    else:
        params["ignore_eos"] = True
    return params


WHAT_WAS_COMPARED = {
    "ignore": "greedy tokens, EOS not special on either side: transformers = argmax of the raw"
              " logits at every step (own loop with KV cache, no logits processors); sglang ="
              " temperature 0, ignore_eos=True",
    "min-new-tokens": "greedy tokens, EOS masked for the first N tokens on both sides:"
                      " transformers generate(min_new_tokens=N); sglang min_new_tokens=N",
}


class Server:
    def __init__(self, cmd: list[str], env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.log = log
        self.url = f"http://127.0.0.1:{self.port}"
        # cwd: the log's folder, never the checkout -- ``python -m`` puts the cwd first on
        # sys.path, and a source tree there would shadow the installed sglang-shims under test
        self.proc = subprocess.Popen([*cmd, "--port", str(self.port)], env=env,
                                     stdout=log.open("w"), stderr=subprocess.STDOUT,
                                     start_new_session=True, cwd=log.parent)

    def wait(self, timeout: float = 300) -> None:
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

    def generate(self, prompts: list[list[int]], new: int, eos: str = "ignore"
                 ) -> tuple[list[list[int]], float]:
        body = {"input_ids": prompts, "sampling_params": sampling_params(new, eos)}
        req = urllib.request.Request(self.url + "/generate", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        start = time.perf_counter()
        with urllib.request.urlopen(req, timeout=600) as resp:
            data = json.loads(resp.read())
        elapsed = time.perf_counter() - start
        if isinstance(data, dict):
            data = [data]
        return [d["output_ids"] for d in data], elapsed

    def score(self, prompts: list[list[int]], ref: list[dict[str, Any]]
              ) -> list[list[tuple[int, float]]]:
        """Teacher forcing: each prompt followed by the reference's tokens, scored in one
        prefill; per reference token, sglang's top-1 token and top-2 margin there.

        sglang returns one entry per input token from ``logprob_start_len`` on, the first
        being ``None`` (it predicts nothing) and entry ``j`` the distribution for the token
        at ``start + j``: starting one before the first reference token gives exactly the
        reference's positions."""
        body = {"input_ids": [p + r["tokens"] for p, r in zip(prompts, ref, strict=True)],
                "sampling_params": {"temperature": 0.0, "max_new_tokens": 1},
                "return_logprob": True, "top_logprobs_num": 2,
                "logprob_start_len": [len(p) - 1 for p in prompts]}
        req = urllib.request.Request(self.url + "/generate", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as resp:
            data = json.loads(resp.read())
        out = []
        for d, r in zip(data if isinstance(data, list) else [data], ref, strict=True):
            rows = d["meta_info"]["input_top_logprobs"]
            if len(rows) != len(r["tokens"]) + 1 or rows[0] is not None:
                raise RuntimeError(f"unexpected input_top_logprobs layout: {len(rows)} rows"
                                   f" for {len(r['tokens'])} tokens, first {rows[0]!r}")
            out.append([(int(row[0][1]), float(row[0][0]) - float(row[1][0]))
                        for row in rows[1:]])
        return out

    def log_size(self) -> int:
        time.sleep(0.3)  # let the scheduler's last log line of a request land
        return self.log.stat().st_size

    def log_text(self, start: int, end: int) -> str:
        with self.log.open("rb") as f:
            f.seek(start)
            return f.read(end - start).decode("utf-8", "replace")

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
            "problems": summary.problems,
            "fallback_reasons": sorted({
                str(p.get("patches", {}).get("sgl-kernel-triton-fallback", {}).get("reason"))
                for p in _reports(directory)})}


def _reports(directory: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(directory.glob("*.json")):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            pass
    return out


def server_flags(attention_backend: str, cuda_graphs: bool, sglang: str = "0.5.1",
                 max_bs: int = 32, mem: str = "0.3", speed_log: bool = False) -> list[str]:
    """FLAGS with the chosen attention backend; CUDA graphs on (decode, up to ``max_bs``)
    or off.  sglang >= 0.5.10 also captures prefill graphs by default: kept off, so that
    every release runs the same decode-only graphs.  ``speed_log``: one scheduler log line
    per decode step (its step time), at INFO."""
    flags = list(FLAGS)
    flags[flags.index("--attention-backend") + 1] = attention_backend
    flags[flags.index("--mem-fraction-static") + 1] = mem
    if cuda_graphs:
        flags.remove("--disable-cuda-graph")
        flags += ["--cuda-graph-max-bs", str(max_bs)]
        if _newer(sglang, "0.5.10"):
            flags += ["--disable-prefill-cuda-graph"]
    if speed_log:
        flags[flags.index("--log-level") + 1] = "info"
        flags += ["--decode-log-interval", "1"]
    return flags


def tp_flags(tp: int) -> list[str]:
    """Tensor parallel over ``tp`` GPUs: one scheduler process per rank, each
    must show the patches applied in its report.  Custom all-reduce is already off
    (FLAGS); NVLink multicast is off through ENV."""
    return [] if tp <= 1 else ["--tp-size", str(tp)]


def _newer(version: str, than: str) -> bool:
    from packaging.version import Version

    try:
        return Version(version) >= Version(than)
    except Exception:
        return False


STEP = re.compile(r"Decode batch[^\n]*?#running-req: (\d+)[^\n]*?(cuda graph|graph)[^:\n]*:"
                  r" (True|False)[^\n]*?gen throughput \(token/s\): ([0-9.]+)")


def step_times(log: str, batch: int) -> tuple[list[float], int]:
    """Per-step seconds from the scheduler's decode lines (one per step at
    ``--decode-log-interval 1``: batch / gen throughput), dropping each request's first
    line (it spans the prefill and the idle time before it); and how many steps ran
    outside a CUDA graph."""
    steps, no_graph = [], 0
    for match in list(STEP.finditer(log))[1:]:
        running, graph, throughput = int(match.group(1)), match.group(3), float(match.group(4))
        if running != batch or throughput <= 0:
            continue
        steps.append(running / throughput)
        no_graph += graph == "False"
    return steps, no_graph


def slow_steps(steps: list[float], per_rep: int, factor: float = 1.5) -> list[list[float]]:
    """[index in its repetition, repetition, ms] of each step slower than ``factor`` x the
    median: what sets a p99 apart.  On the H200 (2026-12-05) they were of two kinds on both
    stacks: each repetition's completion step (the same index every repetition, longer with
    the batch) and runs of slow steps on one server (host side); the index and repetition
    tell them apart."""
    if not steps or per_rep <= 0:
        return []
    limit = factor * percentile(steps, 50)
    return [[i % per_rep, i // per_rep, round(1e3 * x, 3)] for i, x in enumerate(steps)
            if x > limit]


STEADY_WINDOW = 16
"""Consecutive steps a steady-state median is taken over (see :func:`steady_step`)."""


def steady_step(steps: list[float], per_rep: int, window: int = STEADY_WINDOW) -> float | None:
    """The lowest median over ``window`` consecutive steps of one repetition: the step time
    of a server's best stretch.  Why: on the H100 and H200 (2026-12-05) whole stretches of
    16 to 60 steps ran 30-60% slower on single servers of either stack while the GPU only
    replayed the same CUDA graph (host side), and which servers they hit decided the tok/s
    ratio; the best stretch compares what the GPU work costs on each stack.  None when no
    repetition has ``window`` steps."""
    if per_rep <= 0:
        return None
    return min((statistics.median(steps[start + i:start + i + window])
                for start in range(0, len(steps) - per_rep + 1, per_rep)
                for i in range(per_rep - window + 1)), default=None)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[pos]


def count_compiled(cache: Path) -> int:
    """Kernels Triton compiled into this (fresh, per-server) cache: one .cubin each."""
    return sum(1 for _ in cache.rglob("*.cubin")) if cache.is_dir() else 0


def mode_env(mode: str, kernel_dir: Path | None, broken_dir: Path | None) -> dict[str, str]:
    """PYTHONPATH for a kernel mode: none (no sgl_kernel), real, broken (unloadable)."""
    base = os.environ.get("PYTHONPATH", "")
    folder = {"none": None, "real": kernel_dir, "broken": broken_dir}[mode]
    if mode != "none" and folder is None:
        raise SystemExit(f"--modes {mode} needs --kernel-dir")
    return {"PYTHONPATH": ":".join(p for p in (str(folder) if folder else "", base) if p)}


def make_broken(kernel_dir: Path, work: Path, patchelf: str) -> tuple[Path, str]:
    """A copy of the real kernel whose common_ops cannot load, the way a kernel built for
    another CUDA does: its library needs ``libcudart.so.12``, absent on a CUDA 13 stack."""
    import shutil

    broken = work / "broken-kernel"
    shutil.copytree(kernel_dir, broken)
    libs = sorted(broken.glob("sgl_kernel/**/common_ops*.so"))
    for lib in libs:
        subprocess.run([patchelf, "--add-needed", "libcudart.so.12", str(lib)], check=True)
    return broken, f"added DT_NEEDED libcudart.so.12 to {len(libs)} common_ops libraries"


def start(name: str, cmd: list[str], model: Path, dtype: str, out: Path,
          extra_env: dict[str, str], flags: list[str]) -> tuple[Server, Path]:
    reports = out / f"reports-{name}"
    env = {**os.environ, **ENV, **extra_env, "SGLANG_SHIMS_REPORT_DIR": str(reports)}
    return Server([*cmd, "--model-path", str(model), "--dtype", dtype, *flags], env,
                  out / f"server-{name}.log"), reports


def finish(server: Server, reports: Path, result: dict[str, Any]) -> dict[str, Any]:
    server.stop()
    time.sleep(1)
    result["report"] = report_summary(reports) if reports.is_dir() else None
    return result


def correctness(jobs: list[dict[str, Any]], out: Path, eos: str) -> dict[str, dict[str, Any]]:
    """One server at a time: sglang sizes its memory as if it owned the GPU, so servers
    side by side fail its KV-cache check."""
    results = {}
    for job in jobs:
        server, reports = start(job["key"], job["cmd"], job["model"], job["dtype"], out,
                                job["env"], job["flags"])
        result: dict[str, Any] = {"command": " ".join(job["cmd"][1:]), "mode": job["mode"],
                                  "dtype": job["dtype"]}
        try:
            begin = time.time()
            server.wait()
            result["ready_s"] = round(time.time() - begin, 1)
            tokens, _seconds = server.generate(job["prompts"], job["new"], eos)
            result["tokens"] = tokens
            result["compare"] = compare(tokens, job["reference"], job.get("tie", 1e-3))
            result["tie"] = job.get("tie", 1e-3)
            if job.get("floor") is not None:
                scored = server.score(job["prompts"], job["reference"])
                result["forced"] = forced_compare(scored, job["reference"], job["tie"],
                                                  job["floor"])
        except Exception as exc:
            result["error"] = f"{type(exc).__name__}: {exc}"
        results[job["key"]] = finish(server, reports, result)
        print(json.dumps({job["key"]: {k: v for k, v in results[job["key"]].items()
                                       if k != "report"}}), flush=True)
    return results


def pinned(cmd: list[str], cpus: str) -> list[str]:
    """``cmd`` under ``taskset -c CPUS`` (every process the server starts inherits it), or
    as it is: the same cores for every server take the operating system's placement of the
    scheduler out of a comparison of two stacks."""
    return ["taskset", "-c", cpus, *cmd] if cpus else cmd


def trace_env(env: dict[str, str], folder: Path) -> dict[str, str]:
    """``env`` with the step trace on, written into ``folder``."""
    path = env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    return {**env, "SGLANG_STEP_TRACE": str(folder),
            "PYTHONPATH": ":".join(p for p in (str(STEP_TRACE), path) if p)}


def speed(key: str, cmd: list[str], model: Path, out: Path, env: dict[str, str],
          flags: list[str], prompts: list[list[int]], batches: list[int], decode: int,
          reps: int, long_prompt: int, vocab: int, trace: bool = False) -> dict[str, Any]:
    """Decode tok/s per batch size, per-step latency, TTFT of a long prompt, and how many
    Triton kernels were compiled during the timed part (fresh TRITON_CACHE_DIR).  With
    ``trace``, each timed step taken apart on the GPU and host side (``_e2e_trace.py``)."""
    import random

    cache = out / f"triton-cache-{key}"
    folder = out / f"trace-{key}"
    if trace:
        folder.mkdir(parents=True, exist_ok=True)
        env = trace_env(env, folder)
    server, reports = start(key, cmd, model, "bfloat16", out,
                            {**env, "TRITON_CACHE_DIR": str(cache)}, flags)
    result: dict[str, Any] = {"command": " ".join(cmd[1:])}
    windows: list[tuple[int, float, float]] = []
    smi = None
    rng = random.Random(7)

    def long_prompts(n: int) -> list[list[int]]:
        return [[rng.randrange(3, vocab) for _ in range(long_prompt)] for _ in range(n)]

    try:
        begin = time.time()
        server.wait()
        result["ready_s"] = round(time.time() - begin, 1)
        for batch in batches:  # warm-up: every shape the timed part will run
            work = (prompts * (batch // len(prompts) + 1))[:batch]
            for _ in range(2):
                server.generate(work, decode)
        for p in long_prompts(2):
            server.generate([p], 1)
        compiled_before = count_compiled(cache)
        result["compiled_before_timing"] = compiled_before
        smi = e2e_trace.start_smi(folder / "smi.csv") if trace else None
        result["batches"] = {}
        for batch in batches:
            work = (prompts * (batch // len(prompts) + 1))[:batch]
            rates, steps, no_graph = [], [], 0
            for _ in range(reps):
                mark = server.log_size()
                begin = time.time()
                _, seconds = server.generate(work, decode)
                windows.append((batch, begin, time.time()))
                rates.append(batch * decode / seconds)
                got, ng = step_times(server.log_text(mark, server.log_size()), batch)
                steps += got
                no_graph += ng
            result["batches"][str(batch)] = {
                "tok_per_s": rates, "median_tok_per_s": round(percentile(rates, 50), 1),
                "step_ms_p50": round(1e3 * percentile(steps, 50), 3),
                "step_ms_p99": round(1e3 * percentile(steps, 99), 3),
                "steps": len(steps), "steps_without_graph": no_graph,
                "step_ms": [round(1e3 * x, 3) for x in steps],
                "slow_steps": slow_steps(steps, len(steps) // reps)}
        ttft = [server.generate([p], 1)[1] for p in long_prompts(reps)]
        result["ttft_s"] = ttft
        result["ttft_median_s"] = round(percentile(ttft, 50), 4)
        result["long_prompt_tokens"] = long_prompt
        result["compiled_during_timing"] = count_compiled(cache) - compiled_before
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    if smi is not None:
        smi.terminate()
        smi.wait(10)
    if trace:
        result["trace_windows"] = windows
        result["trace"] = e2e_trace.summarize(e2e_trace.read_steps(folder), windows,
                                              e2e_trace.read_smi(folder / "smi.csv"))
    return finish(server, reports, result)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("e2e-results"))
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--models", default="qwen3,llama",
                        help="correctness runs: qwen3 (via the launcher), llama (via .pth),"
                             " qwen3moe (8 experts, top-2, float32), qwen3-fp8 (128x128 block"
                             " FP8, bf16), llama-fp8 (per-tensor FP8, bf16)")
    parser.add_argument("--modes", default="none",
                        help="kernel modes for the correctness runs: none (no sgl_kernel),"
                             " real (--kernel-dir first on PYTHONPATH), broken (a copy of it"
                             " whose common_ops cannot load)")
    parser.add_argument("--kernel-dir", type=Path,
                        help="a folder holding a real sgl_kernel package (and its dist-info)")
    parser.add_argument("--patchelf", default="patchelf", help="for --modes broken")
    parser.add_argument("--eos", choices=sorted(WHAT_WAS_COMPARED), default="ignore")
    parser.add_argument("--attention-backend", default="triton",
                        help="sglang attention backend for every run (triton, torch_native)")
    parser.add_argument("--runs", default="",
                        help="only these correctness runs, by key (e.g. real-llama-bf16)")
    parser.add_argument("--fp32-tiers", default="triton",
                        help="kernel tiers for the float32 runs of mode none: triton,torch")
    parser.add_argument("--speed", default="",
                        help="speed runs, MODE:TIER list, e.g. none:triton,none:torch,real:aot")
    parser.add_argument("--speed-models", default="qwen3",
                        help="models the speed runs serve (qwen3: the dense Qwen3, or"
                             " --speed-model's; qwen3moe, qwen3-fp8, llama-fp8)")
    parser.add_argument("--batches", default="1,8,32,64")
    parser.add_argument("--decode", type=int, default=128, help="tokens per throughput run")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--servers", type=int, default=1,
                        help="servers per speed run, started in alternation (A B A B ...):"
                             " the spread between servers of one stack is measured and a"
                             " ratio is judged only where it exceeds that spread")
    parser.add_argument("--long-prompt", type=int, default=3000, help="TTFT prompt tokens")
    parser.add_argument("--tp", type=int, default=1,
                        help="tensor-parallel size of every server (one scheduler per rank)")
    parser.add_argument("--real-float32", action="store_true",
                        help="mode real also in float32 (where the kernel under test can: the"
                             " hybrid tier of examples/hybrid_serve.py)")
    parser.add_argument("--speed-model", default="",
                        help="shape of a separate bf16 Qwen3 for the speed runs:"
                             " HIDDEN,LAYERS,INTERMEDIATE,HEADS,KV_HEADS,HEAD_DIM"
                             " (e.g. 2048,28,6144,16,8,128, Qwen3-1.7B's); default: the"
                             " correctness model")
    parser.add_argument("--speed-moe", default="",
                        help="shape of a separate bf16 Qwen3-MoE for the qwen3moe speed runs:"
                             " HIDDEN,LAYERS,MOE_INTERMEDIATE,EXPERTS,TOP_K,HEADS,KV_HEADS,"
                             "HEAD_DIM (e.g. 2048,6,768,128,8,32,4,128: Qwen3-30B-A3B's,"
                             " 6 of its 48 layers); default: the correctness model")
    parser.add_argument("--speed-fp8", default="",
                        help="shape of separate bf16-activation FP8 models for the speed runs of"
                             " qwen3-fp8/llama-fp8 (their quantisation, this shape):"
                             " HIDDEN,LAYERS,INTERMEDIATE,HEADS,KV_HEADS,HEAD_DIM (e.g."
                             " 4096,8,12288,32,8,128: Qwen3-8B's widths, 8 of its 36 layers);"
                             " default: the correctness models")
    parser.add_argument("--cuda-graphs", action="store_true",
                        help="speed runs with sglang's decode CUDA graphs (up to the largest"
                             " batch)")
    parser.add_argument("--pin-cpus", default="", metavar="LIST",
                        help="speed runs: start each server under `taskset -c LIST`"
                             " (e.g. 0-7), the same cores for every server")
    parser.add_argument("--step-trace", action="store_true",
                        help="speed runs: per-step GPU time, GPU idle gap, scheduler CPU and"
                             " GC time and SM clock, slow steps against the others"
                             " (examples/step_trace, examples/_e2e_trace.py)")
    parser.add_argument("--render", type=Path, metavar="E2E_JSON",
                        help="re-render a saved run's e2e.md (beside it) from its e2e.json")
    parser.add_argument("--plan", action="store_true",
                        help="print the runs these arguments ask for and exit (no GPU)")
    args = parser.parse_args(argv)
    known = {"qwen3", "llama", *e2e_models.SPECS}
    for option, names in (("--models", args.models), ("--speed-models", args.speed_models)):
        unknown = [n for n in names.split(",") if n and n not in known]
        if unknown:
            parser.error(f"{option}: unknown model(s) {unknown}; known: {sorted(known)}")
    for option, shape, fields in (("--speed-model", args.speed_model, len(DENSE_SHAPE)),
                                  ("--speed-fp8", args.speed_fp8, len(DENSE_SHAPE)),
                                  ("--speed-moe", args.speed_moe, len(MOE_SHAPE))):
        if shape and not re.fullmatch(",".join([r"\d+"] * fields), shape):
            parser.error(f"{option}: {shape!r} is not {fields} comma-separated integers")
    for run in (s for s in args.speed.split(",") if s):
        if len(run.split(":")) != 2:
            parser.error(f"--speed: {run!r} is not MODE:TIER")
    return args


def plan(args: argparse.Namespace) -> dict[str, list[dict[str, str]]]:
    """The correctness runs (key, model, mode, dtype, tier) and speed runs (key, model,
    mode, tier) the arguments ask for, before anything is built or started."""
    modes = [m for m in args.modes.split(",") if m]
    runs = []
    for name in (n for n in args.models.split(",") if n):
        spec = e2e_models.SPECS.get(name)
        for mode in modes:
            if spec is not None:  # one dtype each; stock runs bf16 (no float32 AOT norms)
                dtypes = ["bfloat16" if mode == "real" else spec["dtype"]]
                tiers = ["aot"] if mode == "real" else ["triton"]
            else:
                # sgl-kernel's AOT norms have no float32 kernels ("failed to dispatch data
                # type Float"): the stock stack is compared in bfloat16, against every mode
                # in bf16.
                # --real-float32: the hybrid tier (sglang 0.5.1 on sglang-kernel 0.4.5)
                # sends float32 norms/activations to ours, so mode real runs float32 too.
                dtypes = (["float32", "bfloat16"] if args.real_float32 else ["bfloat16"]
                          ) if mode == "real" else (
                    ["float32", "bfloat16"] if "real" in modes and mode == "none"
                    else ["float32"])
                tiers = args.fp32_tiers.split(",") if mode != "real" else ["aot"]
            for tier in tiers:
                for dtype in dtypes:
                    if dtype == "bfloat16" and tier == "torch":
                        continue
                    short = "fp32" if dtype == "float32" else "bf16"
                    suffix = "" if tier in ("triton", "aot") else f"-{tier}"
                    runs.append({"key": f"{mode}-{name}-{short}{suffix}", "model": name,
                                 "mode": mode, "dtype": dtype, "tier": tier})
    if args.runs:
        wanted = set(args.runs.split(","))
        runs = [run for run in runs if run["key"] in wanted]
    speeds = []
    for name in (n for n in args.speed_models.split(",") if n):
        for mode, tier in (s.split(":") for s in args.speed.split(",") if s):
            key = f"speed-{mode}-{tier}" if name == "qwen3" else f"speed-{name}-{mode}-{tier}"
            speeds.append({"key": key, "model": name, "mode": mode, "tier": tier})
    return {"correctness": runs, "speed": speeds}


def op_listing(names: list[str], sglang: str | None) -> dict[str, Any]:
    """What each MoE/FP8 model calls on CUDA (read from sglang 0.5.17), whether the
    fallback implements each sgl_kernel op, and the listing checked against the installed
    sglang's source."""
    from importlib.metadata import PackageNotFoundError, distribution

    provided = e2e_models.fallback_ops()
    try:  # located through its metadata: no import, no finder asked (ours watches sglang)
        root: Path | None = Path(str(distribution("sglang").locate_file("sglang")))
    except PackageNotFoundError:
        root = None
    out: dict[str, Any] = {"read_from": "sglang 0.5.17", "installed": sglang, "rows": []}
    for name in names:
        out["rows"] += e2e_models.listing(name, provided)
        out[name] = ("no sglang installed" if root is None
                     else e2e_models.check_listing(name, root) or "holds")
    return out


def render(saved: Path) -> str:
    """Rebuild a saved run's combined rows (several servers per stack) and its markdown
    beside it: summaries added after a run apply to the numbers it recorded."""
    results = json.loads(saved.read_text())
    for key in [k for k in results if re.fullmatch(r"speed-.+#1", k)]:
        base = key[:-2]
        servers: list[dict[str, Any]] = []
        while f"{base}#{len(servers) + 1}" in results:  # numbered 1..N, as main() saves them
            servers.append(results[f"{base}#{len(servers) + 1}"])
        results[base] = combine(servers)
    return save(saved.parent, results)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        print(render(args.render))
        return 0
    runs = plan(args)
    extra = [n for n in e2e_models.SPECS
             if n in args.models.split(",") or n in args.speed_models.split(",")]
    if args.plan:
        print(json.dumps(runs, indent=1))
        provided = e2e_models.fallback_ops()
        print("\n".join(row for n in extra for row in e2e_models.listing(n, provided)))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    work_dir = Path(tempfile.mkdtemp(prefix="sglang-shims-e2e-"))
    fp8_speed = tuple(n for n in args.speed_models.split(",")
                      if e2e_models.SPECS.get(n, {}).get("quant"))
    assets = build_assets(work_dir, args.speed_model, extra, args.speed_moe, args.speed_fp8,
                          fp8_speed)
    prompts = assets["prompts"]
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "gpu": torch.cuda.get_device_name(0),
        "python": platform.python_version(), "torch": torch.__version__,
        "compared": WHAT_WAS_COMPARED[args.eos], "eos": args.eos}
    from importlib.metadata import version

    for dist in ("sglang", "transformers", "triton", "sglang-shims", "sgl-kernel",
                 "sglang-kernel", "flashinfer-python"):
        try:
            results[dist] = version(dist)
        except Exception:
            results[dist] = None
    sglang = results["sglang"] or "0"
    if extra:
        results["ops"] = op_listing(extra, results["sglang"])
        print("\n".join(results["ops"]["rows"]), flush=True)
        print("listing checked against the installed sglang:",
              {n: results["ops"][n] for n in extra}, flush=True)
    kernel_dir = args.kernel_dir.resolve() if args.kernel_dir else None
    broken = None
    modes = {r["mode"] for r in runs["correctness"]} | {r["mode"] for r in runs["speed"]}
    if "broken" in modes:
        if kernel_dir is None:
            raise SystemExit("--modes broken needs --kernel-dir")
        broken, how = make_broken(kernel_dir, work_dir, args.patchelf)
        results["broken_kernel"] = how
    if kernel_dir is not None:
        results["kernel_dir_version"] = next(
            (p.name for p in kernel_dir.glob("*.dist-info")), None)
    print("compared:", results["compared"], flush=True)
    launcher = [sys.executable, "-m", "sglang_shims.launch"]
    plain = [sys.executable, "-m", "sglang.launch_server"]
    jobs = []
    for planned in runs["correctness"]:
        name, spec = planned["model"], e2e_models.SPECS.get(planned["model"])
        if f"{name}-reference" not in results:
            group = e2e_models.act_group(name)
            results[f"{name}-reference"] = reference(assets["references"][name], prompts,
                                                     args.new, args.eos, act_group=group)
        ref = results[f"{name}-reference"]
        tie, floor = 1e-3, None
        if spec is not None:
            noise = spec["noise_dtype"] if planned["dtype"] == spec["dtype"] else planned["dtype"]
            tol_key = f"{name}-tolerance-{noise}"
            if tol_key not in results:
                results[tol_key] = tolerance(assets["references"][name], prompts, ref, noise,
                                             e2e_models.act_group(name))
                print(f"{tol_key}:", json.dumps(results[tol_key]), flush=True)
            tie, floor = results[tol_key]["tie"], results[tol_key]["floor"]
        env = {**mode_env(planned["mode"], kernel_dir, broken)}
        if planned["dtype"] == "float32":
            env.update(FP32_ENV)
        if planned["tier"] == "torch":
            env["SGLANG_SHIMS_KERNEL_BACKEND"] = "torch"
        uses_launcher = spec["launcher"] if spec is not None else name == "qwen3"
        jobs.append({"key": planned["key"], "cmd": launcher if uses_launcher else plain,
                     "model": assets["models"][name], "env": env, "mode": planned["mode"],
                     "dtype": planned["dtype"], "prompts": prompts, "new": args.new,
                     "reference": ref, "tie": tie, "floor": floor,
                     "flags": server_flags(args.attention_backend, False, sglang, mem="0.2")
                     + tp_flags(args.tp)})
    if jobs:
        results["correctness_runs"] = [job["key"] for job in jobs]
        results.update(correctness(jobs, args.out, args.eos))
        for job in jobs:
            run = results.get(job["key"], {})
            run["mode_problem"] = mode_problem(job["mode"], run.get("report"))
        for name in ("qwen3", "llama"):  # the fallback against stock, token for token (bf16)
            real = results.get(f"real-{name}-bf16", {}).get("tokens")
            for mode in ("none", "broken"):
                run = results.get(f"{mode}-{name}-bf16")
                if real is not None and run is not None and run.get("tokens") is not None:
                    run["identical_to_real"] = sum(a == b for a, b in
                        zip(run["tokens"], real, strict=False))
        save(args.out, results)  # kept even if a speed run is cut short
    batches = [int(b) for b in args.batches.split(",") if b]
    for server_no, spec_run in speed_order(runs["speed"], args.servers):
        mode, tier, name = spec_run["mode"], spec_run["tier"], spec_run["model"]
        key = spec_run["key"] + (f"#{server_no}" if args.servers > 1 else "")
        env = mode_env(mode, kernel_dir, broken)
        if tier == "torch":
            env["SGLANG_SHIMS_KERNEL_BACKEND"] = "torch"
        model = assets["models"].get(f"{name}-speed", assets["models"][name])
        run = speed(key, pinned(plain, args.pin_cpus), model, args.out, env,
                    server_flags(args.attention_backend, args.cuda_graphs, sglang,
                                 max_bs=max(batches), speed_log=True) + tp_flags(args.tp),
                    prompts, batches, args.decode, args.reps, args.long_prompt,
                    assets["vocab"], args.step_trace)
        run["cuda_graphs"] = args.cuda_graphs
        run["model"] = name
        run["mode"] = mode
        run["mode_problem"] = mode_problem(mode, run.get("report"))
        shapes = {"qwen3": args.speed_model, "qwen3moe": args.speed_moe,
                  **{n: args.speed_fp8 for n in fp8_speed}}
        run["model_shape"] = shapes.get(name) or "correctness model"
        results[key] = run
        print(json.dumps({key: {k: v for k, v in run.items() if k != "batches"}}), flush=True)
        if args.servers > 1 and server_no == args.servers:
            results[spec_run["key"]] = combine(
                [results[f"{spec_run['key']}#{n}"] for n in range(1, args.servers + 1)])
        save(args.out, results)
    print(save(args.out, results))
    return 0 if passed(results) else 1


def mode_problem(mode: str, report: dict[str, Any] | None) -> str | None:
    """What in a server's per-process reports contradicts the kernel mode the run is
    named for, or None.

    Mode ``none``/``broken`` means the fallback stood in for sgl_kernel in every process;
    mode ``real`` means it stood back.  The environment decides, not the name: on
    2026-12-01 the hybrid script's own ``PYTHONPATH`` (the real kernel first) leaked
    into its "none" runs, which then measured the real kernel under the fallback's
    label.  A run without reports (its server died) is judged by its error instead."""
    if not report or not report.get("processes"):
        return None
    verdict = report.get("verdicts", {}).get("sgl-kernel-triton-fallback", "")
    count = len(report["processes"])
    if mode in ("none", "broken") and verdict != f"applied in {count}/{count} processes":
        reasons = "; ".join(str(r) for r in report.get("fallback_reasons", []))
        return (f"mode {mode} wants the fallback applied in every process; it was "
                f"{verdict or 'not reported'} ({reasons or 'no reason given'})")
    if mode == "real" and "applied in" in verdict:
        return f"mode real wants the real kernel; the fallback was {verdict}"
    return None


def wrong_modes(results: dict[str, Any]) -> list[tuple[str, str]]:
    """(run, problem) for every run whose reports contradict its kernel mode."""
    return [(key, run["mode_problem"]) for key, run in results.items()
            if isinstance(run, dict) and run.get("mode_problem")]


def passed(results: dict[str, Any]) -> bool:
    """Every run held to a token criterion met it: the float32 runs (identity up to
    near-ties) and every MoE/FP8 run (identity up to its stated tolerance); and every
    run ran in the kernel mode it is named for."""
    held = [k for k in results.get("correctness_runs", [])
            if "-fp32" in k or any(f"-{n}-" in k for n in e2e_models.SPECS)]
    return not wrong_modes(results) and all(
        results[k].get("compare", {}).get("pass")
        and results[k].get("forced", {}).get("pass", True) for k in held)


def save(out: Path, results: dict[str, Any]) -> str:
    (out / "e2e.json").write_text(json.dumps(results, indent=1))
    text = markdown(results)
    (out / "e2e.md").write_text(text + "\n")
    return text


def markdown(results: dict[str, Any]) -> str:
    lines = [f"date {results['date']}; {results['gpu']}; torch {results['torch']}; sglang"
             f" {results['sglang']}; transformers {results['transformers']}; triton"
             f" {results['triton']}; flashinfer {results.get('flashinfer-python')};"
             f" sgl-kernel installed: {results.get('sgl-kernel') or results.get('sglang-kernel')};"
             f" kernel folder for modes real/broken: {results.get('kernel_dir_version')}", "",
             f"compared: {results.get('compared', '?')}", ""]
    if results.get("broken_kernel"):
        lines += [f"mode broken: {results['broken_kernel']}", ""]
    lines += ["| run | started by | tokens vs transformers (float32) | same as real kernel (bf16) |"
              " processes (role, origin, applied) | patch verdicts | fallback reason |",
              "|---|---|---|---|---|---|---|"]
    for key in results.get("correctness_runs", []):
        run = results.get(key, {})
        cmp = run.get("compare", {})
        report = run.get("report") or {}
        verdicts = "; ".join(f"{k}: {v}" for k, v in report.get("verdicts", {}).items()
                             if "not-applicable" not in v and "disabled" not in v)
        ties = f", {len(cmp.get('near_tie_divergences', []))} near-tie" if cmp else ""
        tokens = f"{cmp['identical']}/{cmp['of']} identical{ties}" if cmp else "no tokens"
        if cmp and run.get("tie", 1e-3) > 1e-3:
            tokens += (f" (tolerance: margin < {run['tie']:.4g};"
                       f" {'met' if cmp['pass'] else 'NOT met'})")
        forced = run.get("forced")
        if forced:
            tokens += (f"; teacher-forced top-1 agreement {forced['agreement']:.1%} of"
                       f" {forced['positions']} (floor {forced['floor']:.1%}),"
                       f" {len(forced['mismatches'])} beyond tolerance:"
                       f" {'met' if forced['pass'] else 'NOT met'}")
        error = f", ERROR {run['error']}" if "error" in run else ""
        same = run.get("identical_to_real")
        same_text = "-" if same is None else f"{same}/{cmp.get('of', '?')}"
        reasons = "; ".join(r for r in report.get("fallback_reasons", []) if r != "None")
        lines.append(f"| {key} | {run.get('command', '')} | {tokens}{error} | {same_text} |"
                     f" {report.get('processes')} | {verdicts} | {reasons or '-'} |")
    rules = [f"- {k.split('-tolerance-')[0]} (reference in {v['dtype']}): {v['rule']}"
             for k, v in results.items() if "-tolerance-" in k]
    if rules:
        lines += ["", "tolerances (MoE/FP8 runs, which sglang cannot serve in plain float32):",
                  *rules]
    ops = results.get("ops")
    if ops:
        checks = "; ".join(f"{n}: {ops[n]}" for n in ops
                           if n not in ("rows", "read_from", "installed"))
        lines += ["", f"what the MoE/FP8 models call on CUDA (read from {ops['read_from']};"
                  f" installed sglang {ops['installed']}; listing checked against its source:"
                  f" {checks})", "", "| model | step | op | who runs it | where |",
                  "|---|---|---|---|---|", *ops["rows"]]
    speed_keys = [k for k in results if k.startswith("speed-")]
    if speed_keys:
        batches = sorted({int(b) for k in speed_keys
                          for b in results[k].get("batches", {})})
        lines += ["", "decode tok/s, bf16 (median of the repetitions [min-max]); step ms"
                  " p50 / p99 from the scheduler's per-step log; TTFT median", "",
                  "| run | " + " | ".join(f"batch {b} tok/s | step p50/p99 ms"
                                         for b in batches)
                  + " | TTFT s | Triton compiles timed | steps outside graphs |",
                  "|---|" + "---|---|" * len(batches) + "---|---|---|"]
        for key in speed_keys:
            run = results[key]
            cells = []
            graphless = 0
            for b in batches:
                got = run.get("batches", {}).get(str(b))
                if not got:
                    cells += ["-", "-"]
                    continue
                rates = got["tok_per_s"]
                cells.append(f"{got['median_tok_per_s']} [{min(rates):.0f}-{max(rates):.0f}]")
                cells.append(f"{got['step_ms_p50']} / {got['step_ms_p99']}")
                graphless += got["steps_without_graph"]
            error = f" ERROR {run['error']}" if "error" in run else ""
            lines.append(f"| {key}{error} | " + " | ".join(cells) +
                         f" | {run.get('ttft_median_s', '-')} |"
                         f" {run.get('compiled_during_timing', '-')} | {graphless} |")
        lines += ratios(results, batches)
    traced = {k: r["trace"] for k, r in results.items()
              if isinstance(r, dict) and isinstance(r.get("trace"), dict)}
    if traced:
        lines += ["", "step trace (--step-trace): slow steps (> 1.5x the median) against the"
                  " others, medians; gpu_ms = the forward's GPU time, gap_ms = the GPU idle"
                  " before the next step, cpu_ms / gc_ms = the scheduler thread's CPU and GC"
                  " time in the step; verdict: which side carries the extra time", "",
                  *e2e_trace.table(traced)]
    wrong = [f"- {key}: {problem}" for key, problem in wrong_modes(results)]
    lines += ["", "RUNS NOT IN THEIR KERNEL MODE (their numbers measure something else):",
              *wrong] if wrong else ["", "kernel mode: every run's reports match its mode"]
    return "\n".join(lines)


def speed_order(speeds: list[dict[str, str]], servers: int) -> list[tuple[int, dict[str, str]]]:
    """(server number, run) in the order they start: A1 B1 A2 B2 ..., so that whatever
    drifts over a call (clocks, temperature, a neighbour's load) falls on every stack."""
    return [(n, run) for n in range(1, servers + 1) for run in speeds]


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several servers of one stack as one row: per batch, the median of the servers'
    medians, the spread between servers ((max - min) / median of their medians: how much
    two servers of the same stack differ), and step percentiles over every server's steps
    pooled; TTFT the median over all; compilations summed."""
    out: dict[str, Any] = {"servers": len(runs), "batches": {},
                           "mode": runs[0].get("mode"), "model": runs[0].get("model"),
                           "mode_problem": next((r["mode_problem"] for r in runs
                                                 if r.get("mode_problem")), None)}
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        out["error"] = "; ".join(errors)
    for b in sorted({b for r in runs for b in r.get("batches", {})}, key=int):
        got = [r["batches"][b] for r in runs if b in r.get("batches", {})]
        medians = [g["median_tok_per_s"] for g in got]
        steps = [x for g in got for x in g.get("step_ms", [])]
        steady = [s for s in (steady_step(g.get("step_ms", []),
                                          len(g.get("step_ms", [])) // len(g["tok_per_s"]))
                              for g in got) if s is not None]
        middle = statistics.median(medians)
        out["batches"][b] = {
            "tok_per_s": [x for g in got for x in g["tok_per_s"]],
            "server_medians": medians, "median_tok_per_s": round(middle, 1),
            "spread": round((max(medians) - min(medians)) / middle, 4) if middle else None,
            "step_ms_p50": round(percentile(steps, 50), 3) if steps else None,
            "step_ms_p99": round(percentile(steps, 99), 3) if steps else None,
            "steps": len(steps),
            "steps_without_graph": sum(g["steps_without_graph"] for g in got)}
        if steady:
            mid = statistics.median(steady)
            out["batches"][b].update(
                server_steady_ms=[round(s, 3) for s in steady], steady_step_ms=round(mid, 3),
                steady_spread=round((max(steady) - min(steady)) / mid, 4))
    ttft = [t for r in runs for t in r.get("ttft_s", [])]
    if ttft:
        out["ttft_s"], out["ttft_median_s"] = ttft, round(statistics.median(ttft), 4)
        out["ttft_server_medians"] = [r.get("ttft_median_s") for r in runs]
    out["compiled_during_timing"] = sum(r.get("compiled_during_timing") or 0 for r in runs)
    return out


def judged(ratio: float, spread: float | None, goal: float) -> str:
    """A ratio read against the noise between servers: met, not met, or within the spread
    (two servers of one stack differ by more than the gap: no verdict)."""
    if spread is not None and abs(ratio - 1.0) <= spread:
        return "within spread"
    return "met" if ratio >= goal else "NOT met"


def ratios(results: dict[str, Any], batches: list[int]) -> list[str]:
    """Triton tier over stock AOT and over the eager tier, per batch size; with several
    servers per stack, each ratio with the larger of the two stacks' spreads and its
    verdict, and the TTFT and p99/p50 goals."""
    def rate(key: str, b: int) -> float | None:
        got = results.get(key, {}).get("batches", {}).get(str(b))
        return got["median_tok_per_s"] if got else None

    def spread(key: str, b: int) -> float | None:
        got = results.get(key, {}).get("batches", {}).get(str(b))
        return got.get("spread") if got else None

    out = ["", "| ratio (decode tok/s) | " + " | ".join(f"batch {b}" for b in batches)
           + " | goal |", "|---|" + "---|" * len(batches) + "---|"]
    for prefix, model in (("speed-", ""), *((f"speed-{n}-", f"{n}: ")
                                            for n in e2e_models.SPECS)):
        if f"{prefix}none-triton" not in results:
            continue
        for other, label, goal in ((f"{prefix}real-aot", "Triton tier / stock AOT", 1.0),
                                   (f"{prefix}none-torch", "Triton tier / eager tier", 1.3)):
            if prefix != "speed-" and other not in results:
                continue
            cells = []
            for b in batches:
                a, o = rate(f"{prefix}none-triton", b), rate(other, b)
                if not (a and o):
                    cells.append("-")
                    continue
                noise = [x for x in (spread(f"{prefix}none-triton", b), spread(other, b))
                         if x is not None]
                if noise:
                    cells.append(f"{a / o:.2f}x (spread {max(noise):.0%}:"
                                 f" {judged(a / o, max(noise), goal)})")
                else:
                    cells.append(f"{a / o:.2f}x")
            out.append(f"| {model}{label} | " + " | ".join(cells) + f" | >= {goal}x |")
        out += _steady_row(results, prefix, model, batches)
        out += _latency_goals(results, prefix, model, batches)
    return out


def _steady_row(results: dict[str, Any], prefix: str, model: str,
                batches: list[int]) -> list[str]:
    """Stock over ours of the best stretch's step time (:func:`steady_step`; > 1: ours
    faster), judged against the larger spread of that figure between servers of a stack."""
    ours, stock = (results.get(f"{prefix}{k}", {}).get("batches", {})
                   for k in ("none-triton", "real-aot"))
    cells = []
    for b in batches:
        a, o = ours.get(str(b), {}), stock.get(str(b), {})
        if not (a.get("steady_step_ms") and o.get("steady_step_ms")):
            cells.append("-")
            continue
        ratio = o["steady_step_ms"] / a["steady_step_ms"]
        noise = max(a["steady_spread"], o["steady_spread"])
        cells.append(f"{ratio:.2f}x (spread {noise:.0%}: {judged(ratio, noise, 1.0)})")
    if all(c == "-" for c in cells):
        return []
    return [f"| {model}steady step ({STEADY_WINDOW}-step best stretch), stock / Triton tier | "
            + " | ".join(cells) + " | >= 1.0x |"]


def _latency_goals(results: dict[str, Any], prefix: str, model: str,
                   batches: list[int]) -> list[str]:
    """TTFT against the stock server (stock / ours >= 1.0) and p99 step <= 1.5x p50 for
    every stack timed."""
    lines = []
    ours, stock = f"{prefix}none-triton", f"{prefix}real-aot"
    t_ours, t_stock = (results.get(k, {}).get("ttft_median_s") for k in (ours, stock))
    if t_ours and t_stock:
        ratio = t_stock / t_ours
        lines.append(f"| {model}TTFT, stock / Triton tier | {ratio:.2f}x"
                     f" ({'met' if ratio >= 1.0 else 'NOT met'})"
                     + " | -" * (len(batches) - 1) + " | >= 1.0x |")
    for key in (ours, stock, f"{prefix}none-torch"):
        if key not in results:
            continue
        cells = []
        for b in batches:
            got = results[key].get("batches", {}).get(str(b))
            if not got or not got.get("step_ms_p50"):
                cells.append("-")
                continue
            tail = got["step_ms_p99"] / got["step_ms_p50"]
            cells.append(f"{tail:.2f} ({'met' if tail <= 1.5 else 'NOT met'})")
        lines.append(f"| {model}{key}: step p99 / p50 | " + " | ".join(cells) + " | <= 1.5 |")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
