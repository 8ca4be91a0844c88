"""Rules on torch's CUDA memory allocator settings and the tools that rely on them."""

from __future__ import annotations

from ..facts import Facts
from ..finding import Finding, Level
from ..version_text import version_in
from ._common import Rule, verdict


def _alloc_conf(facts: Facts) -> Finding | None:
    new = facts.environ.get("PYTORCH_ALLOC_CONF", "").strip()
    old = facts.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").strip()
    torch = facts.version("torch")
    if new and old and new != old:
        return verdict(
            Level.WARN, f"PYTORCH_ALLOC_CONF={new!r} and PYTORCH_CUDA_ALLOC_CONF={old!r} differ; "
            "which one torch uses depends on its version (torch 2.9.1 reads only "
            "PYTORCH_CUDA_ALLOC_CONF for CUDA)",
            f"set both to the same value, e.g. export PYTORCH_CUDA_ALLOC_CONF={new!r}")
    if new and not old and version_in(torch, "<2.10"):
        ignored = (f"only PYTORCH_ALLOC_CONF={new!r} is set; torch {torch}, older than 2.10 "
                   "ignores it for CUDA (confirmed for 2.9.1), so e.g. expandable_segments "
                   "is silently off")
        return verdict(Level.WARN, ignored, f"export PYTORCH_CUDA_ALLOC_CONF={new!r} as well")
    return None


def _memory_saver_expandable(facts: Facts) -> Finding | None:
    saver = facts.version("torch-memory-saver")
    conf = " ".join(facts.environ.get(v, "") for v in ("PYTORCH_ALLOC_CONF",
                                                        "PYTORCH_CUDA_ALLOC_CONF"))
    if not saver or "expandable_segments:true" not in conf.replace(" ", "").lower():
        return None
    return verdict(
        Level.WARN, f"torch-memory-saver {saver} is installed and expandable_segments:True is "
        "set: with sglang --enable-memory-saver, pause() then releases nothing",
        "unset expandable_segments for runs that use --enable-memory-saver")


RULES: tuple[Rule, ...] = (
    Rule("alloc-conf-env-rename", "https://github.com/pytorch/pytorch/issues/183387",
         "PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF differ, or only the new one with "
         "torch <2.10", _alloc_conf),
    Rule("memory-saver-vs-expandable", "https://github.com/fzyzcjy/torch_memory_saver/issues/24",
         "torch-memory-saver installed with expandable_segments:True", _memory_saver_expandable),
)
