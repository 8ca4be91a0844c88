# mypy: disable-error-code="no-untyped-def, untyped-decorator, misc"
"""``@triton.jit`` helpers that the kernels of more than one family call.

Like each family's ``triton.py``, imported only at the first Triton launch.

* :func:`pdl_prologue` -- the start of a kernel that may be launched early (programmatic
  dependent launch, ``norm`` and ``activation``): with ``USE_PDL`` it waits for the kernel
  before it (``gdc_wait``) before touching memory, then lets the next one start
  (``gdc_launch_dependents``), or with ``LATE`` leaves the release to the program's exit
  (``runtime.pdl_options`` decides by the launch's rows).  Without ``USE_PDL`` the branch
  is compiled out: the plain kernel every GPU and the interpreter run.
* :func:`load_router_tile` -- the router logits of ``BLOCK_M`` tokens by every expert, the
  first step of both MoE routers (``moe_topk``, ``moe_gate``).
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]


@triton.jit
def pdl_prologue(USE_PDL: tl.constexpr, LATE: tl.constexpr = False):
    """Wait for the previous kernel, then release the next one (PDL only).  ``LATE``:
    no release here, so the next kernel starts as this one's programs exit (the release
    PDL makes at a program's end when none was made before)."""
    if USE_PDL:
        tl.extra.cuda.gdc_wait()
        if not LATE:
            tl.extra.cuda.gdc_launch_dependents()


@triton.jit
def load_router_tile(ptr, stride, n_rows, n_experts,
                     BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr):
    """This program's rows (int64, for addressing), which of them exist, the expert
    indices, which of them exist, and the ``[BLOCK_M, BLOCK_E]`` tile in fp32 (0 where
    either is out of range)."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n_rows
    rows64 = rows.to(tl.int64)
    e = tl.arange(0, BLOCK_E)
    e_ok = e < n_experts
    x = tl.load(ptr + rows64[:, None] * stride + e[None, :],
                mask=row_ok[:, None] & e_ok[None, :], other=0.0).to(tl.float32)
    return rows64, row_ok, e, e_ok, x
