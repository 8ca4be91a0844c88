"""The checkpoints ``examples/_e2e_models.py`` (its folder: argv[1]) builds, read back by
sglang (ModelConfig, Fp8Config, the MoE expert loader mapping) and by transformers."""
import fake_cuda
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, sys.argv[1])
import _e2e_models as m
import torch
import transformers
from safetensors.torch import load_file
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
trainer = trainers.BpeTrainer(vocab_size=100, special_tokens=["<unk>", "<s>", "</s>"])
tok.train_from_iterator(["the quick brown fox"] * 20, trainer)
fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                               unk_token="<unk>")
common = dict(vocab_size=len(fast), hidden_size=128, intermediate_size=256,
              moe_intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
              num_key_value_heads=2, head_dim=64, max_position_embeddings=4096,
              rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
from sglang.srt.configs.model_config import ModelConfig
from sglang.srt.layers.moe.fused_moe_triton.layer import FusedMoE
from sglang.srt.layers.quantization.fp8 import Fp8Config
out = {"transformers": transformers.__version__}
work = Path(tempfile.mkdtemp())
for name in m.SPECS:
    f = m.build(name, common, work, fast)
    mc = ModelConfig(str(f["serve"]), dtype=m.SPECS[name]["dtype"])
    entry = {"arch": mc.hf_config.architectures, "quantization": mc.quantization}
    served = load_file(str(f["serve"] / "model.safetensors"))
    key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    ref = AutoModelForCausalLM.from_pretrained(f["reference"], **{key: torch.float32})
    state = m.split_fused_experts(ref.state_dict())
    if mc.quantization:
        q = Fp8Config.from_config(mc.hf_config.quantization_config)
        entry.update(block=q.weight_block_size, serialized=q.is_checkpoint_fp8_serialized)
        quantised = [k for k in served if served[k].dtype == torch.float8_e4m3fn]
        suffix = "_scale_inv" if q.weight_block_size else "_scale"
        entry["quantised"] = sorted({k.split(".")[-2] for k in quantised})
        entry["scale_shapes"] = sorted({tuple(served[k + suffix].shape) for k in quantised})
        entry["dequantised_equal"] = all(
            torch.equal(m.dequantize_fp8(served[k], served[k + suffix]), state[k])
            for k in quantised)
    else:
        mapping = FusedMoE.make_expert_params_mapping(
            ckpt_gate_proj_name="gate_proj", ckpt_down_proj_name="down_proj",
            ckpt_up_proj_name="up_proj", num_experts=mc.hf_config.num_experts)
        experts = [k for k in served if ".experts." in k]
        entry["experts"] = len(experts)
        entry["unmapped"] = [k for k in experts if not any(w in k for _, w, _, _ in mapping)]
        # transformers reads the per-expert checkpoint back into the same weights
        entry["round_trip"] = sorted(served) == sorted(state) and all(
            torch.equal(served[k], state[k]) for k in served)
    out[name] = entry
print(json.dumps(out))
