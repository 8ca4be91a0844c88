"""Helpers for the transformers-skew patch tests: another transformers on the path, fake CUDA.

The test environment has sglang 0.5.1's pins (transformers 4.55.2).  A test that needs
transformers 5 puts the published wheels of transformers and of the huggingface_hub and
tokenizers releases it accepts (Requires-Dist) first on the subprocess's ``PYTHONPATH``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import FAKE_CUDA, need, run_python

__all__ = ["COMPANIONS", "FAKE_CUDA", "SINGLE_PROCESS_TP", "TRANSFORMERS5",
           "check_stock_import_fails", "end_with_state", "import_attempt", "reference_file",
           "reference_fixture", "run_applied", "run_json", "run_stock",
           "sglang_on_transformers5", "sglang_paths_fixture", "transformers_paths"]

# transformers release -> the hub and tokenizers wheels that satisfy its Requires-Dist
# (5.24.0: huggingface-hub>=1.31.0,<3.0, tokenizers>=0.23.1,<0.24.0).
# (5.3.0: huggingface-hub>=1.3.0,<2.0, tokenizers>=0.22.0,<=0.23.0; 5.5.0: hub >=1.5.0.)
COMPANIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "5.3.0": (("huggingface_hub", "1.3.0"), ("tokenizers", "0.22.2")),
    "5.5.0": (("huggingface_hub", "1.5.0"), ("tokenizers", "0.22.2")),
    "5.24.0": (("huggingface_hub", "1.33.0"), ("tokenizers", "0.23.3")),
}


def transformers_paths(pypi_release: Callable[[str, str], Path],
                       version: str) -> tuple[Path, ...]:
    """PYTHONPATH entries (first) that make ``import transformers`` give ``version``."""
    extra = COMPANIONS.get(version, ())
    return (pypi_release("transformers", version),
            *(pypi_release(dist, dist_version) for dist, dist_version in extra))


# Test harness only: a one-process tensor-parallel group (gloo) so that sglang's
# parallel layers can be constructed on CPU.
SINGLE_PROCESS_TP = """
import tempfile, types
import sglang.srt.layers.quantization  # sglang 0.5.1 needs this first (own import cycle)
from sglang.srt.distributed import parallel_state as _ps
from sglang.srt.layers import dp_attention as _dp
_ps.init_distributed_environment(
    world_size=1, rank=0, local_rank=0, backend="gloo",
    distributed_init_method="file://" + tempfile.mkdtemp() + "/store")
_ps.initialize_model_parallel(tensor_model_parallel_size=1)
_dp.initialize_dp_attention(
    server_args=types.SimpleNamespace(enable_dp_attention=False, tp_size=1, dp_size=1,
                                      moe_dense_tp_size=None, pp_size=1, device="cpu"),
    model_config=types.SimpleNamespace(hidden_size=256, dtype=torch.float32))
"""


TRANSFORMERS5 = "5.24.0"  # the transformers every tf5 patch test runs sglang on
REFERENCE_TRANSFORMERS = "4.55.2"  # sglang 0.5.1's pin: where reference values come from


def sglang_on_transformers5(sglang_release: Callable[[str], Path],
                            pypi_release: Callable[[str, str], Path],
                            standin_kernel: Callable[..., Path] | None = None,
                            sglang: str = "0.5.1") -> tuple[Path, ...]:
    """PYTHONPATH for one sglang release on transformers 5 (and a stand-in sgl-kernel
    0.3.18, which sglang's layers need, when ``standin_kernel`` is given)."""
    need("torch")
    kernel: tuple[Path, ...] = ()
    if standin_kernel is not None:
        for module in ("fastapi", "zmq"):
            need(module)
        kernel = (standin_kernel("0.3.18"),)
    return (*transformers_paths(pypi_release, TRANSFORMERS5), sglang_release(sglang), *kernel)


def sglang_paths_fixture(*, sglang: str = "0.5.1", kernel: bool = True) -> Any:
    """A test file's module-scoped ``paths`` fixture: sglang ``sglang`` on transformers 5,
    with the stand-in sgl-kernel when ``kernel`` (``paths = sglang_paths_fixture()``)."""

    @pytest.fixture(scope="module")
    def paths(sglang_release: Callable[[str], Path], standin_kernel: Callable[..., Path],
              pypi_release: Callable[[str, str], Path]) -> tuple[Path, ...]:
        return sglang_on_transformers5(sglang_release, pypi_release,
                                       standin_kernel if kernel else None, sglang=sglang)

    return paths


def reference_fixture(code: str, name: str) -> Any:
    """A test file's module-scoped ``reference`` fixture: the file ``code`` saves on
    transformers 4.55.2 (see :func:`reference_file`)."""

    @pytest.fixture(scope="module")
    def reference(tmp_path_factory: pytest.TempPathFactory,
                  pypi_release: Callable[[str, str], Path]) -> Path:
        return reference_file(tmp_path_factory, pypi_release, code, name)

    return reference


def import_attempt(module: str, alias: str = "") -> str:
    """Program lines that import ``module`` (``as alias``): ``result["import"]`` is ``"ok"``
    or the error, and ``alias`` is None after a failure."""
    lines = ["try:", f"    import {module}" + (f" as {alias}" if alias else ""),
             '    result["import"] = "ok"', "except Exception as exc:",
             '    result["import"] = f"{type(exc).__name__}: {exc}"']
    return "\n".join([*lines, f"    {alias} = None"] if alias else lines) + "\n"


def run_json(code: str, paths: tuple[Path, ...], env: dict[str, str] | None = None,
             args: tuple[str, ...] = (), *, activate: bool = True, timeout: float = 600,
             transformers: str | None = TRANSFORMERS5) -> dict[str, Any]:
    """Run ``code`` (under the shims unless ``activate`` is false) on ``paths``; its JSON
    line, checked to come from a process that really had ``transformers`` (its
    ``transformers`` key; None: the caller checks, or the code reports no such key)."""
    result = run_python(code, paths=paths, env=env or {}, timeout=timeout, args=args,
                        activate=activate)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    if transformers is not None:
        assert data["transformers"] == transformers
    return data


def _run_checked(code: str, paths: tuple[Path, ...], patch: str, state: str,
                 reference: Path | None, disable: str,
                 transformers: str | None) -> dict[str, Any]:
    env = {"SGLANG_SHIMS_DISABLE": disable} if disable else {}
    data = run_json(code, paths, env, args=(str(reference),) if reference else (),
                    transformers=transformers)
    assert data["state"] == state, data
    return data


def run_stock(code: str, paths: tuple[Path, ...], patch: str,
              reference: Path | None = None, *,
              transformers: str | None = TRANSFORMERS5) -> dict[str, Any]:
    """Run ``code`` (ending with :func:`end_with_state`) with ``patch`` switched off, and
    the reference file as argv[1] when given; its JSON, checked to say ``disabled`` (and,
    unless ``transformers`` is None, to come from that transformers)."""
    return _run_checked(code, paths, patch, "disabled", reference, patch, transformers)


def run_applied(code: str, paths: tuple[Path, ...], patch: str,
                reference: Path | None = None, disable: str = "", *,
                transformers: str | None = TRANSFORMERS5) -> dict[str, Any]:
    """As :func:`run_stock`, with ``patch`` on (and ``disable`` off); checked ``applied``."""
    return _run_checked(code, paths, patch, "applied", reference, disable, transformers)


def check_stock_import_fails(code: str, paths: tuple[Path, ...], patch: str,
                             reference: Path | None, name: str, module: str) -> None:
    """With ``patch`` off, ``code``'s import (:func:`import_attempt`) fails because
    transformers 5 no longer has ``name`` in ``module``."""
    data = run_stock(code, paths, patch, reference)
    assert data["import"].startswith(f"ImportError: cannot import name {name!r} from {module!r}")


def end_with_state(patch_id: str) -> str:
    """The last lines of a test program: ``result["state"]`` is the patch's state (None
    when the shims are not active in that process), and ``result`` is printed as JSON."""
    return f"""
try:
    import sglang_shims
    result["state"] = sglang_shims.status()[{patch_id!r}]["state"]
except Exception:
    result["state"] = None
print(json.dumps(result))
"""


def reference_file(tmp_path_factory: pytest.TempPathFactory,
                   pypi_release: Callable[[str, str], Path], code: str, name: str) -> Path:
    """Run ``code`` (no shims) on transformers 4.55.2; it saves its values to argv[1]."""
    need("torch")
    out = tmp_path_factory.mktemp(name) / "reference.pt"
    result = run_python(code, paths=(pypi_release("transformers", REFERENCE_TRANSFORMERS),),
                        activate=False, args=(str(out),))
    assert result.returncode == 0, result.stderr[-3000:]
    return out
