"""What patches use to stand in for ``sgl_kernel`` and for sglang's own JIT kernels.

This is the API the fallback patches import (no patch imports a private module):

* :mod:`.provider` -- :class:`~.provider.Provider` builds the stand-in ``sgl_kernel``
  package and its submodules for one export surface; :func:`~.provider.define_torch_ops`
  defines the ``sgl_kernel::*`` torch ops sglang registers fake kernels for;
* :mod:`.torch_ops` -- our ops as ``torch.ops.<namespace>.*`` under sgl-kernel's schemas;
* :mod:`.scalar_type` -- ``sgl_kernel.scalar_type``'s descriptors;
* :mod:`.device` -- the device queries sgl-kernel exports next to its ops
  (``sgl_kernel.utils.is_arch_support_pdl``);
* :mod:`.sglang_jit` -- stand-ins for sglang's JIT-compiled RoPE and activation kernels,
  and the body the ``sglang-*-fallback`` patches share;
* :mod:`.vllm_ops` -- stand-ins for the compiled vllm ops (norms, gated activations,
  RoPE) that sglang up to 0.4.2.post3 calls through ``vllm._custom_ops`` on CUDA.

Which surface to serve is a fact of the wheels: :mod:`sglang_shims.kernels.surface.exports`.
Nothing is imported here.
"""
