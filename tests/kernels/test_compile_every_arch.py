"""Every fallback kernel compiled for every CUDA architecture and held against its limits.

No GPU: ``tools/gpus/compile_check.py`` calls the wrappers for each architecture of
``benchmarks/arch_limits.toml`` (launches recorded, not run), compiles what they choose
with the installed Triton for that architecture, and checks shared memory, registers and
threads against the architecture's limits.

What each CI run compiles (``--sample ci``): per architecture and kernel, the two largest
launch shapes (tile, then warps, then stages; the option flags set to the heaviest variant),
the largest with programmatic dependent launch where the GPU has it, and the variants the
committed full run found asking the most shared memory and the most registers -- shared
memory does not follow the tile alone (rmsnorm's 16384-wide fp32 row took 64 KiB on sm_61,
the 32768-wide one 8 KiB).  About 600 compiles over the 13 architectures.  Why not all:
the wrappers choose about 700 launch configurations on an sm_90+ GPU (570 below), 2800
compiled variants counting dtypes and divisibility; every configuration on every
architecture took 85 minutes on two loaded cores (2026-12-04).  That full run
(``python -m tools.refresh gpu-compile``) is committed, ``docs/gpus/compile-results.json``,
and is checked here to be the one the current launch rules produce and to fit; ``python -m
tools.refresh --check`` notes when the kernels' code or Triton changed since.  Triton's
cache (keyed by the kernel's source, the options and Triton's version) lives in this test's
folder in the wheel cache, so a run after no kernel change compiles nothing.

Cost, measured 2026-12-05 on a 2-core machine under a load of 11-22 from other jobs (so
CPU time is the figure that carries over), the largest shapes alone (350 compiles, 13
architectures): cold cache 427 CPU-seconds (28 min wall at that load), warm 25 CPU-seconds
(2 min 40 s wall); this whole file with the heaviest variants added (about 600 compiles),
the largest shapes' in the cache and the rest not: 220 CPU-seconds (10 min 25 s wall).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sglang_shims.testing import wheels
from tools.gpus import limits as gl

from ..support.programs import program
from ..support.run import REPO, clean_env, need, run_python

COMMITTED = REPO / "docs" / "gpus" / "compile-results.json"
#: Architectures users run sglang on (the issue's reports: T4 ... RTX 50xx, GB10, B200).
USERS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "sm_121")


def cache() -> Path:
    """This test's Triton cache (compiled kernels, keyed by source and options)."""
    return wheels.cache_dir() / "compile-check"


def limits() -> dict[str, gl.ArchLimits]:
    return gl.load()


def _tool(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    env = clean_env()
    env.pop("TRITON_INTERPRET", None)  # compile for the GPU: the interpreter compiles nothing
    return subprocess.run([sys.executable, "-m", "tools.gpus.compile_check", *args], env=env,
                          cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    need("triton")
    need("torch")
    out = tmp_path_factory.mktemp("compile-check") / "ci.json"
    jobs = str(max(1, min(4, os.cpu_count() or 1)))
    done = _tool("--sample", "ci", "--jobs", jobs, "--cache", str(cache()), "--json", str(out))
    assert out.exists(), done.stderr[-3000:]
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    data["returncode"], data["stdout"] = done.returncode, done.stdout
    return data


def test_limits_have_a_source_for_every_number() -> None:
    found = limits()
    assert set(USERS) <= set(found)
    for name, lim in found.items():
        assert lim.source and lim.example and lim.sm_count > 0, name
        assert lim.threads_per_block == 1024 and lim.regs_per_thread == 255, name
        assert 48 * 1024 <= lim.smem_per_block <= 227 * 1024, name
    assert found["sm_120"].smem_per_block == found["sm_86"].smem_per_block == 101376
    assert found["sm_90"].smem_per_block == 232448
    assert found["sm_75"].smem_per_block == 65536


def committed_triton() -> str:
    """The Triton the committed full run was made with (what CI installs)."""
    return str(json.loads(COMMITTED.read_text(encoding="utf-8"))["triton"])


def older_triton() -> str | None:
    """Why an architecture may be missing here: the installed Triton is older than the
    committed run's (the H200 machine's Triton 3.6 has no ptxas for sm_110, which Triton
    3.8 compiles); None where it is not older."""
    import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
    from packaging.version import Version

    here, there = Version(triton.__version__), Version(committed_triton())
    return f"Triton {here} is older than the committed run's {there}" if here < there else None


def test_every_user_arch_compiles_and_fits(ci_run: dict[str, Any]) -> None:
    """Every required architecture compiles and fits; one the installed Triton cannot
    compile for is excused only where that Triton is older than the committed run's (a
    GPU machine's own Triton), never on CI's."""
    arches = ci_run["arches"]
    for name, lim in limits().items():
        found = arches[name]
        if not lim.required or (not found["supported"] and older_triton()):
            continue
        assert found["supported"], (name, found["reason"])
        assert not found["failures"], (name, found["failures"])
        assert not found["over"], (name, found["over"])
        assert found["compiled"] == found["variants"] > 0, name
    assert ci_run["returncode"] == 0, ci_run["stdout"]


def test_pdl_configurations_compile_where_the_gpu_has_it(ci_run: dict[str, Any]) -> None:
    """PDL configurations are compiled for sm_90+ and only there (launched there since
    2026-12-05: `kernels/runtime.PDL_SHIPPED`)."""
    table = ci_run["variants"]
    for name, lim in limits().items():
        if not ci_run["arches"][name]["supported"] and older_triton():
            continue
        pdl = [vid for vid in ci_run["resources"][name]
               if table[vid]["options"].get("launch_pdl")]
        assert bool(pdl) == (lim.capability >= (9, 0)), name


def test_committed_results_are_what_the_rules_choose_today(ci_run: dict[str, Any]) -> None:
    """The committed full run was made under the launch rules of this tree (a rule that
    chooses anything else changes the digest: rerun the command it names)."""
    committed = json.loads(COMMITTED.read_text(encoding="utf-8"))
    import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]

    if triton.__version__ != committed["triton"]:  # the variants' ids hold Triton's options
        pytest.skip(f"the committed run was made with Triton {committed['triton']}, this is"
                    f" {triton.__version__}: its choices are named in that Triton's terms")
    stale = [name for name, found in ci_run["arches"].items()
             if committed["arches"][name]["configurations"] != found["configurations"]]
    assert not stale, (f"docs/gpus/compile-results.json is stale for {stale}: run python -m"
                       " tools.refresh gpu-compile gpus-page")


def test_committed_results_fit() -> None:
    committed = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert committed["sample"] == "configs"
    for name, lim in limits().items():
        found = committed["arches"][name]
        if lim.required:
            assert found["supported"] and not found["failures"] and not found["over"], name
        assert found["compiled"] == found["variants"] or not lim.required, name


def test_a_planted_oversized_config_fails_on_sm120(tmp_path: Path) -> None:
    """A configuration that fits the H200 but not an RTX 50xx fails the check, on sm_120
    only, naming the kernel and the shared memory it asks for."""
    need("triton")
    out = tmp_path / "planted.json"
    env = {"TRITON_INTERPRET": ""}
    done = run_python(program("kernels/planted_sm120_config"), activate=False, env=env,
                      timeout=900,
                      args=(str(cache()), str(out)))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.json() == 1  # the command fails
    arches = json.loads(out.read_text(encoding="utf-8"))["arches"]
    assert not arches["sm_90"]["over"] and arches["sm_90"]["compiled"] > 0
    over = arches["sm_120"]["over"]
    assert over and {o["kernel"] for o in over} == {"fp8_gemm.block_scaled_mm_kernel"}
    assert all("shared memory" in p and "> 101376 B" in p for o in over for p in o["problems"])


def test_width_classes_and_sm_count_choose_nothing_else() -> None:
    """The enumeration calls one width per class (next power of two, whether it pads by a
    quarter, remainder mod 16): every width of the models adds no variant to that; and the
    SM count in a Device (a product fact, not an architecture one) changes no compiled
    kernel, also where it decides which widths take fp8_scaled_mm's wide tiles."""
    need("triton")
    need("torch")
    done = run_python(program("kernels/width_classes"), activate=False,
                      env={"TRITON_INTERPRET": ""}, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    found = done.json()
    assert isinstance(found, dict)
    assert found["classes"] and found["sm_count"], found
    assert found["mm_classes"] and found["mm_sm_count"] and found["mm_wide"], found
    assert found["widths"][0] > found["widths"][1]


def test_limits_judge_shared_memory_registers_and_threads() -> None:
    sm120 = gl.load()["sm_120"]
    assert gl.problems(gl.Resources(101376, 64, 1024), sm120) == []
    assert gl.problems(gl.Resources(101377, 64, 1024), sm120) == [
        "shared memory 101377 B > 101376 B a block"]
    assert gl.problems(gl.Resources(0, 65, 1024), sm120) == [
        "65 registers x 1024 threads = 66560 > 65536 a block"]
    assert gl.problems(gl.Resources(0, 256, 32), sm120) == ["256 registers a thread > 255"]
    assert gl.problems(gl.Resources(0, 32, 2048), sm120)[0] == "2048 threads > 1024 a block"
