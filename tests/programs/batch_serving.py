"""A ragged batch served through sglang's own model classes as its scheduler would: every
prompt prefilled in one extend batch, then greedy decode steps, each a ForwardBatch on the
runner's KV pools and attention backend.  A piece (tests/support/programs.py): the model
forward program and the compatibility matrix's probe (tools/matrix/probe.py) get its text."""
import contextlib
import importlib

from with_defaults import with_defaults


class _Stream:
    """A CUDA stream that is no stream: what sglang's runner set-up touches, on the CPU."""
    def __init__(self, *a, **k): pass
    def wait_stream(self, *a, **k): pass
    def synchronize(self): pass


def cpu_streams():
    """torch.cuda's streams replaced by :class:`_Stream` (the fake CUDA has none)."""
    import torch
    torch.cuda.Stream = _Stream
    torch.cuda.current_stream = lambda *a, **k: _Stream()
    torch.cuda.stream = lambda s=None: contextlib.nullcontext()


def cpu_pools(call, requests, context, slots, dtype, kv_heads, head_dim, layers):
    """sglang's real request-to-token and KV pools on the CPU: ``requests`` rows of
    ``context`` tokens, ``slots`` KV slots of ``layers`` x ``kv_heads`` x ``head_dim``.
    ``call`` is the program's own (it gives each release the keywords it takes)."""
    from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, ReqToTokenPool
    requests_pool = call(ReqToTokenPool, size=requests, max_context_len=context, device="cpu",
                         enable_memory_saver=False, use_records=False)  # use_records: 0.4.0-0.4.1
    kv_pool = call(MHATokenToKVPool, size=slots, page_size=1, dtype=dtype, head_num=kv_heads,
                   head_dim=head_dim, layer_num=layers, device="cpu", enable_memory_saver=False)
    return requests_pool, kv_pool


def forward_batch(mr, mode, lens, **fields):
    """A ForwardBatch of ``len(lens)`` requests (request ``i`` in row ``i`` of the runner's
    request table) with ``fields`` set; the CPU copies of the sequence lengths derived."""
    import torch
    from sglang.srt.model_executor import forward_batch_info as fbi
    fb = with_defaults(fbi.ForwardBatch)
    fb.forward_mode, fb.batch_size, fb.return_logprob = mode, len(lens), False
    if hasattr(fbi, "CaptureHiddenMode"):  # from 0.4.1
        fb.capture_hidden_mode = fbi.CaptureHiddenMode.NULL
    fb.req_to_token_pool, fb.token_to_kv_pool = mr.req_to_token_pool, mr.token_to_kv_pool
    fb.attn_backend, fb.req_pool_indices = mr.attn_backend, torch.arange(len(lens))
    for k, v in fields.items():
        setattr(fb, k, v)
    fb.seq_lens_cpu, fb.seq_lens_sum = fb.seq_lens.clone(), int(fb.seq_lens.sum())
    return fb


def forward_context(mr):
    """What ModelRunner publishes around each forward from 0.5.17 on (the layers read the
    attention backend and pools from it); nothing before."""
    try:
        fc = importlib.import_module("sglang.srt.model_executor.forward_context")
    except ImportError:
        return contextlib.nullcontext()
    return fc.forward_context(fc.ForwardContext(attn_backend=mr.attn_backend))


def serve_batch(model, mr, prompts, steps, n_slots):
    """Prefill ``prompts``, then ``steps`` greedy decode steps: per prompt, its greedy tokens
    and the logits row each came from.  KV slots 1 to ``n_slots - 1`` are handed out in order
    (slot 0 is sglang's padding slot)."""
    import torch
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    table = mr.req_to_token_pool.req_to_token
    free = iter(range(1, n_slots))
    lens = [len(p) for p in prompts]
    slots = [torch.tensor([next(free) for _ in range(n)]) for n in lens]
    for i, s in enumerate(slots):
        table[i, :len(s)] = s.to(table.dtype)
    fb = forward_batch(
        mr, ForwardMode.EXTEND, lens, input_ids=torch.tensor([t for p in prompts for t in p]),
        positions=torch.cat([torch.arange(n) for n in lens]), seq_lens=torch.tensor(lens),
        extend_seq_lens=torch.tensor(lens, dtype=torch.int32), extend_seq_lens_cpu=lens,
        extend_prefix_lens=torch.zeros(len(lens), dtype=torch.int32),
        extend_prefix_lens_cpu=[0] * len(lens), extend_num_tokens=sum(lens),
        extend_start_loc=torch.tensor([0, *lens[:-1]]).cumsum(0).to(torch.int32),
        out_cache_loc=torch.cat(slots))
    tokens, logits = [[] for _ in prompts], [[] for _ in prompts]
    for step in range(steps + 1):
        mr.attn_backend.init_forward_metadata(fb)
        with torch.no_grad(), forward_context(mr):
            out = model(fb.input_ids, fb.positions, fb).next_token_logits
        for i, row in enumerate(out):
            logits[i].append(row.clone())
            tokens[i].append(int(row.argmax()))
        if step == steps:
            return tokens, logits
        new = torch.tensor([next(free) for _ in prompts])
        for i in range(len(prompts)):
            table[i, lens[i]] = int(new[i])
        fb = forward_batch(mr, ForwardMode.DECODE, lens,
                           input_ids=torch.tensor([t[-1] for t in tokens]),
                           positions=torch.tensor(lens), seq_lens=torch.tensor(lens) + 1,
                           out_cache_loc=new)
        lens = [n + 1 for n in lens]
