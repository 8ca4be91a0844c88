"""Attacks by another local user, each performed for real and shown refused.

The suite runs as root on CI; each attack plants its files as a second user (a forked
child that drops to uid/gid 65534 with ``os.setuid``), then the victim -- root -- runs
sglang-shims as a user would.  Without root these tests skip (a process cannot become
another user).  The rules they enforce are SECURITY.md's, one test (or parametrised
group) per rule, named there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sglang_shims import _trust
from sglang_shims.engine import record

from ..support.packages import manifest_text
from ..support.programs import program
from ..support.run import REPO, clean_env, run_cli, run_python

OTHER = 65534  # "nobody": the attacker


def as_other(action: Callable[[], None]) -> None:
    """Run ``action`` in a forked child that has become another user (uid/gid 65534)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child leaves with os._exit
        code = 1
        try:
            os.setgroups([])
            os.setgid(OTHER)
            os.setuid(OTHER)
            action()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the other user's step failed"


@pytest.fixture
def arena() -> Iterator[Path]:
    """A folder both users can reach; ``arena/tmp`` (1777) stands in for /tmp."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("not root: the attacks need a second user, made with os.setuid")
    # in /tmp itself: the suite's own TMPDIR (conftest) lies under pytest's 0700 folder,
    # which the second user cannot enter
    base = Path(tempfile.mkdtemp(prefix="sglang-shims-security-", dir="/tmp"))
    base.chmod(0o755)
    (base / "tmp").mkdir()
    (base / "tmp").chmod(0o1777)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def secret(arena: Path) -> Path:
    victim = arena / "victim"
    victim.write_text("secret")
    victim.chmod(0o600)
    return victim


def owner(path: Path) -> int:
    return path.lstat().st_uid


def launch(arena: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m sglang_shims.launch script.py`` as root, with ``arena/tmp`` as TMPDIR."""
    script = arena / "script.py"
    script.write_text("import os, pathlib\nprint(os.getpid())\n"
                      f"pathlib.Path({str(arena / 'ran')!r}).write_text('')\n")
    full = clean_env(PYTHONPATH=str(REPO), TMPDIR=str(arena / "tmp"), **env)
    return subprocess.run([sys.executable, "-m", "sglang_shims.launch", *args, str(script)],
                          env=full, capture_output=True, text=True, timeout=120, check=False)


def reported_folder(result: subprocess.CompletedProcess[str]) -> Path:
    line = next(ln for ln in result.stderr.splitlines() if "process reports go to " in ln)
    return Path(line.split("process reports go to ", 1)[1].split(";", 1)[0])


# -- rule 1: report folders are per user, private, and never reused from someone else ----------


@pytest.mark.parametrize("squat", ["folder", "link"])
def test_launcher_refuses_a_report_folder_another_user_made(arena: Path, squat: str) -> None:
    """The other user pre-creates the launcher's folder (as a 777 folder, or a
    link to one of theirs) full of links to root's 0600 file, and also sprays the old
    predictable ``sglang-shims/<ts>-<pid>`` names; root's launcher must write nowhere
    near them."""
    shared = arena / "tmp"
    victim = secret(arena)
    mine = shared / f"sglang-shims-{os.geteuid()}"
    first = int(Path("/proc/sys/kernel/ns_last_pid").read_text()) \
        if Path("/proc/sys/kernel/ns_last_pid").exists() else os.getpid()

    def plant() -> None:
        folder = mine
        if squat == "link":
            folder = shared / "theirs"
            folder.mkdir()
            mine.symlink_to(folder)
        else:
            mine.mkdir()
        folder.chmod(0o777)
        old = shared / "sglang-shims"
        old.mkdir()
        old.chmod(0o777)
        for pid in range(first, first + 300):
            (folder / f".{pid}.json.tmp").symlink_to(victim)
            (folder / f"{pid}.json").symlink_to(victim)
        stamps = {time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() + s))
                  for s in range(4)}
        for pid in range(first, first + 50):  # the old per-run folder names too
            for stamp in stamps:
                run = old / f"{stamp}-{pid}"
                run.mkdir()
                run.chmod(0o777)
                (run / f".{pid}.json.tmp").symlink_to(victim)

    as_other(plant)
    assert owner(mine) == OTHER
    result = launch(arena)
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "secret"
    assert f"not using {mine}" in result.stderr
    folder = reported_folder(result)
    pid = result.stdout.strip()
    report = folder / f"{pid}.json"
    assert json.loads(report.read_text())["process"]["pid"] == int(pid)
    info = folder.lstat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o700)
    assert stat.S_IMODE(report.lstat().st_mode) == 0o600
    assert folder.parent == shared  # not inside the folder the other user made
    squatted = shared / "theirs" if squat == "link" else mine
    assert {owner(p) for p in squatted.iterdir()} == {OTHER}  # root made nothing there


def test_each_user_launches_into_their_own_folder(arena: Path) -> None:
    """Root launches first; another user's reports must still be written (they
    were refused with "Permission denied" when everyone shared one folder)."""
    first = launch(arena)
    assert first.returncode == 0, first.stderr
    assert reported_folder(first).parent == arena / "tmp" / "sglang-shims-0"
    from sglang_shims import launch as launcher

    tempfile.tempdir = str(arena / "tmp")

    def other_user_launches() -> None:
        folder, refused = launcher.default_report_dir()
        assert refused is None, refused
        written = record.write(folder, {"process": {"pid": os.getpid()}, "patches": {}})
        assert written.is_file() and written.parent == folder
        (arena / "tmp" / "child-made").write_text(str(folder))

    try:
        as_other(other_user_launches)
    finally:
        tempfile.tempdir = None
    folder = Path((arena / "tmp" / "child-made").read_text())
    assert folder.parent == arena / "tmp" / f"sglang-shims-{OTHER}"
    assert owner(folder) == OTHER and owner(folder.parent) == OTHER
    assert stat.S_IMODE(folder.parent.lstat().st_mode) == 0o700


@pytest.mark.parametrize(("whose", "refusal"), [("theirs", "owned by uid 65534"),
                                                ("sticky-tmp", "world-writable")])
def test_report_is_never_written_through_a_planted_link(arena: Path, whose: str,
                                                        refusal: str) -> None:
    """The report's temporary file: in a folder the other user made, or in root's sticky
    /tmp itself (SGLANG_SHIMS_REPORT_DIR=/tmp), links named ``.<pid>.json.tmp`` and
    ``<pid>.json`` point at root's 0600 file; the write is refused and the file is
    untouched.  In root's own folder a leftover link is replaced, not followed."""
    victim = secret(arena)
    shared = arena / "tmp" / "reports" if whose == "theirs" else arena / "tmp"
    pid = os.getpid()

    def plant() -> None:
        if whose == "theirs":
            shared.mkdir()
            shared.chmod(0o777)
        (shared / f".{pid}.json.tmp").symlink_to(victim)
        (shared / f"{pid}.json").symlink_to(victim)

    as_other(plant)
    with pytest.raises(_trust.NotPrivate, match=refusal):
        record.write(shared, {"patches": {}})
    assert victim.read_text() == "secret"

    own = arena / "own"
    own.mkdir(mode=0o700)
    (own / f".{pid}.json.tmp").symlink_to(victim)
    written = record.write(own, {"patches": {}})
    assert victim.read_text() == "secret"
    assert json.loads(written.read_text()) == {"patches": {}}
    assert stat.S_ISREG(written.lstat().st_mode) and not (own / f".{pid}.json.tmp").exists()


def test_a_shared_report_dir_stops_the_launcher_not_a_process(arena: Path) -> None:
    """The same through real processes: the report folder names a folder the other user
    made.  The launcher, told so on its command line, stops before running anything
    (exit 2, the reason, nothing written); a process that only inherits the setting
    warns once and keeps running."""
    shared = arena / "tmp" / "theirs"

    def plant() -> None:
        shared.mkdir()
        shared.chmod(0o755)

    as_other(plant)
    result = launch(arena, "--report-dir", str(shared))
    assert result.returncode == 2, result.stderr
    assert f"cannot keep process reports in {shared}" in result.stderr
    assert "owned by uid 65534" in result.stderr and "Traceback" not in result.stderr
    assert not (arena / "ran").exists()
    proc = run_python("import sglang_shims; sglang_shims.install(); print('still running')",
                      env={"SGLANG_SHIMS_REPORT_DIR": str(shared), "TMPDIR": str(arena / "tmp")})
    assert proc.returncode == 0 and "still running" in proc.stdout, proc.stderr
    assert f"cannot write the report to {shared}" in proc.stderr
    assert "owned by uid 65534" in proc.stderr
    assert list(shared.iterdir()) == []


def test_relative_report_dir_is_resolved_once(arena: Path) -> None:
    """A relative SGLANG_SHIMS_REPORT_DIR and a chdir after the first watched
    import gave two folders; now one (and children inherit the absolute path)."""
    here, elsewhere = arena / "here", arena / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    patches = clean_patch(arena / "sp-clean")
    result = run_python(program("process/security/chdir_after_import"),
                        paths=(fake_module(arena),), cwd=here, args=(str(elsewhere),),
                        env={"SGLANG_SHIMS_PATH": str(patches),
                             "SGLANG_SHIMS_REPORT_DIR": "reports"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(here / "reports")
    assert len(list((here / "reports").glob("*.json"))) == 1
    assert not (elsewhere / "reports").exists()


# -- rule 2: status reads only the current user's folders and files ----------------------------


def status(arena: Path, *args: str) -> tuple[int, str]:
    result = run_cli("status", *args, TMPDIR=str(arena / "tmp"))
    data = result.json()
    assert isinstance(data, dict)
    return data["exit"], "\n".join(result.stdout.strip().splitlines()[:-1]) + result.stderr


def planted_report(folder: Path, pid: int) -> None:
    data = {"process": {"pid": pid, "ppid": 1, "role": "main", "origin": "pth",
                        "argv": ["planted"], "time": 1e10},
            "patches": {"sgl-kernel-fused-marlin-moe": {"state": "applied", "reason": "x"}}}
    (folder / f"{pid}.json").write_text(json.dumps(data))


def test_status_never_shows_another_users_run(arena: Path) -> None:
    """The other user squats root's per-user folder with a run saying
    "applied", and offers a folder of theirs; status shows neither and says why."""
    mine = arena / "tmp" / "sglang-shims-0"
    theirs = arena / "tmp" / "theirs"
    shared = arena / "tmp" / "sglang-shims"  # the one folder every user once shared

    def plant() -> None:
        for folder in (mine, mine / "29991231-000000-1", theirs, shared,
                       shared / "29991231-000000-1"):
            folder.mkdir()
            folder.chmod(0o755)
        planted_report(mine / "29991231-000000-1", 1)
        planted_report(theirs, 2)
        planted_report(shared / "29991231-000000-1", 1)

    as_other(plant)
    code, text = status(arena)
    assert "planted" not in text and "applied in" not in text
    assert f"{mine} not read: {mine} is owned by uid 65534" in text
    assert code != 0
    code, text = status(arena, "--report-dir", str(theirs))
    assert "planted" not in text and "owned by uid 65534" in text and code != 0


def test_status_skips_files_in_its_folder_it_did_not_write(arena: Path) -> None:
    """In root's own run folder, a report owned by another user and a link to the other
    user's report are skipped with the reason; root's own report is shown, with whose."""
    run = arena / "tmp" / "sglang-shims-0" / "20261201-000000-x"
    run.mkdir(parents=True, mode=0o700)
    theirs = arena / "tmp" / "theirs"

    def plant() -> None:
        theirs.mkdir()
        planted_report(theirs, 3)

    as_other(plant)
    record.write(run, {"process": {"pid": 7, "ppid": 1, "role": "main", "origin": "pth",
                                   "argv": ["mine"], "time": 1.0}, "patches": {}})
    planted_report(run, 4)
    os.chown(run / "4.json", OTHER, OTHER)
    (run / "5.json").symlink_to(theirs / "3.json")
    _, text = status(arena)
    assert "reports of root (uid 0)" in text and "mine" in text
    assert "planted" not in text
    assert "4.json: " in text and "owned by uid 65534" in text
    assert "5.json: " in text and "symbolic link" in text


# -- rule 3: code from SGLANG_SHIMS_PATH no one else could have written -------------------------

EVIL = """
import pathlib
pathlib.Path({marker!r}, __name__).write_text("ATTACKER CODE RAN")

def apply(ctx):
    ctx.setattr(ctx.module, "VALUE", "evil")
"""
GOOD = "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 'patched')\n"


def fake_module(arena: Path) -> Path:
    mods = arena / "mods"
    mods.mkdir(exist_ok=True)
    (mods / "mymod.py").write_text("VALUE = 'stock'\n")
    return mods


def patch_folder(root: Path, patch_id: str, code: str | None = GOOD, extra: str = "") -> Path:
    folder = root / patch_id
    folder.mkdir(parents=True)
    for made in (root, folder):
        made.chmod(0o755)
    (folder / "manifest.toml").write_text(textwrap.dedent(
        manifest_text(patch_id, "mymod")).replace('default = "on"', f'default = "on"\n{extra}'))
    if code is not None:
        (folder / "patch.py").write_text(code)
    return folder


def clean_patch(root: Path) -> Path:
    patch_folder(root, "clean")
    return root


def refused_cases(arena: Path) -> tuple[list[Path], dict[str, str], dict[str, str]]:
    """Every such set-up; returns the roots, {patch id: expected refusal} and
    {root: expected warning}.  Every evil file writes a marker named after its module
    when it runs."""
    markers = arena / "markers"
    markers.mkdir(mode=0o777)
    markers.chmod(0o777)
    evil777 = arena / "tmp" / "evil777"
    evil = EVIL.format(marker=str(markers))

    def plant() -> None:
        evil777.mkdir()
        evil777.chmod(0o777)
        (evil777 / "evil.py").write_text(evil)
        (evil777 / "mine").mkdir()
        (evil777 / "mine" / "manifest.toml").write_text(manifest_text("linked-dir", "mymod"))
        (evil777 / "mine" / "patch.py").write_text(evil)

    as_other(plant)
    sp = arena / "sp"
    refused: dict[str, str] = {}
    folder = patch_folder(sp / "C", "c-symlink", None)  # patch.py a link to their file
    (folder / "patch.py").symlink_to(evil777 / "evil.py")
    refused["c-symlink"] = "patch.py is a symbolic link"
    patch_folder(sp / "D", "d-abscode", None, f'code = "{evil777 / "evil.py"}"')
    refused["d-abscode"] = "must be a plain file name inside the patch folder"
    patch_folder(sp / "E", "e-traverse", None, 'code = "../../../tmp/evil777/evil.py"')
    refused["e-traverse"] = "must be a plain file name inside the patch folder"
    (patch_folder(sp / "B", "b-loose-code", evil) / "patch.py").chmod(0o666)
    refused["b-loose-code"] = "patch.py is world-writable"
    manifest = patch_folder(sp / "H", "h-their-manifest", evil) / "manifest.toml"
    os.chown(manifest, OTHER, OTHER)
    refused["h-their-manifest"] = "manifest.toml is owned by uid 65534"
    (patch_folder(sp / "H2", "h-loose-manifest", evil) / "manifest.toml").chmod(0o666)
    refused["h-loose-manifest"] = "manifest.toml is world-writable"
    folder = patch_folder(sp / "I", "i-group-folder", evil)
    os.chown(folder, 0, OTHER)
    folder.chmod(0o775)
    refused["i-group-folder"] = "i-group-folder is group-writable (gid 65534)"
    code = patch_folder(sp / "I2", "i-group-code", evil) / "patch.py"
    os.chown(code, 0, OTHER)
    code.chmod(0o664)
    refused["i-group-code"] = "patch.py is group-writable (gid 65534)"
    manifest = patch_folder(sp / "I3", "i-group-manifest", evil) / "manifest.toml"
    os.chown(manifest, 0, OTHER)
    manifest.chmod(0o664)
    refused["i-group-manifest"] = "manifest.toml is group-writable (gid 65534)"
    os.chown(patch_folder(sp / "J", "j-their-code", evil) / "patch.py", OTHER, OTHER)
    refused["j-their-code"] = "patch.py is owned by uid 65534"
    (sp / "K").mkdir()
    (sp / "K" / "linked-dir").symlink_to(evil777 / "mine")
    refused["linked-dir"] = "linked-dir is a symbolic link"
    warned: dict[str, str] = {}
    patch_folder(sp / "G", "g-group-root", evil)
    os.chown(sp / "G", 0, OTHER)
    (sp / "G").chmod(0o775)
    warned[str(sp / "G")] = "refused: it is group-writable (gid 65534)"
    loose_parent = arena / "loose"  # a root-owned entry below a 777 non-sticky parent
    patch_folder(loose_parent / "jdir", "row19", evil)
    loose_parent.chmod(0o777)
    warned[str(loose_parent / "jdir")] = (f"refused: {loose_parent}, above it, is"
                                          " world-writable and not sticky")
    roots = [*sorted(sp.iterdir()), loose_parent / "jdir"]
    return roots, refused, warned


def test_extra_patches_that_another_user_could_have_written_never_run(arena: Path) -> None:
    """Links, absolute and ``..`` code paths, files and folders another user
    owns or may write, a loose folder above the entry.  Each was "ATTACKER CODE RAN as
    uid 0"; now none runs, each patch is ``failed`` with the reason in status() and in
    ``sglang-shims list``, and a clean patch beside them still applies (the harness can
    tell running from not running)."""
    roots, refused, warned = refused_cases(arena)
    clean = clean_patch(arena / "sp-clean")
    path = os.pathsep.join(map(str, [*roots, clean]))
    result = run_python("""
        import json, mymod, sglang_shims
        print(json.dumps({"value": mymod.VALUE, "status": sglang_shims.status()}))
    """, paths=(fake_module(arena),), env={"SGLANG_SHIMS_PATH": path})
    assert result.returncode == 0, result.stderr
    out = result.json()
    assert isinstance(out, dict)
    assert list((arena / "markers").iterdir()) == []
    assert out["value"] == "patched"
    assert out["status"]["clean"]["state"] == "applied"
    for patch_id, reason in refused.items():
        entry = out["status"][patch_id]
        assert entry["state"] == "failed" and reason in entry["reason"], (patch_id, entry)
        assert entry["reason"].startswith("refused: ")
    for root, reason in warned.items():
        assert f"SGLANG_SHIMS_PATH entry {root!r} {reason}" in result.stderr
    listing = run_python("""
        from sglang_shims.cli import main
        main(["list", "--json"])
    """, activate=False, env={"SGLANG_SHIMS_PATH": path})
    warnings = json.loads(listing.stdout)["warnings"]
    for patch_id, reason in refused.items():
        assert any(w.startswith(f"patch {patch_id} not loaded: refused: ") and reason in w
                   for w in warnings), (patch_id, warnings)
    assert list((arena / "markers").iterdir()) == []


@pytest.mark.parametrize("code", ["/abs/evil.py", "../evil.py", "sub/evil.py", "..", "",
                                  "a\\b.py" if os.sep == "\\" else "x/../patch.py"])
def test_code_must_be_a_plain_name_in_the_patch_folder(code: str) -> None:
    from sglang_shims.catalog.load import code_name_problem

    assert code_name_problem(code) is not None
    assert code_name_problem("patch.py") is None and code_name_problem("fix_v2.py") is None


# -- rule 4: lock files and caches follow the same rules -----------------------------------------


def test_compile_lock_is_not_taken_through_a_link_in_a_shared_cache(arena: Path) -> None:
    """TRITON_CACHE_DIR shared by several users (a 777 folder): the other user plants the
    lock file's name as a link to a file root would create; the lock is taken in root's
    private folder instead, and nothing is created through the link."""
    cache = arena / "tmp" / "triton"
    target = arena / "root-only" / "created-through-link"
    (arena / "root-only").mkdir(mode=0o700)

    def plant() -> None:
        cache.mkdir()
        cache.chmod(0o777)
        (cache / "sglang_shims-compile.lock").symlink_to(target)

    as_other(plant)
    result = run_python("""
        import json
        from sglang_shims.kernels import compile_lock as c
        ran = []
        c.launch(("k",), lambda: ran.append(1))
        print(json.dumps({"ran": ran, "locked": len(c.waits), "broken": c.broken}))
    """, activate=False, env={"TRITON_CACHE_DIR": str(cache), "TMPDIR": str(arena / "tmp")})
    assert result.json() == {"ran": [1], "locked": 1, "broken": None}, result.stderr
    assert not target.exists()
    lock = arena / "tmp" / "sglang-shims-0" / "sglang_shims-compile.lock"
    assert stat.S_IMODE(lock.lstat().st_mode) == 0o600


def test_wheel_cache_follows_xdg_and_refuses_a_folder_another_user_owns(
        arena: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run the wheels they unpack, so a cache another user can write is refused;
    the default honours XDG_CACHE_HOME and is made 0700."""
    from sglang_shims.testing import wheels

    monkeypatch.delenv("SGLANG_SHIMS_WHEEL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(arena / "xdg"))
    made = wheels.cache_dir()
    assert made == arena / "xdg" / "sglang-shims" / "wheels"
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    theirs = arena / "tmp" / "wheels"

    def plant() -> None:
        theirs.mkdir()
        theirs.chmod(0o755)

    as_other(plant)
    monkeypatch.setenv("SGLANG_SHIMS_WHEEL_CACHE", str(theirs))
    with pytest.raises(RuntimeError, match="owned by uid 65534"):
        wheels.cache_dir()


@pytest.mark.parametrize("mode", [0o620, 0o602])
def test_a_report_or_lock_file_others_may_write_is_refused(tmp_path: Path, mode: int) -> None:
    """What we read back (a report) or lock with (a lock file) must be ours alone: a
    file in our own folder that another group or everyone may write is refused like a
    foreign one, by the reader and by the lock."""
    folder = tmp_path / "ours"
    folder.mkdir(mode=0o700)
    report = folder / "123.json"
    report.write_text("{}")
    os.chown(report, 0, OTHER)
    report.chmod(mode)
    kind = re.escape("group-writable (gid 65534)" if mode & 0o020 else "world-writable")
    with pytest.raises(_trust.NotPrivate, match=kind):
        _trust.read_file(report)
    lock = folder / "x.lock"
    lock.write_text("")
    os.chown(lock, 0, OTHER)
    lock.chmod(mode)
    with pytest.raises(_trust.NotPrivate, match=kind):
        os.close(_trust.open_lock(folder, "x.lock"))
