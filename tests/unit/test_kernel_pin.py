"""Which kernel release's export surface the fallback serves, from the installed sglang's
requirements: an exact pin, or for a floor on the old name (sglang 0.4.1-0.4.3.post4) the
newest release still published as sgl-kernel.  Each case in a fresh interpreter with an
sglang dist-info that says only that."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from sglang_shims.kernels.surface import exports

from ..support.packages import write_package
from ..support.run import run_python

CODE = """
import json
from sglang_shims.kernels.surface.exports import sglang_kernel_pin
print(json.dumps(sglang_kernel_pin()))
"""
LAST_OLD_NAME = str(max(Version(v) for v in exports.versions()
                       if "+" not in v and Version(v) < Version("0.4.0")))


@pytest.mark.parametrize(("requires", "expected"), [
    (['sgl-kernel==0.3.5; extra == "srt"'], "0.3.5"),          # 0.5.1: the pin itself
    (["sglang-kernel==0.4.1"], "0.4.1"),                      # 0.5.10: the new name
    (['sgl-kernel>=0.0.3.post6; extra == "srt"'], "floor"),   # 0.4.3.post2: what pip gives
    ([], None),                                               # 0.4.0: no kernel at all
])
def test_pin(tmp_path: Path, requires: list[str], expected: str | None) -> None:
    lines = "".join(f"Requires-Dist: {r}\n" for r in requires)
    meta = f"Metadata-Version: 2.1\nName: sglang\nVersion: 0.0.0\n{lines}"
    root = write_package(tmp_path, {"sglang-0.0.0.dist-info/METADATA": meta})
    result = run_python(CODE, paths=(root,), activate=False)
    assert result.returncode == 0, result.stderr
    got = result.json()
    if expected == "floor":
        # the newest known sgl-kernel (before the rename), which exports the RoPE entry
        # point sglang 0.4.2.post2-0.4.3.post4 import from it
        assert got == LAST_OLD_NAME
        assert "apply_rope_with_cos_sin_cache_inplace" in exports.exported(got, "sgl_kernel")
    else:
        assert got == expected


def test_the_surface_served_for_each_pin_has_what_its_release_imports() -> None:
    """For every sglang release that pins its kernel exactly, the surface the stand-in
    serves exports every name the release imports from ``sgl_kernel`` at module level
    (both read from the wheels); 0.4.3.post3-0.4.3.post4 pin 0.0.3.post6, older than the
    data, and get 0.0.4's (the newest would lack RoPE's entry point, among four)."""
    from sglang_shims.kernels.surface import symbols

    missing = {}
    for release in symbols.load()["releases"]:
        pin = (symbols.pinned(release) or "").partition("==")[2]
        if pin:
            served = exports.choose_surface(pin)
            lacking = sorted(set(symbols.needed(release) or {}) - exports.exported(served))
            if lacking:
                missing[release] = (pin, served, lacking)
    assert missing == {}
    assert exports.choose_surface("0.0.3.post6") == "0.0.4"
