"""The op families, one subpackage each: ``norm``, ``activation``, ``rope``, ``moe_topk``,
``moe_align`` (with ``moe_sum``), ``moe_gate``, ``fp8_quant`` and ``fp8_gemm``.

Each family is three modules, so that what a reader looks for has one place:

* ``__init__.py`` -- the public ops with sgl-kernel's signatures, their checks and the
  plain-PyTorch path;
* ``triton.py`` -- the ``@triton.jit`` kernels (imported on the first Triton launch only);
* ``launch.py`` -- the launch rules the wrappers follow (block sizes, warps, grids, as
  functions of the shapes, and of the GPU -- ``kernels.device.Device`` -- where it limits
  them) and, for the families ``benchmarks/sweep.py`` tunes, the
  candidate launch parameters it tries.  A rule the sweep finds better is edited there.

Nothing is imported here: :data:`sglang_shims.kernels.OPS` loads a family on first use.
"""
