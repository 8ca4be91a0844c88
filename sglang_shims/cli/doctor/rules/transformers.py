"""Rules on transformers (and the ``kernels`` hub package it loads): config classes
sglang registers twice, a config field that moved, a hub table that changed."""

from __future__ import annotations

from ..facts import Facts
from ..finding import Finding, Level
from ..requires import sglang_pins
from ..version_text import version_in
from ._common import Rule, patch_on, unless_patched, verdict

_QWEN_VL_HELPER = "tf449-mllama-valid-images-removed"
_QWEN_VL_REGISTER = "tf449-qwen2-5-vl-register-collision"


def _config_register(facts: Facts) -> Finding | None:
    """Gated by the register patch's range (sglang 0.4.3.post1-0.4.4.post1, transformers
    >= 4.49); the first two of those releases also import the mllama helper 4.49 removed,
    which fails first (read in the wheels), so both patches are needed there."""
    sglang, tf = facts.version("sglang"), facts.version("transformers")
    collision = (f"registers its own Qwen2_5_VLConfig with AutoImageProcessor at import; "
                 f"transformers {tf} ships Qwen2.5-VL, so import fails with \"ValueError: "
                 "'<class ...Qwen2_5_VLConfig'>' is already used by a Transformers model\"")
    if version_in(sglang, "<0.4.3.post3"):
        detail = (f"sglang {sglang} imports is_valid_list_of_images from transformers' mllama "
                  f"image processor, which transformers {tf} removed (4.49.0), so import "
                  "sglang.srt.configs fails first with \"ImportError: cannot import name "
                  "'is_valid_list_of_images' from "
                  "'transformers.models.mllama.image_processing_mllama'\"; past that it "
                  + collision)
        needed: tuple[str, ...] = (_QWEN_VL_HELPER, _QWEN_VL_REGISTER)
    else:
        detail, needed = f"sglang {sglang} {collision}", (_QWEN_VL_REGISTER,)
    remedy = ("pip install 'transformers==4.48.3' (what this sglang pins), or upgrade sglang "
              "to >= 0.4.4.post2")
    toggles = {patch: patch_on(facts, patch) for patch in needed}
    off = [f"{patch} ({why})" for patch, (on, why) in toggles.items() if not on]
    if off:
        return verdict(
            Level.FAIL, f"{detail}; sglang-shims' patch {', '.join(off)} is off",
            f"turn the patch on (SGLANG_SHIMS_ENABLE={','.join(needed)}); {remedy}")
    does = ("puts the helper back and registers sglang's classes with exist_ok"
            if len(needed) == 2 else "registers sglang's classes with exist_ok")
    return verdict(Level.WARN, f"{detail}; sglang-shims' patch {' and '.join(needed)} (on) {does}",
                   remedy)


def _qwen3_asr_register(facts: Facts) -> Finding | None:
    sglang, tf = facts.version("sglang"), facts.version("transformers")
    on, why = patch_on(facts, "tf-config-register-collision")
    state = (f"sglang-shims' patch tf-config-register-collision (on: {why}) registers it with "
             "exist_ok" if on else f"the patch tf-config-register-collision is off ({why})")
    return verdict(
        Level.WARN if on else Level.FAIL,
        f"sglang {sglang} registers 'qwen3_asr' with AutoConfig without "
        f"exist_ok; transformers {tf} ships that model type (from 5.13.0), so import "
        "fails with \"ValueError: 'qwen3_asr' is already used by a Transformers config\" "
        f"(read in the wheels: sglang 0.5.11-0.5.19 register it, 0.5.20 passes exist_ok); "
        f"{state}",
        "pip install 'transformers<5.13' (this sglang pins 5.12.1 or older), or upgrade "
        "sglang to >= 0.5.20")


def _rope_theta(facts: Facts) -> Finding | None:
    sglang, tf = facts.version("sglang"), facts.version("transformers")
    pinned = next((p.spec for p in sglang_pins(facts.requires.get("sglang", []),
                                                ("transformers",)) if p.default), "")
    target = pinned if pinned and not version_in(pinned.lstrip("="), ">=5.0.0rc0") else "==4.57.1"
    unpatched = verdict(
        Level.FAIL, f"sglang {sglang} reads config.rope_theta with a default (getattr(config, "
        "'rope_theta', 10000) in llama.py, qwen3.py and ~50 other models); transformers "
        f"{tf} moves rope_theta into config.rope_parameters, so the default is used silently "
        "and outputs are wrong for every model whose RoPE base is not the default. The helper"
        " from PR #14745 (handle_rope_parameters) is in no published wheel; 0.5.10rc0 is the "
        "first release that reads config.rope_parameters (checked: sglang 0.5.3rc0-0.5.11 "
        "and 0.5.23 wheels)",
        f"pip install 'transformers{target}', or upgrade sglang to >= 0.5.10")
    return unless_patched(facts, "tf5-rope-theta-moved", unpatched,
                           "reads the RoPE base from config.rope_parameters")


def _kernels_hub(facts: Facts) -> Finding | None:
    kernels, tf = facts.version("kernels"), facts.version("transformers")
    unpatched = verdict(
        Level.FAIL, f"kernels {kernels} with transformers {tf}: importing "
        "transformers.models.llama.modeling_llama raises \"ValueError: Either a revision or a "
        "version must be specified.\" (transformers/integrations/hub_kernels.py), and sglang "
        "imports it while starting",
        "pip install 'kernels<0.15' (sglang's own pin since PR #26704), or pip uninstall -y "
        "kernels if nothing else needs it")
    return unless_patched(facts, "kernels-revision-required", unpatched,
                           "resolves the hub-kernel table as kernels 0.14.1 did, in sglang"
                           " processes only")


RULES: tuple[Rule, ...] = (
    Rule("tf-qwen2-5-vl-config-register", "https://github.com/sgl-project/sglang/issues/4629",
         "", _config_register, patch=_QWEN_VL_REGISTER),
    Rule("tf-config-register-collision", "https://github.com/sgl-project/sglang/issues/38183",
         "", _qwen3_asr_register, patch="tf-config-register-collision"),
    Rule("tf5-rope-theta-moved", "https://github.com/sgl-project/sglang/pull/14745",
         "", _rope_theta, patch="tf5-rope-theta-moved"),
    Rule("tf-kernels-hub-revision", "https://github.com/sgl-project/sglang/pull/26704",
         "", _kernels_hub, patch="kernels-revision-required",
         when=(("kernels", ">=0.15.1"), ("transformers", "<5.13.0")),
         wider="the break is between kernels and transformers: any program that imports a "
               "transformers modeling file meets it, with or without sglang; the patch acts "
               "only where sglang (>= 0.4.0) is installed"),
)
