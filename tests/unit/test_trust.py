"""``_trust``'s two rules, private files and trusted code, one case at a time in this process.

``tests/process/test_security.py`` performs the attacks for real, as a second user; here each
branch of the helpers is pinned on files given their owners with ``os.chown`` (the suite
runs as root, as CI does).  The ``user`` fixture makes ``_trust`` take an ordinary uid for
its own, so "yours", "root's" and "another user's" are three different owners, as they are
for a user who is not root.
"""

from __future__ import annotations

import errno
import os
import pwd
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sglang_shims import _trust

OTHER = 65534  # "nobody"
USER = next(uid for uid in range(4242, 5000) if uid not in {p.pw_uid for p in pwd.getpwall()})


@pytest.fixture(autouse=True)
def _root() -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.skip("not root: files of other owners are made with os.chown")
    old = os.umask(0o022)  # the modes asserted below are what 0o022 leaves
    yield
    os.umask(old)


@pytest.fixture
def user(monkeypatch: pytest.MonkeyPatch) -> int:
    """``_trust`` takes the unnamed uid ``USER`` (not root) for its own."""
    monkeypatch.setattr(_trust, "me", lambda: USER)
    return USER


def owned(path: Path, uid: int, mode: int, *, folder: bool = True) -> Path:
    if folder:
        path.mkdir()
    else:
        path.write_bytes(b"data")
    os.chown(path, uid, uid)
    path.chmod(mode)
    return path


def info(uid: int, mode: int, gid: int = 0) -> os.stat_result:
    return os.stat_result((stat.S_IFDIR | mode, 1, 1, 1, uid, gid, 0, 0, 0, 0))


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


# -- who we are ---------------------------------------------------------------------------------


def test_not_private_is_a_permission_error_that_reads_as_its_reason() -> None:
    exc = _trust.NotPrivate("x is a symbolic link")
    assert isinstance(exc, OSError) and exc.errno == errno.EPERM
    assert exc.reason == str(exc) == "x is a symbolic link"


def test_me_is_the_effective_uid_and_whoami_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _trust.me() == os.geteuid() == 0
    assert _trust.whoami() == "root (uid 0)"
    monkeypatch.setattr(_trust, "me", lambda: USER)
    assert _trust.whoami() == f"uid {USER}"  # no name for it


def test_without_uids_whoami_is_the_username(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_trust, "me", lambda: None)
    monkeypatch.setenv("USERNAME", "ada")
    assert _trust.whoami() == "ada"
    monkeypatch.delenv("USERNAME")
    assert _trust.whoami() == "you"


def test_user_folder_is_per_uid(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _trust.user_folder() == Path(tempfile.gettempdir()) / "sglang-shims-0"
    monkeypatch.setattr(_trust, "me", lambda: None)
    assert _trust.user_folder() == Path(tempfile.gettempdir()) / "sglang-shims-user"


# -- owner_problem ------------------------------------------------------------------------------


def test_owner_problem_for_an_ordinary_user(user: int) -> None:
    assert _trust.owner_problem(info(user, 0o755), "f", root_too=False) is None
    assert _trust.owner_problem(info(0, 0o755), "f", root_too=False) == (
        f"f is owned by uid 0, not by you (uid {user})")
    assert _trust.owner_problem(info(0, 0o755), "f", root_too=True) is None
    assert _trust.owner_problem(info(OTHER, 0o755), "f", root_too=True) == (
        f"f is owned by uid {OTHER}, not by you (uid {user}) or root")
    assert _trust.owner_problem(info(user, 0o775, gid=7), "f", root_too=False) == (
        "f is group-writable (gid 7)")
    assert _trust.owner_problem(info(0, 0o757), "f", root_too=True) == "f is world-writable"
    assert _trust.owner_problem(info(user, 0o777, gid=7), "f", root_too=False) == (
        "f is world-writable")


def test_owner_problem_for_root_does_not_offer_root_twice() -> None:
    assert _trust.owner_problem(info(OTHER, 0o755), "f", root_too=True) == (
        f"f is owned by uid {OTHER}, not by you (uid 0)")
    assert _trust.owner_problem(info(0, 0o700), "f", root_too=False) is None


def test_owner_problem_without_uids_finds_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_trust, "me", lambda: None)
    assert _trust.owner_problem(info(OTHER, 0o777), "f", root_too=False) is None


# -- private folders ----------------------------------------------------------------------------


def test_open_folder_makes_every_missing_folder_0700(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir(mode=0o755)
    path = tmp_path / "a" / "b" / "c"
    fd = _trust.open_folder(path)
    try:
        assert os.fstat(fd).st_ino == path.stat().st_ino
    finally:
        os.close(fd)
    assert (mode(tmp_path / "a"), mode(path.parent), mode(path)) == (0o755, 0o700, 0o700)


def test_open_folder_refuses_a_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    before = open_fds()
    with pytest.raises(_trust.NotPrivate, match=r"link is a symbolic link$"):
        _trust.open_folder(tmp_path / "link")
    assert open_fds() == before


def test_open_folder_on_a_file_is_no_folder(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        _trust.open_folder(tmp_path / "file", create=False)


def test_open_folder_refuses_another_users_or_a_shared_folder(tmp_path: Path) -> None:
    theirs = owned(tmp_path / "theirs", OTHER, 0o700)
    shared = owned(tmp_path / "shared", 0, 0o770)
    before = open_fds()
    with pytest.raises(_trust.NotPrivate, match=f"theirs is owned by uid {OTHER}, not by you"):
        _trust.open_folder(theirs)
    with pytest.raises(_trust.NotPrivate, match="shared is group-writable"):
        _trust.check_folder(shared)
    assert open_fds() == before


def test_a_folder_is_private_to_its_user_not_to_root(tmp_path: Path, user: int) -> None:
    mine = owned(tmp_path / "mine", user, 0o700)
    roots = owned(tmp_path / "roots", 0, 0o700)
    _trust.check_folder(mine)
    with pytest.raises(_trust.NotPrivate, match=f"owned by uid 0, not by you \\(uid {user}\\)$"):
        _trust.check_folder(roots)


def test_check_folder_makes_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        _trust.check_folder(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        _trust.open_folder(tmp_path / "missing", create=False)
    assert not (tmp_path / "missing").exists()
    _trust.check_folder(owned(tmp_path / "mine", 0, 0o755))


def test_open_folder_closes_its_descriptor_when_fstat_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(fd: int) -> os.stat_result:
        raise OSError(errno.EIO, "I/O error")

    before = open_fds()
    with monkeypatch.context() as patch:
        patch.setattr(os, "fstat", broken)
        with pytest.raises(OSError, match="I/O error"):
            _trust.open_folder(tmp_path)
    assert open_fds() == before


# -- private files ------------------------------------------------------------------------------


def test_write_file_writes_atomically_into_a_folder_it_makes(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    before = open_fds()
    assert _trust.write_file(folder, "1.json", b"{}") == folder / "1.json"
    assert open_fds() == before
    assert (folder / "1.json").read_bytes() == b"{}"
    assert (mode(folder), mode(folder / "1.json")) == (0o700, 0o600)
    assert sorted(p.name for p in folder.iterdir()) == ["1.json"]


def test_write_file_replaces_a_crashs_leftover(tmp_path: Path) -> None:
    folder = owned(tmp_path / "reports", 0, 0o700)
    (folder / ".1.json.tmp").write_bytes(b"half")
    (folder / "1.json").write_bytes(b"old")
    _trust.write_file(folder, "1.json", b"new")
    assert (folder / "1.json").read_bytes() == b"new"
    assert sorted(p.name for p in folder.iterdir()) == ["1.json"]


def test_write_file_refuses_a_folder_that_is_not_private(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(_trust.NotPrivate, match="symbolic link"):
        _trust.write_file(tmp_path / "link", "1.json", b"{}")
    assert list((tmp_path / "real").iterdir()) == []


def test_open_lock_makes_a_private_lock_file(tmp_path: Path) -> None:
    before = open_fds()
    fd = _trust.open_lock(tmp_path / "locks", "x.lock")
    try:
        os.write(fd, b"pid")
        assert os.pread(fd, 3, 0) == b"pid"
    finally:
        os.close(fd)
    assert open_fds() == before
    assert (mode(tmp_path / "locks"), mode(tmp_path / "locks" / "x.lock")) == (0o700, 0o600)


def test_open_lock_refuses_a_link_or_a_folder_in_its_place(tmp_path: Path) -> None:
    folder = owned(tmp_path / "locks", 0, 0o700)
    (folder / "x.lock").symlink_to(tmp_path / "elsewhere")
    (folder / "d.lock").mkdir()
    before = open_fds()
    with pytest.raises(_trust.NotPrivate, match=r"locks/x\.lock is a symbolic link$"):
        _trust.open_lock(folder, "x.lock")
    with pytest.raises(IsADirectoryError):
        _trust.open_lock(folder, "d.lock")
    assert open_fds() == before
    assert not (tmp_path / "elsewhere").exists()


def test_open_lock_refuses_a_lock_file_that_is_not_the_users(tmp_path: Path, user: int) -> None:
    folder = owned(tmp_path / "locks", user, 0o700)
    owned(folder / "root.lock", 0, 0o600, folder=False)
    owned(folder / "mine.lock", user, 0o600, folder=False)
    before = open_fds()
    with pytest.raises(_trust.NotPrivate, match=r"root\.lock is owned by uid 0"):
        _trust.open_lock(folder, "root.lock")
    assert open_fds() == before
    os.close(_trust.open_lock(folder, "mine.lock"))


def test_read_file_reads_only_the_users_regular_files(tmp_path: Path, user: int) -> None:
    mine = owned(tmp_path / "mine", user, 0o600, folder=False)
    roots = owned(tmp_path / "roots", 0, 0o644, folder=False)
    theirs = owned(tmp_path / "theirs", OTHER, 0o600, folder=False)
    assert _trust.read_file(mine) == b"data"
    with pytest.raises(_trust.NotPrivate, match="roots is owned by uid 0"):
        _trust.read_file(roots)
    assert _trust.read_file(roots, root_too=True) == b"data"
    with pytest.raises(_trust.NotPrivate, match=f"theirs is owned by uid {OTHER}"):
        _trust.read_file(theirs, root_too=True)


def test_read_file_refuses_a_link_and_what_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    os.mkfifo(tmp_path / "fifo", 0o600)
    before = open_fds()
    with pytest.raises(_trust.NotPrivate, match=r"link is a symbolic link$"):
        _trust.read_file(tmp_path / "link")
    with pytest.raises(_trust.NotPrivate, match=r"fifo is not a regular file$"):
        _trust.read_file(tmp_path / "fifo")
    with pytest.raises(FileNotFoundError):
        _trust.read_file(tmp_path / "missing")
    assert open_fds() == before


# -- trusted code -------------------------------------------------------------------------------


def test_a_chain_of_the_users_and_roots_folders_is_trusted(tmp_path: Path, user: int) -> None:
    sticky = owned(tmp_path / "sticky", 0, 0o1777)  # like /tmp
    mine = owned(sticky / "mine", user, 0o755)
    roots = owned(mine / "roots", 0, 0o755)
    (tmp_path / "link").symlink_to(roots)
    assert _trust.chain_problem(mine) is None
    assert _trust.chain_problem(roots) is None
    assert _trust.chain_problem(tmp_path / "link") is None


def test_a_folder_that_is_not_a_trusted_folder(tmp_path: Path, user: int) -> None:
    theirs = owned(tmp_path / "theirs", OTHER, 0o755)
    loose = owned(tmp_path / "loose", user, 0o775)
    (tmp_path / "file").write_bytes(b"")
    (tmp_path / "link").symlink_to(theirs)
    assert _trust.chain_problem(tmp_path / "missing") == (
        "cannot stat it (No such file or directory)")
    assert _trust.chain_problem(tmp_path / "file") == "it is not a directory"
    assert _trust.chain_problem(theirs) == (
        f"it is owned by uid {OTHER}, not by you (uid {user}) or root")
    assert _trust.chain_problem(tmp_path / "link") == _trust.chain_problem(theirs)
    assert _trust.chain_problem(loose) == f"it is group-writable (gid {user})"


def test_a_folder_above_that_another_user_owns_or_may_write(tmp_path: Path, user: int) -> None:
    theirs = owned(tmp_path / "theirs", OTHER, 0o755)
    loose = owned(tmp_path / "loose", 0, 0o775)
    assert _trust.chain_problem(owned(theirs / "mine", user, 0o755)) == (
        f"{theirs}, above it, is owned by uid {OTHER}, not by you or root")
    assert _trust.chain_problem(owned(loose / "mine", user, 0o755)) == (
        f"{loose}, above it, is group-writable (gid 0) and not sticky, so another user can"
        " replace what is in it")


def test_a_folder_above_that_cannot_be_read(tmp_path: Path, user: int,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    mine = owned(tmp_path / "mine", user, 0o755)
    above = Path(os.path.realpath(tmp_path))
    real_stat = Path.stat

    def stat_(self: Path, *, follow_symlinks: bool = True) -> os.stat_result:
        if self == above:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_stat(self, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(Path, "stat", stat_)
    assert _trust.chain_problem(mine) == f"cannot stat {above} (Permission denied)"


def test_without_uids_only_the_kind_of_folder_counts(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_trust, "me", lambda: None)
    theirs = owned(tmp_path / "theirs", OTHER, 0o777)
    assert _trust.chain_problem(owned(theirs / "x", OTHER, 0o777)) is None


def test_an_entry_in_a_trusted_folder(tmp_path: Path, user: int) -> None:
    owned(tmp_path / "code.py", user, 0o644, folder=False)
    owned(tmp_path / "roots.py", 0, 0o644, folder=False)
    owned(tmp_path / "theirs.py", OTHER, 0o644, folder=False)
    owned(tmp_path / "pkg", user, 0o755)
    (tmp_path / "link.py").symlink_to(tmp_path / "code.py")

    def problem(name: str, *, folder: bool = False) -> str | None:
        return _trust.entry_problem(tmp_path / name, folder=folder)

    assert problem("code.py") is None and problem("roots.py") is None
    assert problem("pkg", folder=True) is None
    assert problem("missing.py") == "cannot stat missing.py (No such file or directory)"
    assert problem("link.py") == "link.py is a symbolic link"
    assert problem("pkg") == "pkg is not a regular file"
    assert problem("code.py", folder=True) == "code.py is not a folder"
    assert problem("theirs.py") == (
        f"theirs.py is owned by uid {OTHER}, not by you (uid {user}) or root")
