"""sgl-kernel-missing-symbols: every kernel name sglang needs and the kernel lacks.

Three layers, each against something the patch did not compute:

* the committed import data equals a fresh ast walk of real sglang wheels (a sample
  spread over every minor series; ``python tools/regen_kernel_symbols.py`` rebuilds
  all of them);
* over every (sglang release, kernel version) pair of the data, the names the patch
  supplies on a module with exactly that kernel's export surface are the names the
  wheel walk says sglang needs, minus what that kernel exports -- never a guarded name,
  never a name the kernel has;
* on real sglang wheels with stand-in kernels, in both directions of skew, the stock
  import fails with ``cannot import name`` and the patched one works, and the call
  explains itself.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from sglang_shims.catalog.validate import load_text
from sglang_shims.engine import journal
from sglang_shims.engine.gates import Environment
from sglang_shims.engine.journal import PatchContext, Retired
from sglang_shims.kernels.surface import symbols
from sglang_shims.testing import standin, wheels

from ..support.programs import program
from ..support.releases import WHEEL_SAMPLE
from ..support.run import REPO, run_python
from ..support.scripts import load_script

PATCH = REPO / "patches" / "sgl-kernel-missing-symbols"
SCAN = load_script("tools/regen_kernel_symbols.py", "regen_kernel_symbols")
SAMPLE = WHEEL_SAMPLE  # the releases whose real wheels the suite reads


def _patch() -> types.ModuleType:
    return load_script(f"{PATCH.relative_to(REPO)}/patch.py", "missing_symbols_patch")


def _kernel_module(version: str) -> types.ModuleType:
    module = types.ModuleType("sgl_kernel")
    names, submodules = standin.surface(version)
    for name in names:
        setattr(module, name, object())
    for sub in submodules:  # as the import system binds a loaded submodule
        setattr(module, sub.partition(".")[0], types.ModuleType(f"sgl_kernel.{sub}"))
    return module


def _pin_filter(scanned: dict[str, Any]) -> dict[str, str]:
    """Needs less what the exactly pinned kernel lacks too (other platforms' paths)."""
    top = {n: m for n, m in scanned["needs"].items() if "." not in n}  # not submodules' names
    pin = scanned["pin"].partition("==")[2]
    if pin not in standin.versions():
        return top
    exports = set(standin.surface(pin)[0])
    return {n: m for n, m in top.items() if n in exports}


@pytest.mark.wheels
@pytest.mark.parametrize("version", SAMPLE)
def test_data_matches_the_wheel(version: str) -> None:
    scanned = SCAN.scan_wheel(wheels.fetch("sglang", version))
    assert symbols.pinned(version) == scanned["pin"]
    assert symbols.needed(version) is not None
    assert set(symbols.needed(version) or ()) == set(_pin_filter(scanned))


def test_guard_rules() -> None:
    source = (
        "from sgl_kernel import a, b\n"
        "try:\n    from sgl_kernel import guarded\nexcept ImportError:\n    guarded = None\n"
        "if _is_cuda:\n    from sgl_kernel import under_if\n"
        "def f():\n    from sgl_kernel import local\n"
        "class C:\n    from sgl_kernel import in_class\n"
        "try:\n    from sgl_kernel import unguarded_try\nexcept KeyError:\n    pass\n"
        "import sgl_kernel\nok = hasattr(sgl_kernel, 'probed')\n"
        "from sgl_kernel.elementwise import sub\n"
        "import sgl_kernel.kvcacheio\n"
        "try:\n    import sgl_kernel.allreduce\nexcept ImportError:\n    pass\n")
    plain, guarded = SCAN.imports_of(source)
    assert plain == {"a", "b", "under_if", "in_class", "unguarded_try", "elementwise.sub",
                     "kvcacheio.*"}
    assert guarded == {"guarded", "probed", "allreduce.*"}


def _expected(version: str, scanned: dict[str, str], kernel: str) -> set[str]:
    owned = {"fused_marlin_moe"} if Version(kernel) >= Version("0.3.18") else set()
    return set(scanned) - set(standin.surface(kernel)[0]) - owned


@pytest.mark.wheels
@pytest.mark.parametrize("version", SAMPLE)
def test_every_kernel_pair(version: str) -> None:
    """Each kernel of the data against this sglang: the supplied names, exactly."""
    patch = _patch()
    found = SCAN.scan_wheel(wheels.fetch("sglang", version))
    scanned = _pin_filter(found)
    pin = found["pin"].partition("==")[2]
    if pin:
        assert not patch.missing(version, _kernel_module(pin)), "a pinned install is touched"
    differing = 0
    for kernel in standin.versions():
        module = _kernel_module(kernel)
        got = patch.missing(version, module, kernel)
        want = _expected(version, scanned, kernel) - set(vars(module))
        assert set(got) == want, (version, kernel)
        differing += bool(want)
        assert not set(got) & set(standin.surface(kernel)[0])
    assert differing > 0


def test_every_pair_of_the_data() -> None:
    """All (release, kernel) pairs: never a name the kernel binds, never a guarded one."""
    patch = _patch()
    guarded_8bit = "sgl_per_token_group_quant_8bit"  # sglang 0.5.9 probes it in try/except
    assert guarded_8bit not in (symbols.needed("0.5.9") or {})
    pairs = supplied = 0
    for kernel in standin.versions():
        module = _kernel_module(kernel)
        exports = set(standin.surface(kernel)[0])
        for version in symbols.load()["releases"]:
            got = patch.missing(version, module, kernel)
            assert got is not None
            assert not set(got) & exports
            if Version(kernel) >= Version("0.3.18"):
                assert "fused_marlin_moe" not in got  # sgl-kernel-fused-marlin-moe's range
            pairs += 1
            supplied += bool(got)
    assert pairs > 9000 and supplied > 1000


def _ctx(module: types.ModuleType, sglang: str, kernel: str) -> PatchContext:
    manifest = load_text((PATCH / "manifest.toml").read_text(), str(PATCH), PATCH)
    return PatchContext(manifest, module,
                        Environment({"sglang": sglang, "sgl-kernel": kernel}, hermetic=True))


def test_apply_supplies_and_explains() -> None:
    """Issue 5867: sglang 0.4.6 with a kernel older than awq_dequantize."""
    patch = _patch()
    module = _kernel_module("0.0.4")
    ctx = _ctx(module, "0.4.6", "0.0.4")
    patch.apply(ctx)
    proxy = module.awq_dequantize
    with pytest.raises(Exception) as caught:
        proxy(None)
    text = str(caught.value)
    for fact in ("sgl_kernel.awq_dequantize is not available", "sgl-kernel 0.0.4",
                 "sglang 0.4.6 imports it", "0.0.4.post3-0.4.6.post1",
                 "pip install 'sgl-kernel==0.0.9.post2'"):
        assert fact in text, (fact, text)
    journal.undo(ctx)
    assert not hasattr(module, "awq_dequantize")


def test_retires_when_nothing_is_missing_or_release_unknown() -> None:
    patch = _patch()
    with pytest.raises(Retired, match="binds every name"):
        patch.apply(_ctx(_kernel_module("0.0.9.post2"), "0.4.6", "0.0.9.post2"))
    with pytest.raises(Retired, match=r"no import data for sglang 0\.4\.6\.dev1"):
        patch.apply(_ctx(_kernel_module("0.0.4"), "0.4.6.dev1", "0.0.4"))


def test_retires_exactly_past_the_data() -> None:
    """The manifest's version rule names the newest release the import data covers, so
    that a release the refresh adds to the data is patched, not retired, and one it has
    not read yet retires before the patch runs: the data leads, the bound follows."""
    manifest = load_text((PATCH / "manifest.toml").read_text(), str(PATCH), PATCH)
    (gate,) = manifest.retire.versions
    newest = symbols.load()["releases"][-1]
    assert (gate.dists, gate.spec) == (("sglang",), f">{newest}"), (
        f"[retire] versions must read sglang = \">{newest}\": the import data's newest"
        " release (python -m tools.refresh kernel-symbols added it)")
    assert newest in manifest.retire.description


CALL = program("patches/sgl_kernel_missing_symbols/call")

# (sglang, kernel, a name that sglang imports and that kernel lacks, the pin)
CASES = [
    ("0.4.6", "0.0.4", "awq_dequantize", "sgl-kernel==0.0.9.post2"),         # kernel too old
    ("0.5.9", "0.4.0", "awq_marlin_repack", "sgl-kernel==0.3.21"),           # kernel too new
    ("0.5.16", "0.4.10", "cutlass_mla_decode", "sglang-kernel==0.4.5"),      # newer, 0.4.7 cut
]


@pytest.mark.wheels
@pytest.mark.parametrize(("sglang", "kernel", "name", "pin"), CASES)
def test_real_wheels_both_directions(sglang: str, kernel: str, name: str, pin: str,
                                     sglang_release: Callable[[str], Path],
                                     standin_kernel: Callable[..., Path]) -> None:
    paths = (sglang_release(sglang), standin_kernel(kernel))
    stock = run_python(CALL, paths=paths, args=(name,), fork=True,
                       env={"SGLANG_SHIMS_DISABLE": "sgl-kernel-missing-symbols"})
    assert f"cannot import name '{name}' from 'sgl_kernel'" in stock.stderr, stock.stderr
    fixed = run_python(CALL, paths=paths, args=(name,), fork=True)
    assert fixed.returncode == 0, fixed.stderr
    error, status = fixed.stdout.splitlines()[:2]
    assert error.startswith(f"MissingSymbolError: sgl_kernel.{name} is not available"), error
    assert f" {kernel} does not export it" in error and f"pip install '{pin}'" in error
    assert json.loads(status)["state"] == "applied"


@pytest.mark.wheels
@pytest.mark.parametrize(("sglang", "kernel", "first"), [
    ("0.4.9.post3", "0.1.0", "fused_marlin_moe"),   # older than fused_marlin_moe (0.2.2)
    ("0.5.1", "0.2.0", "gptq_marlin_gemm"),         # older than gptq_marlin_gemm (0.3.5)
])
def test_real_module_imports(sglang: str, kernel: str, first: str,
                             sglang_release: Callable[[str], Path],
                             standin_kernel: Callable[..., Path]) -> None:
    """sglang's awq module, as imported on a CUDA machine, with a kernel older than it."""
    code = program("patches/sgl_kernel_missing_symbols/awq")
    paths = (sglang_release(sglang), standin_kernel(kernel))
    stock = run_python(code, paths=paths, timeout=300, fork=True,
                       env={"SGLANG_SHIMS_DISABLE": "sgl-kernel-missing-symbols"})
    assert f"cannot import name '{first}' from 'sgl_kernel'" in stock.stderr, stock.stderr
    fixed = run_python(code, paths=paths, timeout=300, fork=True)
    assert fixed.returncode == 0 and fixed.stdout.strip() == "imported", fixed.stderr


def _import_as(importer: str, name: str) -> object:
    """``from sgl_kernel import <name>`` run as the body of module ``importer``."""
    scope: dict[str, object] = {"__name__": importer}
    exec(f"from sgl_kernel import {name}", scope)
    return scope[name]


def test_a_name_imported_guarded_and_unguarded(monkeypatch: pytest.MonkeyPatch) -> None:
    """sglang 0.5.9 on kernel 0.4.10: ``scaled_fp4_quant`` is imported unguarded by the
    flashinfer TRT-LLM MoE runner (its import failed) and in try/except ImportError by two
    modules that fall back to ``fp4_quantize = None``: the first gets the proxy, the
    guarded two still get the ImportError."""
    import sys

    assert "scaled_fp4_quant" in (symbols.needed("0.5.9") or {})
    guarded = symbols.guarded_in("scaled_fp4_quant", "0.5.9")
    # 0.5.1 imported it unguarded in modelopt_quant: there it is no guarded importer
    assert symbols.guarded_in("scaled_fp4_quant", "0.5.1") == set()
    assert guarded == {"sglang.srt.layers.moe.token_dispatcher.standard",
                       "sglang.srt.layers.quantization.modelopt_quant"}
    patch = _patch()
    module = _kernel_module("0.4.10")
    monkeypatch.setitem(sys.modules, "sgl_kernel", module)
    ctx = _ctx(module, "0.5.9", "0.4.10")
    patch.apply(ctx)
    assert "scaled_fp4_quant" not in vars(module)
    proxy = _import_as("sglang.srt.layers.moe.moe_runner.flashinfer_trtllm", "scaled_fp4_quant")
    assert type(proxy).__name__ == "OptionalSymbol"
    for importer in sorted(guarded):
        with pytest.raises(ImportError, match="cannot import name 'scaled_fp4_quant'"):
            _import_as(importer, "scaled_fp4_quant")
    assert ctx.details["kernel_ops"]["scaled_fp4_quant"] == "none"
    # a name no one supplies is still missing for everybody
    with pytest.raises(AttributeError):
        module.no_such_kernel_name  # noqa: B018
    journal.undo(ctx)
    assert "__getattr__" not in vars(module)


TRTLLM = program("patches/sgl_kernel_missing_symbols/trtllm")


@pytest.mark.wheels
def test_real_wheel_guarded_and_unguarded(sglang_release: Callable[[str], Path],
                                          standin_kernel: Callable[..., Path]) -> None:
    """The same on sglang 0.5.9's real modules with a stand-in of kernel 0.4.10; status()
    lists each proxy the patch installed, by name."""
    paths = (sglang_release("0.5.9"), standin_kernel("0.4.10"))
    stock = run_python(TRTLLM, paths=paths, timeout=300,
                       env={"SGLANG_SHIMS_DISABLE": "sgl-kernel-missing-symbols"})
    assert stock.returncode != 0 and "from 'sgl_kernel'" in stock.stderr, stock.stderr[-2000:]
    fixed = run_python(TRTLLM, paths=paths, timeout=300)
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    data = fixed.json()
    assert isinstance(data, dict)
    assert data["runner"] == "OptionalSymbol" and data["modelopt"] == "None", data
    assert data["state"] == "applied"
    assert "sgl_kernel.scaled_fp4_quant" in data["proxies"]
    assert "sgl_kernel.awq_marlin_repack" in data["proxies"], data["proxies"]


def test_absent_submodule_is_found_from_the_data(tmp_path: Path) -> None:
    """sglang 0.5.17 imports sparse_flash_attn's functions unguarded (the dual-chunk
    attention backend); sglang-kernel 0.4.7 dropped that submodule."""
    patch = _patch()
    names = symbols.needed_from_submodules("0.5.17")["sparse_flash_attn"]
    assert set(names) == {"convert_vertical_slash_indexes",
                          "convert_vertical_slash_indexes_mergehead", "sparse_attn_func"}
    module = types.ModuleType("sgl_kernel")
    module.__path__ = [str(tmp_path)]
    assert "sparse_flash_attn" in patch.absent_submodules("0.5.17", module)
    (tmp_path / "sparse_flash_attn.py").write_text("")
    (tmp_path / "kvcacheio.py").write_text("")
    assert "sparse_flash_attn" not in patch.absent_submodules("0.5.17", module)


DUAL_CHUNK = program("patches/sgl_kernel_missing_symbols/dual_chunk")


@pytest.mark.wheels
def test_real_wheel_absent_submodule(sglang_release: Callable[[str], Path],
                                     standin_kernel: Callable[..., Path]) -> None:
    """``from sgl_kernel.sparse_flash_attn import ...`` on sglang 0.5.9 with kernel 0.4.10:
    stock the module fails to import; patched it imports and the call explains itself."""
    paths = (sglang_release("0.5.9"), standin_kernel("0.4.10"))
    stock = run_python(DUAL_CHUNK, paths=paths, timeout=300,
                       env={"SGLANG_SHIMS_DISABLE": "sgl-kernel-missing-symbols"})
    assert "No module named 'sgl_kernel.sparse_flash_attn'" in stock.stderr, \
        stock.stderr[-2000:]
    fixed = run_python(DUAL_CHUNK, paths=paths, timeout=300)
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    data = fixed.json()
    assert isinstance(data, dict)
    assert data["error"].startswith("MissingSymbolError: sgl_kernel.sparse_flash_attn."
                                    "sparse_attn_func is not available"), data["error"]
    assert "sgl-kernel==0.3.21" in data["error"]
    assert "sparse_attn_func" in data["absent"]["sgl_kernel.sparse_flash_attn"]
    assert data["state"] == "applied"
