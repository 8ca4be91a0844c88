"""What sglang uses each library it pins for, and what a version off the pin is known to break.

The pin check compares every distribution sglang's metadata pins with what is installed;
a mismatch alone says little, so each one it reports carries what this table knows: the
role the library plays in sglang and the break public reports show when it moves under a
pinned sglang, with the report, and the sglang-shims patch that covers the break where one
does.  A library with no break on record is still compared; its row says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import upstream

SGLANG = upstream.SGLANG


@dataclass(frozen=True)
class Neighbour:
    role: str
    """What sglang uses the library for."""
    breaks: str = ""
    """What a version off sglang's pin is known to break; empty when no report shows one."""
    url: str = ""
    """The public report of that break."""
    patch: str = ""
    """The sglang-shims patch that covers the break, where one does."""

    def said(self) -> str:
        """The role and the known break, for a finding's detail."""
        if not self.breaks:
            return f"{self.role}; no break on record for a version off the pin"
        patched = (f"; sglang-shims' patch {self.patch} fixes it where it applies"
                   if self.patch else "")
        return f"{self.role}; known break: {self.breaks} [{self.url}]{patched}"


_FLASHINFER_SET = Neighbour(
    "flashinfer's prebuilt kernels",
    "flashinfer refuses to start when their version differs from flashinfer-python's",
    "https://github.com/flashinfer-ai/flashinfer/issues/4337")

NEIGHBOURS: dict[str, Neighbour] = {
    "torch": Neighbour(
        "the runtime every kernel and extension is built against",
        "a kernel built for another torch minor fails to load (undefined symbol)",
        upstream.TORCH_ABI),
    "sgl-kernel": Neighbour(
        "sglang's CUDA kernels",
        "another kernel release lacks names sglang imports (ImportError at start-up)",
        f"{SGLANG}/issues/8654", "sgl-kernel-missing-symbols"),
    "sglang-kernel": Neighbour(
        "sglang's CUDA kernels",
        "another kernel release lacks names sglang imports (ImportError at start-up)",
        f"{SGLANG}/pull/19241", "sgl-kernel-missing-symbols"),
    "flashinfer-python": Neighbour(
        "attention and sampling kernels",
        "sglang asserts its minimum flashinfer at start-up ('flashinfer_python with minimum "
        "required version ... is not installed')", f"{SGLANG}/issues/6160"),
    "flashinfer-cubin": _FLASHINFER_SET,
    "flashinfer-jit-cache": _FLASHINFER_SET,
    "transformers": Neighbour(
        "model configs, tokenizers and processors",
        "another transformers moves config fields and classes sglang's model code uses "
        "(import errors, or a silent RoPE base change)", f"{SGLANG}/pull/14745",
        "tf5-rope-theta-moved"),
    "triton": Neighbour(
        "sglang's Triton kernels",
        "another triton drops cache helpers sglang imports", f"{SGLANG}/pull/7832",
        "triton-cache-helpers-removed"),
    "xgrammar": Neighbour(
        "structured output (the default grammar backend)",
        "0.1.34 moved to tvm-ffi bindings that refuse the tensor token ids sglang <= 0.5.11 "
        "passes in speculative decoding (TypeError: Mismatched type on argument #1 ... "
        "accept_token)", f"{SGLANG}/issues/24609", "xgrammar-ffi-int-token-ids"),
    "llguidance": Neighbour("structured output (the llguidance grammar backend)"),
    "outlines": Neighbour(
        "structured output (the outlines grammar backend)",
        "0.1.9 moved build_regex_from_schema to outlines_core (ImportError in sglang 0.4.0-"
        "0.4.2.post3's backend); 1.0 has no outlines.fsm at all", f"{SGLANG}/issues/2552",
        "outlines-json-schema-moved"),
    "vllm": Neighbour(
        "layers sglang 0.4.x imports from vllm",
        "a newer vllm pulls outlines past sglang's range", f"{SGLANG}/issues/2552"),
    "tilelang": Neighbour(
        "DeepSeek V3.2 sparse-attention and indexer kernels, and mHC",
        "0.1.7.post1 removed PassConfigKey.TL_DISABLE_FAST_MATH (AttributeError at import on "
        "sglang 0.5.3rc2-0.5.8.post1); 0.1.9 removed T.gemm's wg_wait, which sglang "
        "<= 0.5.14 passes (TypeError when a kernel is built)", f"{SGLANG}/issues/17298",
        "tilelang-fast-math-key-removed"),
    "sgl-deep-gemm": Neighbour(
        "FP8 GEMMs (DeepGEMM, sglang's own build of it)",
        "another DeepGEMM build lacks or changes functions sglang calls (AttributeError: module "
        "'deep_gemm' has no attribute 'get_compile_mode')", f"{SGLANG}/issues/12918",
        "deepgemm-compile-mode-missing"),
    "torchao": Neighbour(
        "torchao quantization (--torchao-config)",
        "a torchao built for another torch skips its C++ extensions ('Skipping import of cpp "
        "extensions due to incompatible torch version'), so its quantized kernels are missing",
        "https://github.com/pytorch/ao/issues/2919"),
    "nvidia-cutlass-dsl": Neighbour(
        "CuTe DSL kernels (flashinfer's cute-dsl MoE, FlashAttention 4)",
        "4.4.0 changed the package's layout; flashinfer's cute-dsl fused MoE breaks on it",
        "https://github.com/flashinfer-ai/flashinfer/issues/2693"),
    "kernels": Neighbour(
        "hub kernels that transformers loads",
        "kernels >= 0.15 requires a revision transformers 5.6-5.8's table lacks (ValueError "
        "at import)", f"{SGLANG}/pull/26704", "kernels-revision-required"),
    "flash-attn-4": Neighbour("FlashAttention 4 (CuTe DSL) attention backend"),
    "quack-kernels": Neighbour("CuTe DSL normalisation and GEMM kernels"),
    "apache-tvm-ffi": Neighbour("the FFI layer of flashinfer, xgrammar and tilelang"),
    "cuda-python": Neighbour("CUDA runtime bindings (host shared memory, cute-dsl kernels)"),
    "torch-memory-saver": Neighbour("--enable-memory-saver (weight and KV-cache offload)"),
    "sgl-deep-ep": Neighbour("expert-parallel all-to-all (DeepEP, sglang's own build)"),
    "sgl-flash-mla": Neighbour("MLA decode kernels (FlashMLA, sglang's own build)"),
    "tokenspeed-mla": Neighbour("MLA attention kernels"),
    "humming-kernels": Neighbour("quantised GEMM kernels"),
    "torchaudio": Neighbour("audio inputs of multimodal models"),
    "torchvision": Neighbour("image inputs of multimodal models"),
    "torchcodec": Neighbour("video and audio decoding"),
}


def neighbour(dist: str) -> Neighbour | None:
    """What the table knows of ``dist`` (a canonical name), if anything."""
    return NEIGHBOURS.get(dist)
