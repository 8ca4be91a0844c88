# Harness run in a subprocess by tests/test_model_forward.py (after conftest.FAKE_CUDA):
# sglang 0.5.1's own Qwen3 and Llama classes serve a ragged batch of 8 prompts -- one
# prefill, then decode steps -- through sglang's real KV-cache pools and one of its real
# attention backends (H2_BACKEND: torch_native, or triton run by TRITON_INTERPRET), on
# transformers' weights.  Prints, per model, the greedy tokens' agreement with
# transformers' generate() and the largest logit difference against transformers run
# teacher-forced on sglang's own continuation.  Test-only: not part of the package.
import contextlib, dataclasses, importlib, json, os, types
import torch

class _Stream:
    def __init__(self, *a, **k): pass
    def wait_stream(self, *a, **k): pass
torch.cuda.Stream = _Stream
torch.cuda.current_stream = lambda *a, **k: _Stream()
torch.cuda.stream = lambda s=None: contextlib.nullcontext()
importlib.import_module("sglang.srt.configs.model_config")
import sgl_kernel
from sglang.srt.distributed import parallel_state as ps
from sglang.srt.layers import dp_attention
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, ReqToTokenPool
from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode, ForwardBatch, ForwardMode
import transformers

BACKEND = os.environ["H2_BACKEND"]
HEADS, KV_HEADS, HEAD_DIM, LAYERS = 4, 2, 64, 2
LENS = [5, 17, 33, 9, 40, 12, 21, 3]   # ragged, not multiples of any block size
STEPS = 4                              # decode steps after the prefill
ps.init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                distributed_init_method="file://" + __import__("tempfile").mkdtemp() + "/store")
ps.initialize_model_parallel(tensor_model_parallel_size=1)
dp_attention.initialize_dp_attention(
    server_args=types.SimpleNamespace(enable_dp_attention=False, tp_size=1, dp_size=1,
                                      moe_dense_tp_size=None, pp_size=1, device="cpu"),
    model_config=types.SimpleNamespace(hidden_size=256, dtype=torch.float32))
g = torch.Generator().manual_seed(7)
PROMPTS = [torch.randint(3, 128, (n,), generator=g).tolist() for n in LENS]


def runner():
    """What sglang's backends read from a ModelRunner, with real pools on the CPU."""
    mr = types.SimpleNamespace(
        device="cpu", gpu_id=0, sliding_window_size=None, token_to_kv_pool_allocator=None,
        req_to_token_pool=ReqToTokenPool(size=16, max_context_len=256, device="cpu",
                                         enable_memory_saver=False),
        token_to_kv_pool=MHATokenToKVPool(size=2048, page_size=1, dtype=torch.float32,
                                          head_num=KV_HEADS, head_dim=HEAD_DIM, layer_num=LAYERS,
                                          device="cpu", enable_memory_saver=False),
        server_args=types.SimpleNamespace(speculative_num_draft_tokens=None, page_size=1,
                                          speculative_num_steps=None,
                                          triton_attention_num_kv_splits=8),
        model_config=types.SimpleNamespace(num_attention_heads=HEADS, context_len=256,
                                           get_num_kv_heads=lambda tp: KV_HEADS,
                                           is_encoder_decoder=False))
    if BACKEND == "triton":
        from sglang.srt.layers.attention.triton_backend import TritonAttnBackend as Backend
    else:
        from sglang.srt.layers.attention.torch_native_backend import TorchNativeAttnBackend as Backend
    mr.attn_backend = Backend(mr)
    return mr


def batch(mr, mode, **fields):
    fb = ForwardBatch.__new__(ForwardBatch)
    for f in dataclasses.fields(ForwardBatch):
        if f.default is not dataclasses.MISSING: setattr(fb, f.name, f.default)
        elif f.default_factory is not dataclasses.MISSING: setattr(fb, f.name, f.default_factory())
        else: setattr(fb, f.name, None)
    fb.forward_mode, fb.batch_size, fb.return_logprob = mode, len(LENS), False
    fb.capture_hidden_mode = CaptureHiddenMode.NULL
    fb.req_to_token_pool, fb.token_to_kv_pool = mr.req_to_token_pool, mr.token_to_kv_pool
    fb.attn_backend, fb.req_pool_indices = mr.attn_backend, torch.arange(len(LENS))
    for k, v in fields.items(): setattr(fb, k, v)
    fb.seq_lens_cpu, fb.seq_lens_sum = fb.seq_lens.clone(), int(fb.seq_lens.sum())
    return fb


def serve(model, mr):
    """Prefill all prompts in one extend batch, then STEPS greedy decode steps."""
    table = mr.req_to_token_pool.req_to_token
    free = iter(range(1, 2048))                  # slot 0 is sglang's padding slot
    slots = [torch.tensor([next(free) for _ in range(n)]) for n in LENS]
    for i, s in enumerate(slots):
        table[i, :len(s)] = s.to(torch.int32)
    fb = batch(mr, ForwardMode.EXTEND, input_ids=torch.tensor(sum(PROMPTS, [])),
               positions=torch.cat([torch.arange(n) for n in LENS]), seq_lens=torch.tensor(LENS),
               extend_seq_lens=torch.tensor(LENS, dtype=torch.int32), extend_seq_lens_cpu=LENS,
               extend_prefix_lens=torch.zeros(len(LENS), dtype=torch.int32),
               extend_prefix_lens_cpu=[0] * len(LENS), extend_num_tokens=sum(LENS),
               extend_start_loc=torch.tensor([0, *LENS[:-1]]).cumsum(0).to(torch.int32),
               out_cache_loc=torch.cat(slots))
    lens, tokens, logits = list(LENS), [[] for _ in LENS], [[] for _ in LENS]
    for step in range(STEPS + 1):
        mr.attn_backend.init_forward_metadata(fb)
        with torch.no_grad():
            out = model(fb.input_ids, fb.positions, fb).next_token_logits
        for i, row in enumerate(out):
            logits[i].append(row.clone()); tokens[i].append(int(row.argmax()))
        if step == STEPS:
            return tokens, logits
        new = torch.tensor([next(free) for _ in LENS])
        for i in range(len(LENS)):
            table[i, lens[i]] = int(new[i])
        fb = batch(mr, ForwardMode.DECODE, input_ids=torch.tensor([t[-1] for t in tokens]),
                   positions=torch.tensor(lens), seq_lens=torch.tensor(lens) + 1,
                   out_cache_loc=new)
        lens = [n + 1 for n in lens]


tiny = dict(vocab_size=128, hidden_size=256, intermediate_size=256, num_hidden_layers=LAYERS,
            num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM,
            max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=False,
            rope_theta=1e6)
result = {}
for label, module, name in (("qwen3", "sglang.srt.models.qwen3", "Qwen3ForCausalLM"),
                            ("llama", "sglang.srt.models.llama", "LlamaForCausalLM")):
    cfg = getattr(transformers, name.replace("ForCausalLM", "Config"))(**tiny)
    model = getattr(importlib.import_module(module), name)(config=cfg, quant_config=None)
    torch.manual_seed(0)
    hf = getattr(transformers, name)(cfg).eval()
    with torch.no_grad():
        hf.lm_head.weight.mul_(4.0)             # peakier logits: fewer near-ties
    model.load_weights(list(hf.state_dict().items()))
    tokens, logits = serve(model, runner())
    worst, identical = 0.0, 0
    for i, prompt in enumerate(PROMPTS):
        with torch.no_grad():
            ref = hf(torch.tensor([prompt + tokens[i][:-1]])).logits[0, len(prompt) - 1:]
            greedy = hf.generate(torch.tensor([prompt]), max_new_tokens=STEPS + 1,
                                 do_sample=False, pad_token_id=0)[0, len(prompt):].tolist()
        worst = max(worst, float((torch.stack(logits[i]) - ref).abs().max()))
        identical += greedy == tokens[i]
    result[label] = {"max_logit_diff": worst, "identical": identical, "of": len(PROMPTS)}
print(json.dumps({"backend": BACKEND, "models": result,
                  "fallback": getattr(sgl_kernel, "__sglang_shims_fallback__", None)}))
