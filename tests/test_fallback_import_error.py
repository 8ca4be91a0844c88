"""A real sgl_kernel that fails to import: the fallback stands in and says why.

sgl-kernel >= 0.4 raises one ImportError whose first line is "Could not load any
common_ops library!" and whose later lines name the cause (a CUDA library it cannot open,
an undefined torch symbol).  The engine records the first line as the reason; the patch
adds the cause as a note.  Met on the H200 with sglang-kernel 0.4.5 whose common_ops needs
libcudart.so.12 (``benchmarks/results/e2e-sglang0.5.17-h200-2026-12-01.md``).
"""

from __future__ import annotations

import json
from pathlib import Path

from .support.run import need, run_python

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
    code = """
import json, sgl_kernel, sglang_shims
record = sglang_shims.status()["sgl-kernel-triton-fallback"]
print(json.dumps({"state": record["state"], "reason": record["reason"],
                  "notes": record.get("notes", []),
                  "fallback": getattr(sgl_kernel, "__sglang_shims_fallback__", None)}))
"""
    result = run_python(code, paths=(broken_kernel(tmp_path),), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["state"] == "applied"
    assert "Could not load any common_ops library" in data["reason"]
    why = [n for n in data["notes"] if n.startswith("why the installed sgl_kernel")]
    assert why == ["why the installed sgl_kernel did not import: ImportError: libcudart.so.12:"
                   " cannot open shared object file: No such file or directory;"
                   " ModuleNotFoundError: No module named 'common_ops'"], data["notes"]
