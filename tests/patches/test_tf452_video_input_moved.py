"""tf452-video-input-moved: the patch applied in-process to a stand-in for its target.

The ``shim_patch`` fixture runs the real engine on ``TARGET``, without a subprocess.
"""

from __future__ import annotations

from pathlib import Path

from sglang_shims.testing.inprocess import ShimPatch

PATCH = Path(__file__).resolve().parents[2] / "patches" / "tf452-video-input-moved"
# The version the gates are judged against, whatever is installed where the test runs.
VERSIONS = {"sglang": "0.4.4.post1"}

# The target's body, as little of it as shows the break: what the patch reads and changes.
TARGET = """\
"""


def test_applies(shim_patch: ShimPatch) -> None:
    record = shim_patch(PATCH, TARGET, versions=VERSIONS)
    assert record.state == "applied", record.reason
