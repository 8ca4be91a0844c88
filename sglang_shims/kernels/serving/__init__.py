"""Plans built on the facts of :mod:`sglang_shims.kernels.surface`, for a process or a doctor.

* :mod:`.hybrid` -- who serves each ``sgl_kernel`` name sglang imports: the real kernel,
  an adapter, ours or none;
* :mod:`.model_ops` -- which ``sgl_kernel`` ops a model's forward reaches, from its
  ``config.json``, and who serves each in a live process;
* :mod:`.serving_model` -- the verdict for the model a server actually loads, recorded in
  the acting patch's details.
"""
