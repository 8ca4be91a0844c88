"""Shared helpers: run Python in a fresh interpreter, and write throw-away patches.

Anything that touches interpreter start-up or the per-process engine runs in a
subprocess: the engine is a per-process singleton, and the tests must see what a
real process sees.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# _ci_skips: under SGLANG_SHIMS_CI=1 a skip whose reason is not on its list is a failure
pytest_plugins = ["sglang_shims.testing.pytest_plugin", "tests._ci_skips"]

# Property tests check behaviour, never speed (speed lives in benchmarks/): no deadline,
# and no failure because a loaded CI machine generated examples slowly.  Same number of
# examples as hypothesis' default.
try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("sglang-shims", deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("sglang-shims")
except ImportError:  # hypothesis is a test extra; its tests skip without it
    pass

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def _private_tmpdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every subprocess of the suite gets this session's temp dir (TMPDIR), so what it puts
    under the temp dir -- the launcher's default report folder, say -- never lands in the
    shared /tmp, where a user's ``sglang-shims status`` would find it."""
    path = tmp_path_factory.mktemp("tmpdir")
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = old
ACTIVATE = "import sglang_shims._bootstrap as _b; _b.activate('test')\n"

# Test harness only: one H100 as far as sglang's import-time checks can tell.  Prepended to
# code run in a subprocess; every real version skew is left for the patches to fix.
FAKE_CUDA = """
import types, torch
_props = types.SimpleNamespace(
    name="NVIDIA H100 80GB HBM3", major=9, minor=0, total_memory=80 << 30,
    multi_processor_count=132, warp_size=32, L2_cache_size=50 << 20,
    max_shared_memory_per_block_optin=232448, gcnArchName="")
torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 1
torch.cuda.current_device = lambda: 0
torch.cuda.get_device_properties = lambda *a, **k: _props
torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
torch.cuda.get_device_name = lambda *a, **k: _props.name
"""


IMPORT_EACH = FAKE_CUDA + """
import importlib, json
results = {}
for name in MODULES:
    try:
        importlib.import_module(name)
        results[name] = "ok"
    except BaseException as exc:
        results[name] = f"{type(exc).__name__}: {exc}"
"""
"""Program start for serving-graph tests: with CUDA faked, import each module of the list
that replaces ``MODULES``; ``results[name]`` is "ok" or the error."""


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment without any SGLANG_SHIMS_* setting or PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SGLANG_SHIMS") and k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> object:
        """The last stdout line, parsed (snippets print one JSON document last)."""
        return json.loads(self.stdout.strip().splitlines()[-1])


SITE_PACKAGES = [p for p in site.getsitepackages() if Path(p).is_dir()]


def run_python(code: str, *, paths: tuple[Path | str, ...] = (), env: dict[str, str] | None = None,
               activate: bool = True, python: str = sys.executable, timeout: float = 120,
               cwd: Path | None = None, args: tuple[str, ...] = ()) -> Result:
    """Run ``code`` in a fresh interpreter with the repo and ``paths`` importable.

    The interpreter runs with ``-S`` and this environment's site-packages appended to
    ``PYTHONPATH``: its dependencies import, but no ``.pth`` file runs, so the result is
    the same whether or not sglang-shims is installed here.  ``activate`` prepends what
    the ``.pth`` line does.
    """
    full_env = clean_env(**(env or {}))
    full_env["PYTHONPATH"] = os.pathsep.join([str(REPO), *map(str, paths), *SITE_PACKAGES])
    source = (ACTIVATE if activate else "") + textwrap.dedent(code)
    proc = subprocess.run([python, "-S", "-c", source, *args], env=full_env, capture_output=True,
                          text=True, timeout=timeout, cwd=cwd or REPO, check=False)
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def py() -> Callable[..., Result]:
    return run_python


def need(module: str) -> None:
    """Skip (with the reason) when the third-party ``module`` is missing -- except in CI,
    where ``.ci/run`` installs it and its absence is a failure.

    Never for our own modules: an ImportError of ``sglang_shims.*`` is a bug, not an
    absence, and must fail wherever it happens.
    """
    import importlib.util

    assert module.partition(".")[0] != "sglang_shims", "need() is for third-party modules"
    if importlib.util.find_spec(module) is None:
        message = f"{module} is not installed (pip install -r tests/requirements/serving.txt)"
        if os.environ.get("SGLANG_SHIMS_CI"):
            pytest.fail(message)
        pytest.skip(message)


def write_package(root: Path, files: dict[str, str]) -> Path:
    """Write ``{"pkg/mod.py": source}`` under ``root``; returns ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def write_patch(root: Path, patch_id: str, manifest: str, code: str | None = None) -> Path:
    """Write ``root/<patch_id>/manifest.toml`` (and ``patch.py``); returns ``root``."""
    folder = root / patch_id
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    os.chmod(folder, 0o755)
    (folder / "manifest.toml").write_text(textwrap.dedent(manifest), encoding="utf-8")
    if code is not None:
        (folder / "patch.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return root


def manifest_text(patch_id: str, target: str, *, extra: str = "", requires: str = "",
                  retire: str = 'installed = ["no-such-dist-xyz"]', when: str = "after",
                  policy: str = "optional", default: str = "on") -> str:
    """A minimal valid manifest; ``extra`` appends more tables."""
    return f"""
id = "{patch_id}"
summary = "test patch {patch_id}"
evidence = ["https://example.org/issue/1"]
default = "{default}"
policy = "{policy}"

[target]
module = "{target}"
when = "{when}"

[requires]
{requires}

[retire]
when = "never in tests"
{retire}
{extra}
"""


# -- fresh virtual environments -------------------------------------------------------------

FAKE_SGLANG = {
    "sglang/__init__.py": "",
    "sglang/srt/layers/quantization/awq.py":
        "from sgl_kernel import awq_dequantize, fused_marlin_moe\n",
    "sglang/srt/layers/quantization/gptq.py":
        "from sgl_kernel import fused_marlin_moe, gptq_gemm\n",
    "sglang-0.5.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.1\n",
}


def sh(*cmd: str | Path, env: dict[str, str] | None = None, check: bool = True,
       timeout: float = 300) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                            env=env or clean_env(), check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{cmd} failed:\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    no_isolation = ["--no-build-isolation"] if _has("hatchling") else []
    sh(sys.executable, "-m", "pip", "wheel", "--no-deps", *no_isolation, "-q", "-w", out, REPO)
    (found,) = out.glob("sglang_shims-*.whl")
    return found


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


class Venv:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.python = root / "bin" / "python"
        out = sh(self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
        self.site = Path(out.stdout.strip())

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return sh(self.python, *args, env=clean_env(**env), check=False)

    def ours(self) -> list[str]:
        return sorted(p.name for p in self.site.iterdir() if "sglang_shims" in p.name)


@pytest.fixture
def make_venv(tmp_path: Path) -> Callable[[], Venv]:
    def make() -> Venv:
        root = tmp_path / f"venv{len(list(tmp_path.glob('venv*')))}"
        sh(sys.executable, "-m", "venv", "--without-pip", root)
        return Venv(root)

    return make


def pip_install(venv: Venv, *args: str | Path) -> None:
    sh(sys.executable, "-m", "pip", "--python", venv.python, "install", "-q",
       "--disable-pip-version-check", *args)


def add_fake_sglang(venv: Venv, kernel: Path) -> None:
    """A stand-in kernel 0.3.18 and a two-file sglang 0.5.1 skeleton, on the venv's path."""
    for src in kernel.iterdir():
        dest = venv.site / src.name
        shutil.copytree(src, dest) if src.is_dir() else shutil.copy(src, dest)
    for rel, text in FAKE_SGLANG.items():
        path = venv.site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


