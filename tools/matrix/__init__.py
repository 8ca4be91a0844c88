"""The compatibility matrix: every sglang release on today's stack, stock and with the shims.

``python -m tools.matrix.run`` builds, per release, the environment the release asks for
(its own ``Requires-Dist``, resolved by uv against today's torch) and runs the cells; the
results are committed as data (``tools/matrix/compatibility.json``, with the lock of every
environment in ``locks/``), rendered into ``docs/compatibility.md`` and
``docs/compatibility.svg`` by ``tools.matrix.render``, and, the part it reads, shipped for
``sglang-shims doctor`` (``python -m tools.refresh compatibility-runtime``).  Not collected
by pytest (no ``test_`` files here); ``tests/scripts/test_compatibility_matrix.py`` runs a
sample of it.
"""
