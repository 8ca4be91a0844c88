"""Doctor rule: the kernel names the installed sglang imports and the installed kernel
lacks, and who serves each of them under sglang-shims (the hybrid tier).

Read from data alone (the names every sglang release imports, every kernel's export
list), so it needs neither a GPU nor an importable kernel, and it gives the table the
patch ``sgl-kernel-missing-symbols`` builds at run time from the live module.
"""

from __future__ import annotations

from ...kernels import hybrid, symbols
from .facts import Facts

PATCH = "sgl-kernel-missing-symbols"


def kernel_ops(facts: Facts) -> tuple[str, str, str] | None:
    """(level, detail, remedy) when some name is not served by the real kernel."""
    sglang, kernel = facts.version("sglang"), facts.kernel()
    if not sglang or kernel is None:
        return None
    needs = symbols.needed(sglang)
    exported = hybrid.exported_by_data(kernel[1])
    if needs is None or exported is None:
        return None
    owned = symbols.deferred(kernel[1])
    routes = hybrid.plan((n for n in needs if n not in exported and n not in owned), exported)
    if not routes:
        return None
    from .rules import _patch_on

    pin = symbols.pinned(sglang)
    install = f"pip install '{pin}' (the build for your torch)" if pin else \
        "install the kernel version your sglang pins"
    listed = "; ".join(f"{name}: {chosen.label()}" for name, chosen in routes.items())
    head = (f"sglang {sglang} imports {len(routes)} name(s) from sgl_kernel that"
            f" {kernel[0]} {kernel[1]} does not export")
    on, why = _patch_on(facts, PATCH)
    if not on:
        return ("fail", f"{head} ({', '.join(routes)}): importing sglang fails with"
                f" ImportError; the patch {PATCH} is off ({why})",
                f"SGLANG_SHIMS_ENABLE={PATCH}, or {install}")
    unserved = [n for n, r in routes.items() if r.provider == hybrid.NONE]
    detail = (f"{head}; with sglang-shims ({PATCH} on: {why}) the real kernel serves every"
              f" other op, and these: {listed}")
    if unserved:
        return ("warn", detail + "; a model that calls a 'none' op fails at that call",
                f"for those ops: {install}")
    return ("info", detail, "")
