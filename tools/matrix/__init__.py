"""The compatibility matrix: every sglang release on today's stack, stock and with the shims.

``python -m tools.matrix.run`` builds, per release, the environment the release asks for
(its own ``Requires-Dist``, resolved by uv against today's torch) and runs the cells; the
results are committed as data (``sglang_shims/cli/doctor/compatibility.json``), rendered
into ``docs/compatibility.md`` and ``docs/compatibility.svg`` by ``tools.matrix.render``,
and read by ``sglang-shims doctor``.  Not collected by pytest (no ``test_`` files here);
``tests/scripts/test_compatibility_matrix.py`` runs a sample of it.
"""
