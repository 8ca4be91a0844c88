"""docs/maintaining.md, run: "a new sglang came out", against a fabricated release.

The release (the micro release after the newest one the data knows) is the real 0.5.23
wheel with its version changed and one line added to ``sglang/srt/entrypoints/engine.py``
(the "break"), served from a local folder
(``--index none --find-links``) with a private wheel cache, in a scratch copy of this
checkout whose recorded index is cut to two real releases so that every wheel the loop
reads is at hand (those two and the sm_120 attention spread, seeded into the private cache
from the suite's, unpacked, beside the suite's cache of compiled sm_120 kernels).  The
loop: the canary lists it, the refresh takes it into the release list and the per-release
data, ``doctor`` calls it untested, a patch for the break is written, the refresh indexes
it, the range test agrees and ``--check`` passes.  The
canary's cells are the one step left out: they build environments from the index (the
runner's resolver rules are tested in test_compatibility_matrix.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

from ..support.releases import RELEASES
from ..support.run import REPO, clean_env
from ..support.sm120_attention import RELEASES as SM120_RELEASES
from ..support.sm120_attention import TRITON_CACHE

pytestmark = pytest.mark.wheels

REAL = ("0.5.16", "0.5.23")
"""The real wheels the scratch copy keeps (any two releases with the hooks the loop reads)."""
AT_HAND = sorted({*REAL, *SM120_RELEASES}, key=Version)
"""Every sglang wheel the loop reads: REAL, and the spread whose attention kernels the
refresh's sglang-sm120-attention generator compiles (a fixed list, not the index's)."""


def _after(version: str) -> str:
    major, minor, micro = Version(version).release[:3]
    return f"{major}.{minor}.{micro + 1}"


NEW = _after(max(RELEASES, key=Version))
"""Past every release the data knows, so that it is new to the loop whatever the index
has published since this was written."""
TESTED = max(json.loads((REPO / "tools" / "matrix" / "compatibility.json").read_text(
    encoding="utf-8"))["releases"], key=Version)
"""The newest release the matrix ran, which doctor names beside an untested one."""
BREAK = f"# fabricated for the maintainers' walkthrough: {NEW} moved the hook\n"
PATCH_ID = "walkthrough-new-release"


def fabricate(wheel: Path, version: str, folder: Path) -> Path:
    """``wheel`` re-versioned as ``version`` (pure Python tag), with the break added."""
    old = wheel.name.split("-")[1]
    out = folder / f"sglang-{version}-py3-none-any.whl"
    records = []
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            name = info.filename.replace(f"sglang-{old}.dist-info", f"sglang-{version}.dist-info")
            if name.endswith("/") or name.endswith(".dist-info/RECORD"):
                continue
            data = src.read(info)
            if name.endswith(".dist-info/METADATA"):
                data = data.replace(f"Version: {old}\n".encode(), f"Version: {version}\n".encode())
            elif name.endswith(".dist-info/WHEEL"):
                data = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n" \
                       b"Tag: py3-none-any\n"
            elif name == "sglang/srt/entrypoints/engine.py":
                data = BREAK.encode() + data
            dst.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            records.append(f"{name},sha256={digest.decode()},{len(data)}")
        record = f"sglang-{version}.dist-info/RECORD"
        dst.writestr(record, "\n".join([*records, f"{record},,"]) + "\n")
    return out


def copy_checkout(dest: Path) -> Path:
    """The files of this checkout (tracked and new, not ignored) under ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, listed):
        source = REPO / rel
        if source.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


def seed(cache: Path) -> None:
    """Put what the suite already has at hand into the loop's private wheel ``cache``: the
    wheels the loop reads (AT_HAND, from the suite's cache) and copies of them unpacked and
    byte-compiled as the suite's cache holds them; and, as a link, the suite's Triton cache
    of sm_120 kernels (the attention patch's tests compile the same launches; Triton's
    cache is keyed by content and written atomically, and the suite's workers share it
    already), so that a kernel is compiled once per machine, not at every run of this test.
    Without them the loop fetched five wheels from the index, unpacked and byte-compiled
    seven, and compiled every sm_120 kernel again (the default refresh took 190-300 s on a
    loaded 2-core machine, 261 s of it the attention generator)."""
    from sglang_shims.testing import wheels

    (cache / "unpacked").mkdir()
    for version in AT_HAND:
        shutil.copy(wheels.fetch("sglang", version), cache)
        unpacked = wheels.unpack("sglang", version)
        shutil.copytree(unpacked, cache / "unpacked" / unpacked.name)
    TRITON_CACHE.mkdir(mode=0o700, exist_ok=True)
    (cache / TRITON_CACHE.name).symlink_to(TRITON_CACHE, target_is_directory=True)


def manifest() -> str:
    return textwrap.dedent(f'''\
        id = "{PATCH_ID}"
        summary = "sglang {NEW} moved the hook (a fabricated break, for the walkthrough)"
        evidence = ["https://github.com/sgl-project/sglang/releases"]
        default = "off"
        policy = "optional"
        changes = "Nothing: the walkthrough's patch only has to be judged and indexed."

        [target]
        module = "sglang.srt.entrypoints.engine"
        when = "after"

        [requires]
        sglang = ">={NEW}"

        [range]
        established = "the release index: only {NEW}'s wheel has the moved hook"

        [[fingerprint]]
        module = "sglang.srt.entrypoints.engine"
        anchors = ["{NEW} moved the hook"]

        [retire]
        when = "never: a walkthrough"
        installed = ["no-such-distribution-for-the-walkthrough"]
        ''')


def test_a_new_sglang_release_goes_round_the_loop(tmp_path: Path) -> None:
    from sglang_shims.testing import wheels

    cache, index = tmp_path / "cache", tmp_path / "index"
    cache.mkdir(mode=0o700)
    index.mkdir()
    real = {v: wheels.fetch("sglang", v) for v in REAL}  # the sample's real wheels
    seed(cache)
    repo = copy_checkout(tmp_path / "repo")
    snapshot = repo / "tools" / "refresh" / "data" / "index.json"
    data = json.loads(snapshot.read_text())
    data["projects"]["sglang"] = {v: e for v, e in data["projects"]["sglang"].items()
                                  if v in REAL}
    snapshot.write_text(json.dumps(data))
    env = clean_env(SGLANG_SHIMS_WHEEL_CACHE=str(cache), PYTHONPATH=str(repo))

    def refresh(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "tools.refresh", "--index", "none",
                               "--find-links", str(index), *args], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=1200, check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout

    # the copy's data cut to the two releases, as a refresh writes it: the starting point
    refresh("index", "releases", "kernel-symbols", "moe-fp8-opset", "release-index")
    assert "STALE" not in refresh("--check")

    # 0. a new sglang appears on the index
    fabricate(real["0.5.23"], NEW, index)

    # 1. what is new
    refresh("--new", "--no-cells", "--report-dir", str(tmp_path / "canary"))
    (report,) = (tmp_path / "canary").glob("*.md")
    assert f"| sglang | {NEW} |" in report.read_text()

    # 2. the refresh takes it in; the matrix has not run it: a note, not a failure
    refresh()
    releases = (repo / "tests" / "data" / "sglang_releases.txt").read_text().split()
    assert releases == [*REAL, NEW]
    check = refresh("--check")
    assert "STALE" not in check and f"sglang {NEW} is on the index and not in the matrix" \
        in check

    # users are told it is untested
    doctor = subprocess.run(
        [sys.executable, "-c", "from sglang_shims.cli.doctor.checks import tested\n"
         "from sglang_shims.cli.doctor.facts import Facts\n"
         "from sglang_shims.engine.gates import Environment\n"
         f"env = Environment(versions={{'sglang': '{NEW}'}}, hermetic=True)\n"
         "print(tested.check_tested(Facts(env=env))[0].detail)"],
        cwd=repo, env=env, capture_output=True, text=True, check=True)
    assert doctor.stdout.startswith(f"sglang {NEW} is newer than the tested matrix (newest"
                                    f" tested: {TESTED})")

    # 3. the patch for the break, then the refresh indexes it and regenerates the catalog
    folder = repo / "patches" / PATCH_ID
    folder.mkdir()
    (folder / "manifest.toml").write_text(manifest())
    (folder / "patch.py").write_text("def apply(ctx):\n    pass\n")
    assert f"{PATCH_ID} is not indexed" in subprocess.run(
        [sys.executable, "-m", "tools.refresh", "--check"], cwd=repo, env=env,
        capture_output=True, text=True, check=False).stdout
    refresh("release-index", "catalog", "patches-page")  # what a new patch changes
    assert "STALE" not in refresh("--check")
    present = json.loads((repo / "tests" / "data" / "release_index.json").read_text())
    assert present["patches"][PATCH_ID]["present"] == [[NEW, NEW]]

    # 4. the range test agrees with the manifest
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n0", "-p", "no:cacheprovider",
                           "tests/wheels/test_patch_ranges.py", "-k",
                           f"range_matches and {PATCH_ID}"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout[-3000:]
