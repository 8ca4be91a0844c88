"""The MoE and FP8 models of ``examples/e2e_serve.py``, and what they call.

Why a module of its own: the dense models are a few lines of transformers; these need
checkpoint surgery that sglang's loaders expect and transformers does not write, and a
reference that computes the quantised model's math.  Everything here is pure (CPU,
offline) so that ``tests/scripts/test_examples.py`` can check it without a GPU or a server.

* ``qwen3moe``: Qwen3-MoE architecture, 8 experts, top-2, every layer sparse.  Saved with
  one tensor per expert and projection (``mlp.experts.<e>.gate_proj.weight``), the layout
  of the checkpoints on the Hub and of sglang's expert loader; transformers 5 keeps
  experts fused in memory (``gate_up_proj`` ``[E, 2I, H]``, ``down_proj`` ``[E, H, I]``)
  and :func:`split_fused_experts` undoes that.
* ``qwen3-fp8``: dense Qwen3 with 128x128 block FP8 weights (``weight`` float8_e4m3fn,
  ``weight_scale_inv`` float32 per block, ``quantization_config = {quant_method: fp8,
  activation_scheme: dynamic, weight_block_size: [128, 128]}``: the Qwen3-*-FP8 format).
  On sglang 0.5.17 with no sgl_kernel its linear layers use sglang's own kernels only.
  Not a Llama: sglang 0.5.17's Llama loader renames every ``.weight_scale_inv`` to
  ``.weight_scale`` (``LlamaForCausalLM._legacy_load_weights`` and the v2 loader's
  ``_llama_remap``), while block-FP8 layers register ``weight_scale_inv``, so a
  block-FP8 Llama's scales are never loaded there (read from the code, not run).
* ``llama-fp8``: dense Llama with one FP8 scale per weight tensor (``weight_scale``;
  the Meta-Llama-3-*-FP8 format).  sglang turns the scales per-channel and calls
  ``sgl_kernel.fp8_scaled_mm`` on Hopper, so it needs that op from the fallback.

The reference for an FP8 model is transformers running the dequantised weights
(``q * scale``, exact in float32) with each quantised linear's input rounded the way
sglang's dynamic activation quantisation rounds it (:func:`fake_quant`): the same math,
so what is left between the two is precision and summation order.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

FP8_MAX = 448.0  # float8_e4m3fn's largest finite value
BLOCK = 128  # weight_block_size of the block scheme (both dimensions)
MOE = {"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 512,
       "decoder_sparse_step": 1, "mlp_only_layers": [], "norm_topk_prob": True}
QUANTISED = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

# Per model: transformers classes, how it is quantised ("block" / "tensor" / None), the
# dtype sglang serves it in, the dtype whose reference run measures the precision noise
# (see e2e_serve.tolerance), and how sglang starts (launcher or the .pth hook).
SPECS: dict[str, dict[str, Any]] = {
    "qwen3moe": {"arch": "qwen3_moe", "quant": None, "dtype": "float32",
                 "noise_dtype": "float16", "launcher": True},
    "qwen3-fp8": {"arch": "qwen3", "quant": "block", "dtype": "bfloat16",
                  "noise_dtype": "bfloat16", "launcher": False},
    "llama-fp8": {"arch": "llama", "quant": "tensor", "dtype": "bfloat16",
                  "noise_dtype": "bfloat16", "launcher": False},
}


def _classes(arch: str) -> tuple[Any, Any]:
    import transformers

    names = {"qwen3": ("Qwen3Config", "Qwen3ForCausalLM"),
             "llama": ("LlamaConfig", "LlamaForCausalLM"),
             "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM")}[arch]
    return getattr(transformers, names[0]), getattr(transformers, names[1])


def split_fused_experts(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """One tensor per expert and projection, whatever transformers keeps in memory."""
    out: dict[str, torch.Tensor] = {}
    for name, tensor in state.items():
        if name.endswith(".mlp.experts.gate_up_proj"):
            base = name[: -len("gate_up_proj")]
            half = tensor.shape[1] // 2
            for e in range(tensor.shape[0]):
                out[f"{base}{e}.gate_proj.weight"] = tensor[e, :half].contiguous()
                out[f"{base}{e}.up_proj.weight"] = tensor[e, half:].contiguous()
        elif name.endswith(".mlp.experts.down_proj"):
            base = name[: -len("down_proj")]
            for e in range(tensor.shape[0]):
                out[f"{base}{e}.down_proj.weight"] = tensor[e].contiguous()
        else:
            out[name] = tensor.contiguous()
    return out


def is_quantised(name: str) -> bool:
    """The decoder's linear weights; embeddings, norms, router and lm_head stay as they
    are (sglang does not quantise them: they are not ``LinearBase`` layers or are skipped)."""
    parts = name.split(".")
    return (name.startswith("model.layers.") and name.endswith(".weight")
            and len(parts) >= 2 and parts[-2] in QUANTISED)


def quantize_fp8(weight: torch.Tensor, scheme: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(q, scale)`` with ``weight ~= q * scale``: one scale per 128x128 block
    (``scheme="block"``, shape ``[N/128, K/128]``) or per tensor (shape ``[1]``); the
    scale is the block's absolute maximum over 448, rounding to nearest (torch's cast)."""
    import torch

    w = weight.float()
    if scheme == "tensor":
        scale = (w.abs().amax().clamp_min(1e-12) / FP8_MAX).reshape(1)
        return (w / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn), scale
    n, k = w.shape
    if n % BLOCK or k % BLOCK:
        raise ValueError(f"{tuple(w.shape)} is not a multiple of {BLOCK}x{BLOCK}")
    blocks = w.reshape(n // BLOCK, BLOCK, k // BLOCK, BLOCK)
    scale = blocks.abs().amax(dim=(1, 3), keepdim=True).clamp_min(1e-12) / FP8_MAX
    q = (blocks / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q.reshape(n, k), scale.reshape(n // BLOCK, k // BLOCK)


def dequantize_fp8(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``q * scale`` in float32, the scale broadcast over its block (or the tensor)."""
    n, k = q.shape
    if scale.numel() == 1:
        return q.float() * scale.float().reshape(())
    bn, bk = n // scale.shape[0], k // scale.shape[1]
    full = scale.float().repeat_interleave(bn, 0).repeat_interleave(bk, 1)
    return q.float() * full


def fake_quant(x: torch.Tensor, group: int) -> torch.Tensor:
    """sglang's dynamic activation quantisation, quantised and back, in ``x``'s dtype:
    per group of ``group`` values along the last dimension (``0``: the whole row, per
    token), scale = group absolute maximum / 448 in float32, values rounded to e4m3."""
    import torch

    size = x.shape[-1] if group == 0 else group
    xf = x.float().reshape(*x.shape[:-1], x.shape[-1] // size, size)
    scale = xf.abs().amax(dim=-1, keepdim=True).clamp_min(1e-10) / FP8_MAX
    q = (xf / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).float()
    return (q * scale).reshape(x.shape).to(x.dtype)


def install_fake_quant(model: Any, group: int) -> int:
    """Round the input of every quantised linear of ``model`` as sglang does; returns how
    many layers got the hook (a reference with none would compare nothing)."""
    count = 0
    for name, module in model.named_modules():
        if name.split(".")[-1] in QUANTISED and name.startswith("model.layers.") \
                and hasattr(module, "weight"):
            module.register_forward_pre_hook(
                lambda _m, args: (fake_quant(args[0], group), *args[1:]))
            count += 1
    return count


def act_group(name: str) -> int | None:
    """The reference's activation rounding for a model: 128 (block scheme: per token and
    group of 128), 0 (per-tensor weights: per token), None (not quantised)."""
    quant = SPECS[name]["quant"] if name in SPECS else None
    return {None: None, "block": BLOCK, "tensor": 0}[quant]


def build(name: str, common: dict[str, Any], work: Path, tokenizer: Any,
          seed: int = 1234, bf16: bool = False) -> dict[str, Path]:
    """Write ``work/<name>`` (what sglang serves) and, for FP8, ``work/<name>-reference``
    (the dequantised float32 weights transformers runs); returns both folders.
    ``bf16``: the weights are saved in bfloat16 (a speed run's model: half the bytes to
    write and load, the dtype it is served in)."""
    import torch
    from safetensors.torch import save_file

    spec = SPECS[name]
    cfg_cls, model_cls = _classes(spec["arch"])
    if spec["arch"] == "qwen3_moe":  # ``common`` may override the MoE shape (tests do)
        kwargs = {**MOE, **common}
    else:
        kwargs = {k: v for k, v in common.items() if k not in MOE}
    torch.manual_seed(seed)
    model = model_cls(cfg_cls(**kwargs))
    # what save_pretrained writes and sglang picks the model class by; config.save_pretrained
    # alone leaves it out
    model.config.architectures = [model_cls.__name__]
    with torch.no_grad():  # peakier logits: fewer near-ties in greedy decoding
        model.lm_head.weight.mul_(4.0)
    if bf16:
        model = model.to(torch.bfloat16)
    state = split_fused_experts({k: v.detach() for k, v in model.state_dict().items()})
    folder = work / name
    folders = {"serve": folder, "reference": folder}
    if not spec["quant"]:
        _save(model.config, state, folder, tokenizer, save_file)
        return folders
    served: dict[str, torch.Tensor] = {}
    for key, tensor in state.items():
        if is_quantised(key):
            q, scale = quantize_fp8(tensor, spec["quant"])
            state[key] = dequantize_fp8(q, scale)
            served[key] = q
            served[key + ("_scale_inv" if spec["quant"] == "block" else "_scale")] = scale
        else:
            served[key] = tensor
    folders["reference"] = work / f"{name}-reference"
    _save(model.config, state, folders["reference"], tokenizer, save_file)
    quant: dict[str, Any] = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    if spec["quant"] == "block":
        quant["weight_block_size"] = [BLOCK, BLOCK]
    model.config.quantization_config = quant  # after the reference: it has none
    _save(model.config, served, folder, tokenizer, save_file)
    return folders


def _save(config: Any, state: dict[str, Any], folder: Path, tokenizer: Any,
          save_file: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save_pretrained(folder)


# What each model calls on CUDA in sglang 0.5.17 (no sgl_kernel importable, flashinfer
# off, --attention-backend triton), read from that release's code: (step, op, provider,
# module relative to the sglang package, what the module must contain for the claim to
# hold).  "sgl_kernel": imported from sgl_kernel or resolved through 0.5.16+'s kernel
# registry as "sgl_kernel:<op>" -- the fallback answers it; "sglang JIT": sglang's own
# CUDA source compiled with nvcc at first call (sglang.kernels.jit); "sglang Triton": a
# Triton kernel of sglang's; "torch": plain PyTorch.
Entry = tuple[str, str, str, str, str]
DENSE: list[Entry] = [
    ("norm (also Qwen3's q/k norm)", "rmsnorm", "sgl_kernel", "srt/layers/layernorm.py",
     "out = rmsnorm(x, self.weight.data, self.variance_epsilon)"),
    ("residual add + norm", "fused_add_rmsnorm", "sgl_kernel", "srt/layers/layernorm.py",
     "fused_add_rmsnorm(x, residual, self.weight.data, self.variance_epsilon)"),
    ("attention", "decode/extend attention", "sglang Triton",
     "srt/layers/attention/triton_backend.py", "class TritonAttnBackend"),
    ("rope (the fallback's where patch sglang-kernels-rope-fallback applies)",
     "apply_rope_with_cos_sin_cache_inplace", "sglang JIT",
     "kernels/ops/attention/rope.py", "def apply_rope_with_cos_sin_cache_inplace"),
]
OPS_0_5_17: dict[str, list[Entry]] = {
    "qwen3moe": [
        *DENSE,
        ("MoE routing", "topk_softmax", "sgl_kernel", "kernels/ops/moe/__init__.py",
         "sgl_kernel:topk_softmax"),
        ("MoE alignment", "moe_align_block_size", "sgl_kernel", "kernels/ops/moe/__init__.py",
         "sgl_kernel:moe_align_block_size"),
        ("MoE experts", "invoke_fused_moe_kernel", "sglang Triton",
         "kernels/ops/moe/fused_moe_triton_kernels.py", "def invoke_fused_moe_kernel"),
        ("MoE activation", "silu_and_mul", "sglang JIT", "kernels/ops/activation/activation.py",
         "def silu_and_mul"),
        ("MoE reduction (top-2, scale 1: torch.add; top-k>2: moe_sum_reduce)", "torch.add",
         "torch", "srt/layers/moe/moe_runner/triton_utils/fused_moe.py",
         "elif topk == 2 and routed_scaling_factor == 1.0:"),
    ],
    "qwen3-fp8": [
        *DENSE,
        ("MLP activation (sgl_kernel's only where the width is not a multiple of 16 bytes)",
         "silu_and_mul", "sglang JIT", "srt/layers/activation.py",
         "return _act_and_mul(_jit_silu_and_mul, _sgl_silu_and_mul, input, out)"),
        ("FP8 linear: backend (no deep_gemm, not Blackwell/SM120/ROCm)",
         "triton_w8a8_block_fp8_linear", "sglang Triton",
         "srt/layers/quantization/fp8_utils.py", "return triton_w8a8_block_fp8_linear"),
        ("FP8 activation quantisation, per token and group of 128", "per_token_group_quant",
         "sglang JIT", "kernels/ops/quantization/fp8_kernel.py",
         "per_token_group_quant_fp8 = sglang_per_token_group_quant_fp8"),
        ("FP8 block matmul", "w8a8_block_fp8_matmul_triton", "sglang Triton",
         "kernels/ops/quantization/fp8_kernel.py", "def w8a8_block_fp8_matmul_triton"),
        ("import only (never called on this path)", "fp8_scaled_mm", "sgl_kernel",
         "srt/layers/quantization/fp8_utils.py", "from sgl_kernel import fp8_scaled_mm"),
    ],
    "llama-fp8": [
        *DENSE,
        ("MLP activation (sgl_kernel's only where the width is not a multiple of 16 bytes)",
         "silu_and_mul", "sglang JIT", "srt/layers/activation.py",
         "return _act_and_mul(_jit_silu_and_mul, _sgl_silu_and_mul, input, out)"),
        ("FP8 activation quantisation, per token", "sgl_per_token_quant_fp8", "sgl_kernel",
         "kernels/ops/quantization/__init__.py", "sgl_kernel:sgl_per_token_quant_fp8"),
        ("FP8 matmul, per-token x per-channel scales (cutlass_fp8_supported on sm_90)",
         "fp8_scaled_mm", "sgl_kernel", "srt/layers/quantization/fp8_utils.py",
         "from sgl_kernel import fp8_scaled_mm"),
    ],
}


def check_listing(name: str, sglang_root: Path) -> list[str]:
    """Each entry's claim against an sglang package's source: the named module holds the
    quoted text.  Returns the entries that do not hold (empty: the listing is right for
    that release)."""
    bad = []
    for _step, op, _provider, module, needle in OPS_0_5_17[name]:
        path = sglang_root / module
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            bad.append(f"{op}: {module} missing")
            continue
        if needle not in text:
            bad.append(f"{op}: {module} lacks {needle!r}")
    return bad


def listing(name: str, provided: set[str] | None = None) -> list[str]:
    """Markdown rows: step, op, who runs it; for sgl_kernel ops, whether the fallback
    implements it (``provided``: the stand-in's implemented names) or raises on call."""
    rows = []
    for step, op, provider, module, _needle in OPS_0_5_17[name]:
        who = provider
        if provider == "sgl_kernel" and provided is not None:
            who += ": fallback implements it" if op in provided else ": fallback RAISES"
        rows.append(f"| {name} | {step} | `{op}` | {who} | sglang/{module} |")
    return rows


def fallback_ops() -> set[str]:
    """The names the fallback implements (not the raising proxies)."""
    from sglang_shims import kernels

    return set(getattr(kernels, "OPS", {}) or kernels.__all__)
