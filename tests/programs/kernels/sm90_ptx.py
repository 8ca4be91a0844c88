"""Piece: a Triton kernel compiled for sm_90 without a GPU, its PTX text.

``params`` names each argument: a type string (``"*bf16"``, ``"i32"``) for a runtime one,
a value for a constexpr.  ``aligned_pointers``: assume every ``*_ptr`` argument starts on
16 bytes, as Triton does for every tensor torch allocates.  ``options``: launch options
(``{"launch_pdl": True}``)."""
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


def sm90_ptx(kernel, params, aligned_pointers=False, options=None):
    names = [p.name for p in kernel.params]
    signature = {k: ("constexpr" if not isinstance(v, str) else v) for k, v in params.items()}
    constexprs = {(names.index(k),): v for k, v in params.items() if not isinstance(v, str)}
    attrs = ({(i,): [["tt.divisibility", 16]] for i, n in enumerate(names)
              if n.endswith("_ptr")} if aligned_pointers else None)
    source = ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32),
                          options=dict(options or {})).asm["ptx"]
