"""Fresh virtual environments, the wheel under test, and a fake sglang to put in them."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .run import REPO, clean_env

FAKE_SGLANG = {
    "sglang/__init__.py": "",
    "sglang/srt/layers/quantization/awq.py":
        "from sgl_kernel import awq_dequantize, fused_marlin_moe\n",
    "sglang/srt/layers/quantization/gptq.py":
        "from sgl_kernel import fused_marlin_moe, gptq_gemm\n",
    "sglang-0.5.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.1\n",
}


PINNED = ("pip", "packaging", "wrapt", "tomli", "importlib-resources", "hatchling")
"""What an install into a test venv may fetch besides the wheel under test: each pinned to
the version this environment has (``PIP_CONSTRAINT``/``UV_CONSTRAINT``), so that a test
venv never resolves against the index of the hour."""


def constraints() -> Path:
    """A constraints file pinning :data:`PINNED` as installed here (written once)."""
    import tempfile
    from importlib import metadata

    path = Path(tempfile.gettempdir()) / f"sglang-shims-test-constraints-{os.getpid()}.txt"
    if not path.exists():
        lines = []
        for dist in PINNED:
            try:
                lines.append(f"{dist}=={metadata.version(dist)}\n")
            except metadata.PackageNotFoundError:
                continue
        path.write_text("".join(lines), encoding="utf-8")
    return path


def sh(*cmd: str | Path, env: dict[str, str] | None = None, check: bool = True,
       timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(env or clean_env())
    for name in ("PIP_CONSTRAINT", "UV_CONSTRAINT"):
        env.setdefault(name, str(constraints()))
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                            env=env, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{cmd} failed:\n{result.stdout}\n{result.stderr}")
    return result


def build_wheel(out: Path) -> Path:
    """Build this checkout's wheel into ``out`` (without build isolation where hatchling is
    installed here, so that no network is needed)."""
    no_isolation = ["--no-build-isolation"] if importlib.util.find_spec("hatchling") else []
    sh(sys.executable, "-m", "pip", "wheel", "--no-deps", *no_isolation, "-q", "-w", out, REPO)
    (found,) = out.glob("sglang_shims-*.whl")
    return found


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


def new_venv(folder: Path) -> Venv:
    """A new venv without pip in the next free ``folder/venv<N>``."""
    root = folder / f"venv{len(list(folder.glob('venv*')))}"
    sh(sys.executable, "-m", "venv", "--without-pip", root)
    return Venv(root)


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
