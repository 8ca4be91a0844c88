"""sglang 0.5.18 and 0.5.23 with no sgl_kernel at all: the stand-in serves their serving graph.

0.5.18 moved much of sglang's kernel code into its own JIT package (``sglang.kernels``), but
every release through 0.5.23 still imports ``sgl_kernel`` at module level on CUDA (layernorm,
activation, the quantization schemes the HTTP server pulls in); its fake kernels for
``sgl_kernel::*`` ops are registered only where the op exists.  Stock, the HTTP server
fails with "No module named 'sgl_kernel'"; with the stand-in the whole graph imports.

CI's environment has sglang 0.5.1's pins, so the published wheels of what these releases
import with other pins go first on the path (the transformers each pins, with a hub and
tokenizers it accepts; flashinfer, xgrammar, apache-tvm-ffi and openai as for 0.5.17).
The sglang wheels are published for CPython 3.12 only; their Python files are what is
imported, so they are fetched for 3.12 on any Python.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.run import Result, need, run_python
from ..support.stacks import IMPORT_EACH
from ..test_serving_graph import SERVING_GRAPH

pytestmark = pytest.mark.wheels

COMMON = (("huggingface_hub", "1.33.0"), ("flashinfer-python", "0.6.15.post1"),
          ("xgrammar", "0.2.1"), ("apache-tvm-ffi", "0.1.15.post2"), ("openai", "2.6.1"))
# {release: its transformers pin and the tokenizers that transformers accepts}
RELEASES = {"0.5.18": (("transformers", "5.12.1"), ("tokenizers", "0.22.2")),
            "0.5.23": (("transformers", "5.19.0"), ("tokenizers", "0.23.2"))}
FOR_PY312 = ("--python-version", "3.12", "--implementation", "cp", "--platform",
             "manylinux_2_34_x86_64")

IMPORT_ALL = IMPORT_EACH + """
out = {"results": {name: text[:500] for name, text in results.items()}}
try:
    import sgl_kernel, sglang_shims, torch
    out["fallback"] = getattr(sgl_kernel, "__sglang_shims_fallback__", None)
    out["state"] = sglang_shims.status()["sgl-kernel-triton-fallback"]["state"]
    out["rmsnorm_op"] = hasattr(torch.ops.sgl_kernel, "rmsnorm")
    out["served"] = {name: type(getattr(sgl_kernel, name)).__name__
                     for name in ("rmsnorm", "fused_add_rmsnorm", "silu_and_mul")}
except BaseException as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"[:500]
print(json.dumps(out))
"""


@pytest.fixture(scope="module", params=sorted(RELEASES))
def release(request: pytest.FixtureRequest,
            pypi_release: Callable[[str, str], Path]) -> tuple[str, tuple[Path, ...]]:
    for module in ("torch", "fastapi", "zmq"):
        need(module)
    from sglang_shims.testing import wheels

    version: str = request.param
    try:
        sglang = wheels.unpack("sglang", version, pip_args=FOR_PY312)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    extra = tuple(pypi_release(d, v) for d, v in (*RELEASES[version], *COMMON))
    return version, (*extra, sglang)


def import_graph(paths: tuple[Path, ...], **env: str) -> Result:
    code = IMPORT_ALL.replace("MODULES", repr(SERVING_GRAPH))
    return run_python(code, paths=paths, env=env, timeout=900)


def test_serving_graph_imports_with_no_kernel(release: tuple[str, tuple[Path, ...]]) -> None:
    version, paths = release
    result = import_graph(paths)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    failed = {k: v for k, v in data["results"].items() if v != "ok"}
    assert failed == {}, f"sglang {version}: " + json.dumps(failed, indent=1)
    assert "error" not in data, data
    assert data["fallback"] == "sgl_kernel is not installed"
    assert data["state"] == "applied"
    assert data["rmsnorm_op"] is True
    # the dense path's sgl_kernel calls are our kernels, not proxies that raise
    assert data["served"] == dict.fromkeys(("rmsnorm", "fused_add_rmsnorm", "silu_and_mul"),
                                           "function"), data["served"]


def test_serving_graph_fails_without_the_shims(release: tuple[str, tuple[Path, ...]]) -> None:
    version, paths = release
    result = import_graph(paths, SGLANG_SHIMS="0")
    data = json.loads(result.stdout.strip().splitlines()[-1])
    failed = {k: v for k, v in data["results"].items() if v != "ok"}
    assert failed.get("sglang.srt.entrypoints.http_server") == (
        "ModuleNotFoundError: No module named 'sgl_kernel'"), f"sglang {version}: {failed}"
