"""sglang releases and the environments they run in, and sglang's serving import graph.

Loaded as a plugin by ``tests/conftest.py`` (its fixtures are everyone's); the helpers are
imported by the tests that need them.  Wheels come from the cache of
:mod:`sglang_shims.testing.wheels` through the ``sglang_release``/``pypi_release`` fixtures.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .programs import assemble, program
from .run import Result, need, run_python

# the modules of sglang's serving path, its managers, layers and model files, in the order
# a server imports them
SERVING_GRAPH = [
    "sglang.launch_server",
    "sglang.srt.entrypoints.http_server",
    "sglang.srt.entrypoints.engine",
    "sglang.srt.managers.tokenizer_manager",
    "sglang.srt.managers.detokenizer_manager",
    "sglang.srt.managers.scheduler",
    "sglang.srt.model_executor.model_runner",
    "sglang.srt.layers.layernorm",
    "sglang.srt.layers.activation",
    "sglang.srt.layers.rotary_embedding",
    "sglang.srt.layers.sampler",
    "sglang.srt.layers.quantization.awq",
    "sglang.srt.layers.quantization.gptq",
    "sglang.srt.layers.moe.topk",
    "sglang.srt.layers.attention.triton_backend",
    "sglang.srt.models.llama",
    "sglang.srt.models.qwen2",
    "sglang.srt.models.qwen3",
    "sglang.srt.models.qwen3_moe",
]

# The sglang wheels from 0.5.17 on are published for CPython 3.12 only; their Python files
# are what the tests import, so they are fetched for 3.12 on any Python.
FOR_PY312 = ("--python-version", "3.12", "--implementation", "cp", "--platform",
             "manylinux_2_34_x86_64")
# 0.5.17's own pins where CI's environment (0.5.1's) differs, and what it adds: its
# transformers with a hub and tokenizers it accepts, flashinfer (imported on CUDA by
# layers/quantization/fp8_utils.py), xgrammar with apache-tvm-ffi, and openai
PINS_0517 = (("transformers", "5.12.1"), ("huggingface_hub", "1.33.0"),
             ("tokenizers", "0.22.2"), ("flashinfer-python", "0.6.15.post1"),
             ("xgrammar", "0.2.1"), ("apache-tvm-ffi", "0.1.15.post2"), ("openai", "2.6.1"))
# 0.5.18 and 0.5.23: what they share with 0.5.17's environment, and {release: its
# transformers pin and the tokenizers that transformers accepts}
LATE_COMMON = (("huggingface_hub", "1.33.0"), ("flashinfer-python", "0.6.15.post1"),
               ("xgrammar", "0.2.1"), ("apache-tvm-ffi", "0.1.15.post2"), ("openai", "2.6.1"))
LATE_RELEASES = {"0.5.18": (("transformers", "5.12.1"), ("tokenizers", "0.22.2")),
                 "0.5.23": (("transformers", "5.19.0"), ("tokenizers", "0.23.2"))}


def unpack_py312(version: str) -> Path:
    """The unpacked sglang ``version`` wheel for CPython 3.12 (see FOR_PY312)."""
    from sglang_shims.testing import wheels

    try:
        return wheels.unpack("sglang", version, pip_args=FOR_PY312)
    except RuntimeError as exc:
        pytest.fail(str(exc))


def no_kernel_paths(pypi_release: Callable[[str, str], Path],
                    version: str = "0.5.17") -> tuple[Path, ...]:
    """PYTHONPATH entries for sglang 0.5.17 with no kernel on CI's environment: its own
    pins first, then the wheel.  Another ``version`` gets the same environment (0.5.13's
    models run on it, rather than resolve and install 0.5.13's own 1.7 GB one)."""
    for module in ("torch", "fastapi", "zmq"):
        need(module)
    return (*(pypi_release(dist, pin) for dist, pin in PINS_0517), unpack_py312(version))


def late_release_paths(pypi_release: Callable[[str, str], Path],
                       version: str) -> tuple[Path, ...]:
    """PYTHONPATH entries for sglang 0.5.18 or 0.5.23 with no kernel (LATE_RELEASES)."""
    for module in ("torch", "fastapi", "zmq"):
        need(module)
    extra = tuple(pypi_release(d, v) for d, v in (*LATE_RELEASES[version], *LATE_COMMON))
    return (*extra, unpack_py312(version))


def overlay_paths(release: str) -> tuple[Path, ...]:
    """The release's own environment as the compatibility matrix built it (its declared
    dependencies in an overlay first, then the wheel); needs ``uv``."""
    for module in ("torch", "transformers", "fastapi", "zmq", "uv"):
        need(module)
    from sglang_shims.testing import wheels

    root = wheels.unpack("sglang", release)
    return (locked_overlay(release, root, None) / "site", root)


def locked_overlay(release: str, root: Path, transformers: str | None) -> Path:
    """The overlay of ``release`` installed from the lock the matrix recorded (nothing is
    resolved against today's index); a file the index does not serve skips the test."""
    from sglang_shims.testing import wheels
    from tools.matrix import run

    try:
        return run.overlay(release, root, transformers, locked=True)
    except RuntimeError as exc:
        if wheels.not_served(str(exc)):
            pytest.skip(f"the package index could not serve a locked package of {release}:"
                        f" {str(exc)[-300:]}")
        raise


def model_check(paths: tuple[Path, ...], **env: str) -> dict[str, object]:
    """One compatibility-matrix cell's model check on ``paths`` (with the shims, CUDA
    faked, our kernels' PyTorch path): its JSON, from ``tools/matrix/probe.py``."""
    from tools.matrix import run

    result = run_python(program("fake_cuda") + assemble(run.PROBE),
                        paths=paths, timeout=900,
                        env={"MATRIX_MODEL": "1", "SGLANG_SHIMS_KERNEL_BACKEND": "torch", **env},
                        fork=True)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    return data


def import_graph(name: str, paths: tuple[Path, ...], *, timeout: float, **env: str) -> Result:
    """Run the serving-graph program ``tests/programs/<name>.py`` over SERVING_GRAPH."""
    return run_python(program(name), paths=paths, env=env, timeout=timeout,
                      args=tuple(SERVING_GRAPH), fork=True)


def failed_imports(data: object) -> dict[str, str]:
    """{module: error} for each module of a serving-graph program's JSON that failed."""
    assert isinstance(data, dict)
    return {k: v for k, v in data["results"].items() if v != "ok"}


def failed_without_the_shims(name: str, paths: tuple[Path, ...], *,
                             timeout: float) -> dict[str, str]:
    """The modules of the serving graph that fail to import with ``SGLANG_SHIMS=0``."""
    return failed_imports(import_graph(name, paths, timeout=timeout, SGLANG_SHIMS="0").json())


IMPORT_EACH = program("fake_cuda") + program("import_each") + \
    "import json\nresults = import_each(MODULES)\n"
"""For a program still kept as a string: with CUDA faked, import each module of the list
literal that replaces ``MODULES``; ``results[name]`` is "ok" or the error."""


@pytest.fixture(scope="module")
def sglang051(sglang_release: Callable[[str], Path]) -> Path:
    """The unpacked sglang 0.5.1 wheel (the release CI's environment pins)."""
    return sglang_release("0.5.1")


@pytest.fixture(scope="module")
def sglang0513(pypi_release: Callable[[str, str], Path]) -> tuple[Path, ...]:
    """sglang 0.5.13 with no kernel, on 0.5.17's environment (see no_kernel_paths)."""
    need("transformers")
    return no_kernel_paths(pypi_release, "0.5.13")


@pytest.fixture(scope="module")
def sglang0517(pypi_release: Callable[[str, str], Path]) -> tuple[Path, ...]:
    """sglang 0.5.17 with no kernel, on its own pins (see no_kernel_paths)."""
    need("transformers")
    return no_kernel_paths(pypi_release)
