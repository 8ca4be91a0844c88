"""Facts read from the published wheels, and the only reader of the files holding them.

* :mod:`.exports` -- every sgl-kernel release's export surface (``data/
  sgl_kernel_exports.json``): the names it binds, the release to serve for an sglang pin;
* :mod:`.symbols` -- the ``sgl_kernel`` names each sglang release imports unguarded, and
  the kernel versions that export them (``data/sgl_kernel_symbols.json``);
* :mod:`.opset` -- the MoE and FP8 ``sgl_kernel`` ops each sglang release calls
  (``data/moe_fp8_ops.json``).

The files are regenerated from the wheels by the scripts in the repository's ``tools/``
folder; nothing here reaches the network.  Everything else reads them through these
modules, never by path.
"""
