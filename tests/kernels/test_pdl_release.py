"""Where the norm and activation kernels release the next kernel under PDL, in the code
the GPU runs: compiled for sm_90 (no GPU needed), both wait for the kernel before them,
and only the early form releases the next one itself; the late form leaves the release
to its programs' exit (``runtime.PDL_EARLY_MAX_ROWS`` picks the form by rows)."""

from __future__ import annotations

from ..support.programs import program
from ..support.run import need, run_python


def test_late_release_compiles_to_a_wait_without_a_release() -> None:
    need("triton")
    done = run_python(program("kernels/pdl_release"), activate=False,
                      env={"TRITON_INTERPRET": ""}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = done.json()
    assert found == {f"{k} {form}": [1, 1 if form == "early" else 0]
                     for k in ("rmsnorm", "act_and_mul") for form in ("early", "late")}
