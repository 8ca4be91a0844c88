"""A patch with ``when = "instead"`` stands in for its whole target module, and only when the
real one cannot serve: ``unusable()`` gives a reason, the real import raises, or the user
forces it.  Otherwise the real module is what the program gets.  Each case runs in a fresh
interpreter with the patch in an extra patch folder (SGLANG_SHIMS_PATH)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.packages import manifest_text, write_package, write_patch
from ..support.run import Result, run_python

PATCH = "stand-in-demo"

CODE = """
import os

def unusable(ctx):
    if os.environ.get("DEMO_UNUSABLE") == "raise":
        raise RuntimeError("probe broke")
    return os.environ.get("DEMO_UNUSABLE") or None

def provide(ctx):
    if os.environ.get("DEMO_PROVIDE") == "raise":
        raise RuntimeError("cannot build")
    ctx.module.VALUE = 42
    ctx.module.CAUSE = ctx.cause  # why the real module cannot serve, for the stand-in's errors
"""

SNIPPET = """
import json, sglang_shims
try:
    import sitarget
    value = [sitarget.VALUE, getattr(sitarget, "CAUSE", None)]
except ImportError as exc:
    value = f"{type(exc).__name__}: {exc}"
entry = sglang_shims.status()["stand-in-demo"]
print(json.dumps({"value": value, "state": entry["state"], "reason": entry["reason"]}))
"""


def run(tmp_path: Path, body: str = "VALUE = 1\n", **env: str) -> Result:
    target = write_package(tmp_path / "site", {"sitarget/__init__.py": body})
    patches = write_patch(tmp_path / "patches", PATCH,
                          manifest_text(PATCH, "sitarget", when="instead"), CODE)
    return run_python(SNIPPET, paths=(target,), env={"SGLANG_SHIMS_PATH": str(patches), **env})


def outcome(result: Result) -> dict[str, object]:
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert isinstance(data, dict)
    return data


def test_real_module_serves_when_usable(tmp_path: Path) -> None:
    data = outcome(run(tmp_path))
    assert data["value"] == [1, None]
    assert data["state"] == "not-applicable"
    assert data["reason"] == "the installed sitarget imported and can serve here"


def test_stands_in_when_unusable(tmp_path: Path) -> None:
    data = outcome(run(tmp_path, DEMO_UNUSABLE="no code for this GPU"))
    assert data["value"] == [42, "no code for this GPU"] and data["state"] == "applied"
    assert "no code for this GPU" in str(data["reason"])


def test_stands_in_when_the_real_import_fails(tmp_path: Path) -> None:
    data = outcome(run(tmp_path, 'raise ImportError("libfoo.so: cannot open")\n'))
    value = data["value"]
    assert isinstance(value, list) and value[0] == 42 and data["state"] == "applied"
    assert "importing sitarget failed: ImportError: libfoo.so: cannot open" in str(
        data["reason"])


def test_forced_by_enable_stands_in_over_a_working_module(tmp_path: Path) -> None:
    data = outcome(run(tmp_path, SGLANG_SHIMS_ENABLE=PATCH))
    value = data["value"]
    assert isinstance(value, list) and value[0] == 42 and data["state"] == "applied"
    assert "forced by SGLANG_SHIMS_ENABLE" in str(data["reason"])


def test_unusable_raising_keeps_the_real_module(tmp_path: Path) -> None:
    data = outcome(run(tmp_path, DEMO_UNUSABLE="raise"))
    assert data["value"] == [1, None] and data["state"] == "failed"
    assert "unusable() raised RuntimeError: probe broke" in str(data["reason"])


@pytest.mark.parametrize("strict", [{}, {"SGLANG_SHIMS_STRICT": "1"}], ids=["normal", "strict"])
def test_provide_raising_fails_the_import_by_name(tmp_path: Path, strict: dict[str, str]
                                                  ) -> None:
    data = outcome(run(tmp_path, DEMO_UNUSABLE="broken", DEMO_PROVIDE="raise", **strict))
    assert data["state"] == "failed"
    assert "provide() raised RuntimeError: cannot build" in str(data["reason"])
    assert "could not stand in for sitarget" in str(data["value"])
    assert json.dumps(data)  # a plain, reportable outcome


def test_disabled_stand_in_never_stands_in(tmp_path: Path) -> None:
    data = outcome(run(tmp_path, DEMO_UNUSABLE="broken", SGLANG_SHIMS_DISABLE=PATCH))
    assert data["value"] == [1, None] and data["state"] == "disabled"


def test_strict_mode_with_nothing_wrong_imports_normally(tmp_path: Path) -> None:
    data = outcome(run(tmp_path, SGLANG_SHIMS_STRICT="1"))
    assert data["value"] == [1, None] and data["state"] == "not-applicable"


COUNTED = CODE.replace("    ctx.module.VALUE = 42\n", "    ctx.module.VALUE = 42\n"
                       "    calls = int(os.environ.get('DEMO_CALLS', '0'))\n"
                       "    os.environ['DEMO_CALLS'] = str(calls + 1)\n")


def run_counted(tmp_path: Path, snippet: str) -> Result:
    target = write_package(tmp_path / "site", {"sitarget/__init__.py": "VALUE = 1\n"})
    patches = write_patch(tmp_path / "patches", PATCH,
                          manifest_text(PATCH, "sitarget", when="instead"), COUNTED)
    return run_python(snippet, paths=(target,), env={"SGLANG_SHIMS_PATH": str(patches),
                                                     "DEMO_UNUSABLE": "no code for this GPU"})


def test_a_stand_in_is_built_once_per_process(tmp_path: Path) -> None:
    """A patch applies once per process: importing the target again (after it was dropped
    from sys.modules) does not build a second stand-in, and the record no longer says
    "applied" about a module that is not the one in use."""
    result = run_counted(tmp_path, """
        import json, os, sys, sglang_shims
        import sitarget
        del sys.modules["sitarget"]
        import sitarget
        state = sglang_shims.status()["stand-in-demo"]["state"]
        print(json.dumps([os.environ["DEMO_CALLS"], state]))
    """)
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert isinstance(data, list)
    calls, state = data
    assert calls == "1"
    # the module now in sys.modules is not the stand-in: status must not claim it applied
    assert state != "applied"


def test_revert_undoes_a_stand_in(tmp_path: Path) -> None:
    """``revert()`` undoes every applied patch, a stand-in included, and its record says so
    (a stand-in left "applied" after revert() would be status claiming code in effect that
    the user asked to undo)."""
    result = run_counted(tmp_path, """
        import json, sglang_shims
        import sitarget
        before = sitarget.VALUE
        errors = sglang_shims.revert()
        entry = sglang_shims.status()["stand-in-demo"]
        print(json.dumps([before, errors, entry["state"]]))
    """)
    assert result.returncode == 0, result.stderr
    assert result.json() == [42, [], "reverted"]


def test_ops_sglang_fakes_without_an_export_are_defined() -> None:
    """sglang 0.5.5.post2 registers a fake for ``sgl_kernel::moe_wna16_marlin_gemm`` with a
    plain register_fake at import (its gptq.py); no kernel exports that name, so the
    stand-in defines the op from FAKE_ONLY_OPS, or 13 of 21 serving modules fail."""
    pytest.importorskip("torch")
    result = run_python("""
        import torch
        from sglang_shims.kernels.standin.provider import define_torch_ops
        defined = define_torch_ops(set())
        @torch.library.register_fake("sgl_kernel::moe_wna16_marlin_gemm")
        def _(*args):
            return None
        print("moe_wna16_marlin_gemm" in defined)
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["True"]
