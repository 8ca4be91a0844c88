"""sglang's real ``ServerArgs._handle_attention_backend_compatibility`` on a faked GPU, for
each case of CASES (capability, given backend, MLA or not): the backend it picks or its
error, with the patch's record (unless STOCK)."""
import dataclasses
import json
import os
import sys

import torch

from patch_state import patch_entry

if not os.environ.get("STOCK"):
    import sglang_shims
    sglang_shims.install()
try:
    from sglang.srt import server_args
except ModuleNotFoundError as exc:
    # only a third-party module missing is an absence to report; an ImportError from
    # sglang itself or from the shims is a failure (the traceback goes to stderr)
    if (exc.name or "").partition(".")[0] in ("sglang", "sglang_shims", "sgl_kernel", ""):
        raise
    print(json.dumps({"import_error": f"{type(exc).__name__}: {exc}"}))
    raise SystemExit(0) from None
from sglang.srt import utils

# Faked only after the imports: transformers/torch._dynamo would try to initialise CUDA.
torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 1


class HFConfig:
    architectures = ["LlamaForCausalLM"]  # noqa: RUF012  (as a config class has it)


class ModelConfig:
    hf_config = HFConfig()

    def get_num_kv_heads(self, tp_size):
        return 8


def select(capability, backend=None, mla=False):
    cap = tuple(int(x) for x in capability.split("."))
    torch.cuda.get_device_capability = lambda device=None: cap
    for module in {utils, sys.modules.get("sglang.srt.utils.common")} - {None}:
        for value in vars(module).values():  # sglang caches its capability answers
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()
    cls = server_args.ServerArgs
    args = object.__new__(cls)  # the dataclass defaults, without __post_init__
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING:
            value = field.default
        elif field.default_factory is not dataclasses.MISSING:
            value = field.default_factory()
        else:
            value = None
        setattr(args, field.name, value)
    args.model_path = "stand-in"
    args.attention_backend = backend
    args.get_model_config = ModelConfig
    args.model_config = ModelConfig()
    args.use_mla_backend = lambda: mla
    out = {"utils_is_blackwell": bool(utils.is_blackwell())}
    try:
        cls._handle_attention_backend_compatibility(args)
        out["backend"] = args.attention_backend
    except ValueError as exc:
        out["error"] = str(exc)
    return out


result = {"cases": [select(**case) for case in json.loads(os.environ["CASES"])]}
if "sglang_shims.engine" in sys.modules:
    result["status"] = patch_entry(os.environ["PATCH_ID"])
print(json.dumps(result))
