"""The fork server of the patch tests (tests/support/zygote.py): a program run as a fork
must come back as ``python -S -c`` would have given it, or the patch tests measure the
harness.  Each case runs both ways and compares what a test reads."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ..support import zygote
from ..support.run import SITE_PACKAGES, run_python

pytest.importorskip("torch")

CASES = {
    "prints": "import sys\nprint('out'); print('err', file=sys.stderr)",
    "argv, cwd, env, path": (
        "import os, sys, json\nprint(json.dumps([sys.argv, os.getcwd(), os.environ.get('ZYGOTE_T'),"
        " sys.path[0], [p for p in sys.path if 'zygote-stack' in p], __name__]))"),
    "exit code": "import sys\nsys.exit(3)",
    "exit message": "raise SystemExit('stopped here')",
    "uncaught": "def f():\n    raise ValueError('boom')\nf()",
    "atexit": "import atexit\natexit.register(lambda: print('at exit'))\nprint('body')",
    "a child reads stdin": ("import subprocess, sys\nprint(subprocess.run([sys.executable, '-c',"
                            " 'import sys; print(repr(sys.stdin.read()))'], capture_output=False"
                            ").returncode)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_fork_returns_what_a_fresh_interpreter_returns(name: str, tmp_path: Path) -> None:
    stack = tmp_path / "zygote-stack"
    stack.mkdir()
    got = {fork: run_python(CASES[name], paths=(stack,), env={"ZYGOTE_T": "1"},
                            activate=False, cwd=tmp_path, args=("a", "b"), fork=fork)
           for fork in (False, True)}
    plain, forked = got[False], got[True]
    assert (forked.returncode, forked.stdout, forked.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr)


def test_the_traceback_has_no_frame_of_the_server() -> None:
    forked = run_python(CASES["uncaught"], activate=False, fork=True)
    assert forked.returncode == 1
    assert "zygote" not in forked.stderr and forked.stderr.startswith("Traceback")
    assert forked.stderr.rstrip().endswith("ValueError: boom")


def test_a_program_past_its_time_is_killed() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_python("import time\ntime.sleep(30)", activate=False, fork=True, timeout=1)
    # the server answers the next program as before
    assert run_python("print(1)", activate=False, fork=True).stdout == "1\n"


def test_a_stack_with_its_own_copy_of_a_preloaded_module_runs_fresh(tmp_path: Path) -> None:
    """The fork would import the server's numpy; a stack that brings one is refused."""
    (tmp_path / "numpy").mkdir()
    (tmp_path / "numpy" / "__init__.py").write_text("MINE = True\n")
    assert not zygote.usable((tmp_path,), SITE_PACKAGES)
    assert zygote.usable((tmp_path / "elsewhere",), SITE_PACKAGES)
    # read at interpreter start: a fork would keep the server's
    assert not zygote.usable((), SITE_PACKAGES, {"PYTHONHASHSEED": "0"})
    assert zygote.usable((), SITE_PACKAGES, {"PYTHONDONTWRITEBYTECODE": "1", "X": "1"})
    got = run_python("import numpy\nprint(getattr(numpy, 'MINE', False))", paths=(tmp_path,),
                     activate=False, fork=True)
    assert got.stdout == "True\n"


def test_the_child_has_only_the_environment_it_was_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server started where a variable was set (as CI sets its own) must not pass it on."""
    monkeypatch.setenv("ZYGOTE_LEAK", "1")
    base = [*SITE_PACKAGES, str(tmp_path)]  # a server of its own, started now
    code, out, _ = zygote.run("import os\nprint(sorted(os.environ))", {"ONLY": "x"}, base,
                              (), tmp_path, 60)
    assert (code, out) == (0, "['ONLY']\n")


def test_the_server_preloads_nothing_a_patch_watches_or_a_stack_brings() -> None:
    """A watched module imported before the shims start would leave its patch bypassed in
    every fork; a package a test's stack brings (sglang, transformers and the wheels beside
    them) would send every such stack to a fresh interpreter."""
    from sglang_shims._bootstrap import TARGETS

    loaded = zygote._server(SITE_PACKAGES, {}).loaded
    watched = {name.partition(".")[0] for name in TARGETS.values()}
    brought = {"sglang", "sgl_kernel", "transformers", "huggingface_hub", "tokenizers",
               "outlines", "openai", "kernels", "xgrammar", "tilelang", "flashinfer",
               "tvm_ffi", "vllm", "deep_gemm", "sglang_shims"}
    assert "torchvision" in loaded and "sympy" in loaded  # the preload ran
    assert not loaded & watched, sorted(loaded & watched)
    assert not loaded & brought, sorted(loaded & brought)


@pytest.mark.parametrize("interpret", ["1", None])
def test_triton_in_a_fork_is_interpreted_as_the_program_asked(interpret: str | None) -> None:
    """The server has imported Triton (torch's compiler does); a program that switches its
    interpreter on must get Triton's own jit'd helpers interpreted too, as a fresh
    interpreter would give them, and one that does not, compiled."""
    env = {"TRITON_INTERPRET": interpret} if interpret else {}
    code = ("import triton.language as tl\n"
            "print(type(tl.cdiv).__name__)")
    got = {fork: run_python(code, env=env, activate=False, fork=fork).stdout
           for fork in (False, True)}
    assert got[True] == got[False], got
