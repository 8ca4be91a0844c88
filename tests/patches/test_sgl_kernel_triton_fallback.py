"""sgl-kernel-triton-fallback: sglang 0.5.18 and 0.5.23 with no sgl_kernel at all, the
stand-in serves their serving graph; a real sgl_kernel that fails to import is stood in for,
and the cause noted.

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

sgl-kernel >= 0.4 raises one ImportError whose first line is "Could not load any
common_ops library!" and whose later lines name the cause (a CUDA library it cannot open,
an undefined torch symbol).  The engine records the first line as the reason; the patch
adds the cause as a note.  Met on the H200 with sglang-kernel 0.4.5 whose common_ops needs
libcudart.so.12 (``benchmarks/results/e2e-sglang0.5.17-h200-2026-12-01.md``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.programs import program
from ..support.run import need, run_python
from ..support.stacks import (
    LATE_RELEASES,
    failed_imports,
    failed_without_the_shims,
    import_graph,
    late_release_paths,
    model_check,
    overlay_paths,
)

PROGRAM = "serving_graph/no_kernel"


@pytest.fixture(scope="module", params=sorted(LATE_RELEASES))
def release(request: pytest.FixtureRequest,
            pypi_release: Callable[[str, str], Path]) -> tuple[str, tuple[Path, ...]]:
    version: str = request.param
    return version, late_release_paths(pypi_release, version)


@pytest.mark.wheels
def test_serving_graph_imports_with_no_kernel(release: tuple[str, tuple[Path, ...]]) -> None:
    version, paths = release
    result = import_graph(PROGRAM, paths, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    failed = failed_imports(data)
    assert failed == {}, f"sglang {version}: " + json.dumps(failed, indent=1)
    assert "error" not in data, data
    assert data["fallback"] == "sgl_kernel is not installed"
    assert data["state"] == "applied"
    assert data["rmsnorm_op"] is True
    # the dense path's sgl_kernel calls are our kernels, not proxies that raise
    assert data["served"] == dict.fromkeys(("rmsnorm", "fused_add_rmsnorm", "silu_and_mul"),
                                           "function"), data["served"]


@pytest.mark.wheels
def test_serving_graph_fails_without_the_shims(release: tuple[str, tuple[Path, ...]]) -> None:
    version, paths = release
    failed = failed_without_the_shims(PROGRAM, paths, timeout=900)
    assert failed.get("sglang.srt.entrypoints.http_server") == (
        "ModuleNotFoundError: No module named 'sgl_kernel'"), f"sglang {version}: {failed}"


@pytest.mark.wheels
def test_a_pin_older_than_the_export_data_gets_the_oldest_surface() -> None:
    """sglang 0.4.3.post3 pins sgl-kernel==0.0.3.post6, older than the export data (0.0.4
    on): the stand-in serves 0.0.4's surface, which has the RoPE entry point its rotary
    embedding imports and calls, so the matrix's model check passes in the environment the
    release declares (serving the newest surface instead, the import gave a module and the
    first forward "'module' object is not callable")."""
    data = model_check(overlay_paths("0.4.3.post3"))
    assert data["kernel_loaded"] == "fallback"
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is True, model


# -- a real sgl_kernel that fails to import ---------------------------------------------

MESSAGE = ("[sgl_kernel] CRITICAL: Could not load any common_ops library!\\n\\n"
           "GPU Info:\\n- Compute capability: 90\\n\\n"
           "Error details from previous import attempts:\\n"
           "- ImportError: libcudart.so.12: cannot open shared object file: No such file or"
           " directory\\n- ModuleNotFoundError: No module named 'common_ops'\\n")


def broken_kernel(root: Path) -> Path:
    """sgl_kernel 0.4.5 whose import fails the way 0.4.5's loader reports it, and an
    sglang 0.5.17 distribution (metadata only) pinning it."""
    package = root / "sgl_kernel"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f'raise ImportError("{MESSAGE}")\n')
    for dist, version, requires in (("sglang_kernel", "0.4.5", ""),
                                    ("sglang", "0.5.17", "Requires-Dist: sglang-kernel==0.4.5\n")):
        info = root / f"{dist}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist.replace('_', '-')}\nVersion: {version}\n"
            + requires)
    return root


def test_the_cause_of_a_failed_kernel_import_is_noted(tmp_path: Path) -> None:
    need("torch")
    result = run_python(program("patches/sgl_kernel_triton_fallback_broken_kernel"),
                        paths=(broken_kernel(tmp_path),), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    assert data["state"] == "applied"
    assert "Could not load any common_ops library" in data["reason"]
    why = [n for n in data["notes"] if n.startswith("why the installed sgl_kernel")]
    assert why == ["why the installed sgl_kernel did not import: ImportError: libcudart.so.12:"
                   " cannot open shared object file: No such file or directory;"
                   " ModuleNotFoundError: No module named 'common_ops'"], data["notes"]
