"""sglang's Triton attention kernels of a published release, called in a fresh interpreter.

Shared by the ``sm120-triton-attention-tiles`` patch's tests and the GPU page's sm_120
comparison (``tools/gpus/sm120_attention.py``): the real ``prefill_attention.py`` /
``extend_attention.py`` of a release in a small tree with a stand-in ``sglang.srt.utils``
and the wheel's metadata, ``torch.cuda`` told it has a GPU of some capability, the real
``context_attention_fwd`` / ``extend_attention_fwd`` called on CPU tensors and each launch
recorded (and, asked to, compiled for that GPU with ``triton.compile``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sglang_shims.testing import wheels

from .patch_runs import run_json
from .programs import program
from .run import need

PATCH = "sm120-triton-attention-tiles"
LIMIT = 101376          # bytes of shared memory per block on sm_120 / sm_121
HOMES = ("sglang/srt/layers/attention/triton_ops", "sglang/kernels/ops/attention")

# (Lq, Lv) head dims: Llama-like, DeepSeek MHA prefill (128 + 64 rope), Gemma (256),
# DeepSeek/Kimi MLA absorbed (512 + 64 rope, v 512).
EXTEND_DIMS = ((128, 128), (192, 128), (256, 256), (576, 512))
PREFILL_DIMS = (64, 128, 256)

# One release per distinct tile-selection code (see the manifest's [range]).
RELEASES = ("0.4.0", "0.4.4.post2", "0.5.4", "0.5.8.post1", "0.5.9", "0.5.16", "0.5.23")
# Compiled kernels are cached next to the wheels (keyed by source, options and Triton).
TRITON_CACHE = wheels.cache_dir() / "triton-cache"


def release_key(version: str) -> tuple[int, ...]:
    """``0.5.8.post1`` -> ``(0, 5, 8, 1)``: releases compared as numbers."""
    return tuple(int(p) for p in version.replace("post", "").split(".") if p.isdigit())


def extend_tested(version: str) -> bool:
    """extend_attention.py imports only prefill_attention and sglang.srt.utils before
    0.5.15; later it needs more of sglang, and it handles sm_12x itself since 0.5.9."""
    return release_key(version) < (0, 5, 15)


HARNESS = program("patches/sm120_triton_attention_tiles/harness")


def module_names(release: Path, version: str) -> list[str]:
    names = []
    for home in HOMES:
        for kernel in ("prefill_attention", "extend_attention"):
            if (release / home / f"{kernel}.py").is_file():
                if kernel == "extend_attention" and not extend_tested(version):
                    continue
                names.append(home.replace("/", ".") + "." + kernel)
    return names


def build_tree(release: Path, version: str, dest: Path, fake_triton: bool) -> Path:
    """Real kernels + real metadata of ``release``, stand-in utils (and triton)."""
    if dest.exists():
        return dest
    for home in HOMES:
        source = release / home
        for kernel in ("prefill_attention", "extend_attention"):
            if (source / f"{kernel}.py").is_file():
                target = dest / home
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy(source / f"{kernel}.py", target / f"{kernel}.py")
                rel = Path(home)
                for parent in (rel, *rel.parents):
                    init = dest / parent / "__init__.py"
                    if parent != Path() and not init.exists():
                        init.write_text("")
    (dest / "sglang" / "srt").mkdir(parents=True, exist_ok=True)
    (dest / "sglang" / "srt" / "__init__.py").write_text("")
    (dest / "sglang" / "srt" / "utils.py").write_text(
        program("patches/sm120_triton_attention_tiles/tree/sglang_srt_utils"))
    (dest / "sglang" / "__init__.py").write_text("")
    (info,) = release.glob("sglang-*.dist-info")
    (dest / info.name).mkdir()
    shutil.copy(info / "METADATA", dest / info.name / "METADATA")
    if fake_triton:
        (dest / "triton").mkdir()
        (dest / "triton" / "__init__.py").write_text(
            program("patches/sm120_triton_attention_tiles/tree/triton_init"))
        (dest / "triton" / "language.py").write_text(
            program("patches/sm120_triton_attention_tiles/tree/triton_language"))
    return dest


def run(folder: Path, modules: list[str], capability: str, *, stock: bool = False,
        compile_: bool = False, prefill_dims: tuple[int, ...] = PREFILL_DIMS,
        extend_dims: tuple[tuple[int, int], ...] = EXTEND_DIMS, **extra: str
        ) -> dict[str, object]:
    need("torch")  # the harness imports it: a named skip, a failure in CI
    env = {"FAKE_CAPABILITY": capability, "SGLANG_SHIMS_GPU_CAPABILITY": capability,
           "MODULES": json.dumps(modules), "PREFILL_DIMS": json.dumps(prefill_dims),
           "EXTEND_DIMS": json.dumps(extend_dims), "TRITON_CACHE_DIR": str(TRITON_CACHE),
           "PATCH_ID": PATCH,
           **extra}
    if stock:
        env["STOCK"] = "1"
    if compile_:
        env["COMPILE"] = "1"
    # PRE_IMPORT: the modules are imported before the shims exist (install() comes later)
    activate = not stock and "PRE_IMPORT" not in extra
    return run_json(HARNESS, (folder,), env, activate=activate)
