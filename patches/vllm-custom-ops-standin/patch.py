"""Stand in for vllm's compiled norm, activation and RoPE ops where its ``_C`` did not load.

sglang up to 0.4.2.post3 reach these ops on CUDA through ``vllm._custom_ops``, whose
functions forward to ``torch.ops._C``.  The vllm those releases pin ships a ``_C`` built
for an older torch and CUDA runtime; on today's torch its import fails, vllm only logs a
warning, and the first forward pass stops at the missing op.  Only the functions whose op
is missing here are replaced (:func:`vllm_ops.unloaded`): a vllm whose ``_C`` loads keeps
its own kernels, and the patch retires.  Each replacement takes exactly the parameters of
the function it replaces (``sglang_jit.replacements`` checks), so every caller binds as
before.
"""

from __future__ import annotations

from sglang_shims.patching import PatchContext


def apply(ctx: PatchContext) -> None:
    from sglang_shims.kernels.standin import sglang_jit, vllm_ops

    missing = vllm_ops.unloaded(tuple(vllm_ops.OPS))
    if not missing:
        ctx.retire("vllm's compiled ops are registered (torch.ops._C has them): vllm's own "
                   "kernels are used")
    table = {name: vllm_ops.OPS[name] for name in missing}
    for name, func in sglang_jit.replacements(ctx.module, table).items():
        ctx.setattr(ctx.module, name, func)
    ctx.note("torch.ops._C lacks " + ", ".join(missing)
             + " (vllm's _C did not load): the fallback's kernels serve them")
