"""Helpers shared by the test modules: the only modules under ``tests/`` a test may import.

- ``run``: fresh interpreters (``run_python``, ``Result``, ``clean_env``, ``need``);
- ``packages``: throw-away packages and patches on disk, test manifests;
- ``engine``: a real engine in the test's own process, fed an import's loader events (the
  ``seam`` fixture);
- ``programs``: the subprocess programs of ``tests/programs``, by name or by patch, and the
  trees of files tests write beside them;
- ``venvs``: fresh virtual environments and this checkout's wheel;
- ``stacks``: sglang releases, the environments they run in, the serving import graph;
- ``model_forward``: sglang's own models serving a batch, against transformers;
- ``transformers5``: another transformers first on the path;
- ``patch_runs``: running a patch test's program and reading the patch's end state;
- ``doctor``: hermetic machines for the doctor's rules;
- ``ci_skips``: the CI skip policy (a pytest plugin);
- ``scripts``: the project's scripts (examples/, benchmarks/, docs/, a patch's ``patch.py``),
  loaded from their files.
"""
