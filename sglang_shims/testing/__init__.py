"""Test helpers for sglang-shims and for people writing their own patches.

* :mod:`.standin` -- stand-in ``sgl_kernel`` distributions of any published version;
* :mod:`.wheels` -- real sglang wheels from PyPI, downloaded once and cached;
* :mod:`.pytest_plugin` -- pytest fixtures over both (loaded automatically).
"""
