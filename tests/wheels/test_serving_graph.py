"""sglang 0.5.1's whole serving import graph on today's stack, on CPU, CUDA branches on.

The real sglang 0.5.1 wheel, a stand-in sgl-kernel 0.3.18 (its exact export surface),
torch 2.14.1 and transformers 4.55.2 (and 5.3.0, 5.24.0): every module of the launch
path, the managers, the scheduler, the model runner, the layers and the Llama / Qwen2 /
Qwen3 / Qwen3-MoE model files must import under the shims; with ``SGLANG_SHIMS=0`` the
same imports fail.

The harness only makes sglang believe it runs on CUDA (``torch.cuda.*`` answers for one
H100); every real version skew is fixed by a patch, never here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from ..support.run import need
from ..support.stacks import failed_imports, failed_without_the_shims, import_graph
from ..support.transformers5 import transformers_paths

pytestmark = pytest.mark.wheels

PROGRAM = "serving_graph/with_standin_kernel"


# (sglang, stand-in sgl-kernel, transformers or None for the installed 4.55.2)
STACKS = [("0.5.1", "0.3.18", None), ("0.5.1", "0.3.21", None), ("0.5.1", "0.3.18", "5.24.0"),
          ("0.5.1", "0.3.18", "5.3.0"), ("0.5.5.post3", "0.3.18", None),
          ("0.5.5.post3", "0.3.21", None)]


class Stack(NamedTuple):
    paths: tuple[Path, ...]
    transformers: str | None  # the version put first on the path, if any


def stack_id(stack: tuple[str, str, str | None]) -> str:
    sglang, kernel, transformers = stack
    return f"sglang{sglang}-kernel{kernel}" + (f"-transformers{transformers}" if transformers
                                               else "")


@pytest.fixture(scope="module", params=STACKS, ids=[stack_id(s) for s in STACKS])
def stack(request: pytest.FixtureRequest, sglang_release: Callable[[str], Path],
          standin_kernel: Callable[..., Path],
          pypi_release: Callable[[str, str], Path]) -> Stack:
    for module in ("torch", "transformers", "fastapi", "zmq"):
        need(module)
    from sglang_shims.testing.standin import ops_faked_by

    sglang, kernel, transformers = request.param
    root = sglang_release(sglang)
    newer = transformers_paths(pypi_release, transformers) if transformers else ()
    paths = (*newer, root, standin_kernel(kernel, torch_ops=ops_faked_by(root)))
    return Stack(paths, transformers)


def test_serving_graph_imports_under_the_shims(stack: Stack) -> None:
    result = import_graph(PROGRAM, stack.paths, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    assert data["is_cuda"], "the CUDA branches must be the ones taken"
    assert data["transformers"] == (stack.transformers or "4.55.2")
    failed = failed_imports(data)
    assert failed == {}, json.dumps(failed, indent=1)
    assert data["states"]["sgl-kernel-fused-marlin-moe"] == "applied"


def test_serving_graph_fails_without_the_shims(stack: Stack) -> None:
    failed = failed_without_the_shims(PROGRAM, stack.paths, timeout=600)
    assert failed, "without the shims sglang must not import on this stack"
    assert "sglang.srt.entrypoints.http_server" in failed
