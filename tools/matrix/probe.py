# Run inside one matrix cell (a fresh ``python -S`` after tests/programs/fake_cuda.py, and the
# shims' activation line in a shims cell): (i) import the release's serving graph, (ii) when
# MATRIX_MODEL=1, build a tiny Qwen3 and Llama with random weights and run one prefill and
# two decode steps through sglang's own model classes, KV pools and torch-native attention,
# greedy tokens compared with transformers' generate().  Prints one JSON line last.
# Harness only: it fakes what a CUDA machine would answer, never a version skew.
import contextlib
import dataclasses
import importlib
import importlib.util
import inspect
import json
import os
import sys
import time
import traceback
import types

# pieces of tests/programs, put in place
from batch_serving import cpu_pools, cpu_streams, serve_batch
from with_defaults import with_defaults

GRAPH = [
    "sglang.launch_server", "sglang.srt.entrypoints.http_server",
    "sglang.srt.entrypoints.engine", "sglang.srt.managers.tokenizer_manager",
    "sglang.srt.managers.detokenizer_manager", "sglang.srt.managers.scheduler",
    "sglang.srt.model_executor.model_runner", "sglang.srt.layers.layernorm",
    "sglang.srt.layers.activation", "sglang.srt.layers.rotary_embedding",
    "sglang.srt.layers.sampler", "sglang.srt.layers.quantization.awq",
    "sglang.srt.layers.quantization.gptq", "sglang.srt.layers.moe.topk",
    "sglang.srt.layers.attention.triton_backend",
    "sglang.srt.layers.attention.torch_native_backend", "sglang.srt.models.llama",
    "sglang.srt.models.qwen2", "sglang.srt.models.qwen3", "sglang.srt.models.qwen3_moe",
    "sglang.srt.models.gemma3_causal",
    "sglang.srt.server",  # up to 0.4.5.post1 (launch_server's own up to 0.4.1.post6)
]


def in_release(name):
    """Whether the release's wheel has module ``name`` (a file or a package): the graph
    changes over the releases (entrypoints/ from 0.4.1.post7, Qwen3 from 0.4.5.post2), and a
    module a release never had is no failure of it.  Read from the files, so nothing is imported."""
    from importlib.util import find_spec

    spec = find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        return True  # no sglang at all: let the import say so
    rel = name.split(".")[1:]
    for base in spec.submodule_search_locations:
        path = os.path.join(base, *rel)
        if os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py")):
            return True
    return False


def _first_line(exc):
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:400]


def _origin(exc, depth=1):
    """The innermost frames outside this harness (innermost last): where the error came from."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != "<string>"]
    out = []
    for f in frames[-depth:]:
        path = f.filename
        if "/site/" in path:  # the release's environment: keep what follows site-packages
            path = path.split("/site/", 1)[1]
        for marker in ("/sglang/", "/transformers/", "/torch/", "/sgl_kernel/",
                       "/sglang_shims/"):
            if marker in path:
                path = marker.strip("/") + "/" + path.split(marker, 1)[1]
                break
        out.append(f"{path}:{f.lineno}")
    return " < ".join(reversed(out))


OPTIONAL = {"sglang.srt.layers.quantization.gptq": "sglang.srt.layers.quantization"}
"""Graph modules a release may import only with an optional dependency installed, each with
the package that decides: 0.4.4.post2 made vllm optional and its quantization package imports
``gptq`` only inside ``try: import vllm``, while ``gptq.py`` raises "vllm is not installed" when
imported directly.  Such a module that fails to import is no failure of the graph when its
package imported without it (a server there never imports it either); it is recorded apart."""


def _optional_gap(name):
    """Why a failed import of ``name`` is left out of the graph verdict, or None: its package
    (:data:`OPTIONAL`) imports here without importing it."""
    package = OPTIONAL.get(name)
    if package is None:
        return None
    try:
        importlib.import_module(package)
    except BaseException:
        return None
    if name in sys.modules:
        return None
    return f"{package} imports here without it (it needs an optional dependency)"


def import_graph():
    results, first, optional = {}, None, {}
    for name in filter(in_release, GRAPH):
        try:
            importlib.import_module(name)
            results[name] = "ok"
        except BaseException as exc:  # a cell records every failure
            why = _optional_gap(name)
            if why is not None:
                optional[name] = f"{_first_line(exc)} ({why})"
                continue
            results[name] = _first_line(exc)
            if first is None:
                first = {"module": name, "error": _first_line(exc), "at": _origin(exc)}
    return results, first, optional


# -- (ii) the model check -------------------------------------------------------------------

HEADS, KV_HEADS, HEAD_DIM, LAYERS = 4, 2, 64, 2
# bf16 as served: from 0.5.5 sglang's RoPE sends float32 to vllm's kernel, a package no
# release installs.  A token counts as right when transformers (float32, fed sglang's own
# continuation) ranks it within TIE of its best logit: bf16 rounding, not a wrong model.
TIE = 0.25
LENS = [5, 17, 9]
STEPS = 2


SERVER_ARGS = []


class HarnessError(Exception):
    """The harness could not set sglang up (an API it does not know yet): not a verdict."""


def call(fn, **kw):
    """Call ``fn`` with the keywords it accepts; a required one we cannot give is a
    HarnessError naming it."""
    params = inspect.signature(fn).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        kw = {k: v for k, v in kw.items() if k in params}
    missing = [n for n, p in params.items() if n != "self" and p.default is p.empty
               and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n not in kw]
    if missing:
        raise HarnessError(f"{getattr(fn, '__qualname__', fn)} needs {missing}")
    return fn(**kw)


def server_args():
    """sglang's own ServerArgs with its field defaults (``__post_init__`` would probe the
    model and the GPU), registered as the global one where the release has that."""
    from sglang.srt import server_args as module
    cls = module.ServerArgs
    if dataclasses.is_dataclass(cls):
        sa = with_defaults(cls)
    else:  # 0.5.20+: a msgspec Struct, whose __post_init__ runs on every construction
        import msgspec

        class Bare(cls):  # the same fields and defaults, and no __post_init__
            def __post_init__(self): pass
        sa = Bare(**{f.name: None for f in msgspec.structs.fields(cls) if f.required})
    sa.model_path, sa.device, sa.attention_backend = "dummy", "cpu", "torch_native"
    sa.tp_size, sa.dp_size, sa.pp_size, sa.page_size = 1, 1, 1, 1
    if hasattr(sa, "cuda_graph_config"):  # 0.5.17+: filled by __post_init__
        with contextlib.suppress(ImportError):
            from sglang.srt.model_executor.cuda_graph_config import default_cuda_graph_config
            sa.cuda_graph_config = default_cuda_graph_config()
    setter = getattr(module, "set_global_server_args_for_scheduler", None)
    if setter is not None:
        setter(sa)
    return sa


def setup():
    import torch

    cpu_streams()
    # before 0.4.1.post7 there is no DP attention, and the models take their parallel layout
    # from vllm's distributed state (``from vllm.distributed import ...``): that one is set
    # up too, the same one-process world
    legacy = not in_release("sglang.srt.layers.dp_attention")
    from sglang.srt.distributed import parallel_state as ps
    dp_attention = None if legacy else importlib.import_module("sglang.srt.layers.dp_attention")
    try:
        SERVER_ARGS.append(server_args())
    except TypeError as exc:  # 0.5.23: ServerArgs has its own __new__
        raise HarnessError(f"ServerArgs without __post_init__: {_first_line(exc)}") from exc
    try:  # 0.5.17+: the resolved config that the scheduler publishes from its ServerArgs
        context = importlib.import_module("sglang.srt.runtime_context")
    except ImportError:
        context = None
    if context is not None and hasattr(context, "publish"):
        try:
            call(context.publish, server_args=SERVER_ARGS[0], role="scheduler")
        except Exception as exc:
            raise HarnessError(f"runtime_context.publish: {_first_line(exc)}") from exc
    # the groups live on the CPU (from 0.5.9 a CUDA group makes tensors on its device)
    saved = getattr(ps, "is_cuda_alike", None)
    if saved is not None:
        ps.is_cuda_alike = lambda: False
    try:
        call(ps.init_distributed_environment,
             world_size=1, rank=0, local_rank=0, backend="gloo",
             distributed_init_method="file://" + __import__("tempfile").mkdtemp() + "/store")
        call(ps.initialize_model_parallel, tensor_model_parallel_size=1)
    finally:
        if saved is not None:
            ps.is_cuda_alike = saved
    if legacy:
        legacy_vllm_world()
        return
    get_parallel = getattr(context, "get_parallel", None)
    if get_parallel is not None and hasattr(get_parallel(), "override_permanently"):
        try:
            get_parallel().tp_rank  # noqa: B018  (reading it raises on 0.5.22+)
        except RuntimeError:  # 0.5.22+: each process reads its ranks from a published bundle;
            # this one process is rank 0 of every group (world size 1)
            fields = getattr(context, "_parallel_fields", frozenset)()
            try:
                get_parallel().override_permanently(
                    **{name: 0 for name in fields if name.endswith("_rank")})
            except Exception as exc:
                raise HarnessError(f"ranks of a one-process world: {_first_line(exc)}") from exc
    init = getattr(dp_attention, "initialize_dp_attention", None)
    if init is None:
        raise HarnessError("no sglang.srt.layers.dp_attention.initialize_dp_attention")
    model_config = types.SimpleNamespace(hidden_size=256, dtype=torch.bfloat16,
                                         hf_config=types.SimpleNamespace())
    if saved is not None:  # 0.5.8.post1 builds its attention-TP group here: on the CPU too
        ps.is_cuda_alike = lambda: False
    try:
        # 0.4.x take the layout itself: one process, no DP attention
        call(init, server_args=SERVER_ARGS[0], model_config=model_config,  # 0.5.22: no model_config
             enable_dp_attention=False, tp_rank=0, tp_size=1, dp_size=1,
             moe_dense_tp_size=None, pp_size=1)
    except (AttributeError, TypeError) as exc:
        raise HarnessError(f"initialize_dp_attention: {_first_line(exc)}") from exc
    finally:
        if saved is not None:
            ps.is_cuda_alike = saved


def legacy_vllm_world():
    """vllm's one-process world on the CPU (gloo), for releases whose models read it."""
    try:
        vps = importlib.import_module("vllm.distributed.parallel_state")
    except ImportError as exc:
        raise HarnessError(f"vllm.distributed: {_first_line(exc)}") from exc
    try:
        call(vps.init_distributed_environment, world_size=1, rank=0, local_rank=0,
             backend="gloo",
             distributed_init_method="file://" + __import__("tempfile").mkdtemp() + "/store")
        call(vps.initialize_model_parallel, tensor_model_parallel_size=1, backend="gloo")
    except (AttributeError, TypeError, ValueError, RuntimeError) as exc:
        raise HarnessError(f"vllm's parallel state: {_first_line(exc)}") from exc


def runner():
    import torch
    from sglang.srt.layers.attention.torch_native_backend import TorchNativeAttnBackend
    requests_pool, kv_pool = cpu_pools(call, 8, 128, 512, torch.bfloat16, KV_HEADS, HEAD_DIM,
                                       LAYERS)
    mr = types.SimpleNamespace(
        device="cpu", gpu_id=0, sliding_window_size=None, token_to_kv_pool_allocator=None,
        req_to_token_pool=requests_pool, token_to_kv_pool=kv_pool, server_args=SERVER_ARGS[0],
        model_config=types.SimpleNamespace(num_attention_heads=HEADS, context_len=128,
                                           get_num_kv_heads=lambda tp: KV_HEADS,
                                           is_encoder_decoder=False))
    mr.attn_backend = TorchNativeAttnBackend(mr)
    return mr


def model_check():
    import torch
    import transformers
    try:
        setup()
        mr_factory = runner
        mr_factory()  # the harness's own set-up must work before a verdict means anything
    except HarnessError as exc:
        return {"ok": None, "error": f"harness: {exc}"}
    g = torch.Generator().manual_seed(7)
    prompts = [torch.randint(3, 128, (n,), generator=g).tolist() for n in LENS]
    tiny = dict(vocab_size=128, hidden_size=256, intermediate_size=256,
                num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM, max_position_embeddings=128,
                rms_norm_eps=1e-6, tie_word_embeddings=False, rope_theta=1e6)
    models = {}
    for label, module, name in (("qwen3", "sglang.srt.models.qwen3", "Qwen3ForCausalLM"),
                                ("llama", "sglang.srt.models.llama", "LlamaForCausalLM")):
        config_class = getattr(transformers, name.replace("ForCausalLM", "Config"), None)
        if config_class is None or importlib.util.find_spec(module) is None:
            continue  # a model newer than the release or its transformers (0.4.x: Qwen3)
        cfg = config_class(**tiny)
        torch.set_default_dtype(torch.bfloat16)
        try:
            model = getattr(importlib.import_module(module), name)(config=cfg,
                                                                   quant_config=None)
        finally:
            torch.set_default_dtype(torch.float32)
        torch.manual_seed(0)
        hf = getattr(transformers, name)(cfg).eval()
        with torch.no_grad():
            hf.lm_head.weight.mul_(4.0)  # peakier logits: fewer near-ties
        model.load_weights([(k, v.to(torch.bfloat16)) for k, v in hf.state_dict().items()])
        tokens = serve_batch(model, mr_factory(), prompts, STEPS, 512)[0]
        same, worst = 0, 0.0
        for i, prompt in enumerate(prompts):
            with torch.no_grad():
                ref = hf(torch.tensor([prompt + tokens[i][:-1]])).logits[0, len(prompt) - 1:]
            gaps = ref.max(-1).values - ref[torch.arange(len(tokens[i])), tokens[i]]
            worst = max(worst, float(gaps.max()))
            same += bool((gaps <= TIE).all())
        models[label] = {"identical": same, "of": len(prompts), "worst_gap": round(worst, 4)}
    if not models:
        return {"ok": None, "error": "harness: neither Qwen3 nor Llama in this release"}
    ok = all(m["identical"] == m["of"] for m in models.values())
    return {"ok": ok, "models": models,
            "error": None if ok else f"greedy tokens differ from transformers: {models}"}


start = time.monotonic()
out = {}
results, first, optional = import_graph()
out["graph"] = {"ok": first is None, "failed": sum(v != "ok" for v in results.values()),
                "of": len(results), "first": first, "results": results}
if optional:
    out["graph"]["optional"] = optional
if os.environ.get("MATRIX_MODEL") == "1":
    try:
        out["model"] = model_check()
    except BaseException as exc:
        out["model"] = {"ok": False, "error": _first_line(exc), "at": _origin(exc, 4)}
try:
    import transformers
    out["transformers_version"] = transformers.__version__
except BaseException:
    out["transformers_version"] = None
kernel = sys.modules.get("sgl_kernel")
out["kernel_loaded"] = (None if kernel is None else
                        (getattr(kernel, "__sglang_shims_fallback__", None) and "fallback")
                        or getattr(kernel, "__version__", "?"))
if "sglang_shims" in sys.modules:
    import sglang_shims
    out["acted"] = sorted(k for k, v in sglang_shims.status().items()
                          if v["state"] == "applied")
    out["failed_patches"] = {k: v.get("reason", "") for k, v in sglang_shims.status().items()
                             if v["state"] in ("failed", "drifted")}
out["seconds"] = round(time.monotonic() - start, 1)
sys.stdout.flush()
print("\n" + json.dumps(out))
