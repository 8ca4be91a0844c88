"""Test helpers for sglang-shims and for people writing their own patches.

* :mod:`.standin` -- stand-in ``sgl_kernel`` distributions of any published version;
* :mod:`.wheels` -- real sglang wheels from PyPI, downloaded once and cached;
* :mod:`.inprocess` -- a real engine in the test's own process, fed an import's loader events;
* :mod:`.pytest_plugin` -- pytest fixtures over these (``shim_patch``, ``standin_kernel``,
  ``sglang_release``, ``pypi_release``), loaded from a ``conftest.py``.
"""
