"""sglang's own Triton attention, compiled for sm_120 from the published wheels: stock
tiles exceed sm_120's shared memory, the ``sm120-triton-attention-tiles`` tiles fit.

Two releases of the patch's range are compiled at each run (the patch's own test compiles
0.4.0, 0.5.8.post1 and 0.5.23); ``docs/gpus/sglang-sm120-attention.json`` (``python -m
tools.refresh sglang-sm120-attention``) holds the spread the page shows, and what is
compiled here must equal it where the Triton is the one it was made with.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.run import REPO, need

pytestmark = pytest.mark.wheels

RELEASES = ("0.4.4.post2", "0.5.16")


@pytest.mark.parametrize("version", RELEASES)
def test_stock_tiles_overflow_and_patched_fit(version: str,
                                              tmp_path_factory: pytest.TempPathFactory) -> None:
    need("triton")
    need("torch")
    import triton

    from tools.gpus import sm120_attention as tool

    found = tool.measure(version, Path(tmp_path_factory.mktemp("sm120")))
    over = [r for r in found["stock"] if r["problems"]]
    assert over, "stock tiles should exceed sm_120's 101376 B for some head dims"
    assert {r["shape"] for r in over if r["kernel"] == "prefill"} == {"head dim 256"}
    assert not [r for r in found["patched"] if r["problems"]], found["patched"]
    committed = json.loads((REPO / tool.RESULTS).read_text(encoding="utf-8"))
    if committed["triton"] == triton.__version__:
        assert committed["releases"][version] == found
