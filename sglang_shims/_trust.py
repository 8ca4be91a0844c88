"""Files that are ours alone, and folders whose code we may run.

Why: sglang-shims runs in every process, root's included; it writes reports and lock
files in shared places (the system temp dir, Triton's cache) and runs patch code from the
folders named in ``SGLANG_SHIMS_PATH``.  Another local user must not be able to make us
write through a link they planted, show us a report they forged, or have us run code they
could have edited.  Two rules, one helper each:

* **Private** (what we write, and read back): a folder owned by the effective user, not a
  symbolic link, writable by nobody else.  It is opened once and every file operation goes
  through its descriptor, so renaming or swapping the path after the check changes
  nothing; files are created with ``O_EXCL|O_NOFOLLOW``, mode 0600, and renamed into place.
* **Trusted** (code we run): the resolved folder is owned by the user or root and writable
  by nobody else, and so is every folder above it up to ``/``, except that a folder above
  may be writable by others when it is sticky (like ``/tmp``), where no one else can
  rename or replace what the user or root made in it.

A leaf module (standard library only) so that the engine, the catalog, the CLI, the
kernels and the test helpers share one implementation without importing each other.
Nothing at interpreter start imports it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_OPEN_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class NotPrivate(OSError):
    """A folder or file another user could have made or changed; the message says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EPERM, reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


def me() -> int | None:
    """The effective uid (files are created with it); None where there are no uids."""
    return os.geteuid() if hasattr(os, "geteuid") else None


def whoami() -> str:
    """``name (uid N)`` for messages that say whose files they mean."""
    uid = me()
    if uid is None:
        return os.environ.get("USERNAME", "you")
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _writable_by_others(info: os.stat_result) -> str | None:
    if info.st_mode & stat.S_IWOTH:
        return "world-writable"
    if info.st_mode & stat.S_IWGRP:
        return f"group-writable (gid {info.st_gid})"
    return None


def owner_problem(info: os.stat_result, what: str, *, root_too: bool) -> str | None:
    """Why ``info`` is not ours alone (``root_too``: or root's), or None."""
    uid = me()
    if uid is not None:
        owners = {uid, 0} if root_too else {uid}
        if info.st_uid not in owners:
            by = f"you (uid {uid}) or root" if root_too and uid != 0 else f"you (uid {uid})"
            return f"{what} is owned by uid {info.st_uid}, not by {by}"
        loose = _writable_by_others(info)
        if loose:
            return f"{what} is {loose}"
    return None


# -- private folders and files ---------------------------------------------------------------


def user_folder() -> Path:
    """``<tmp>/sglang-shims-<uid>``: where the launcher's runs go; see :func:`open_folder`."""
    import tempfile  # not at import: it costs the engine's waking time

    uid = me()
    return Path(tempfile.gettempdir()) / f"sglang-shims-{'user' if uid is None else uid}"


def _make_folders(path: Path) -> None:
    """Create ``path`` and any missing parent, each 0700 (never loosening one that exists)."""
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass  # made meanwhile; open_folder checks whose it is


def open_folder(path: Path, *, create: bool = True) -> int:
    """A descriptor of ``path``, a private folder (made 0700 when missing and ``create``).

    Raises :class:`NotPrivate` when it is a link or another user's, or when others may
    write in it; OSError when it cannot be made or opened.
    """
    if create:
        _make_folders(path)
    try:
        fd = os.open(path, _OPEN_DIR | _NOFOLLOW)
    except OSError as exc:
        # a link opened with O_DIRECTORY|O_NOFOLLOW: ENOTDIR on Linux, ELOOP elsewhere
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and path.is_symlink():
            raise NotPrivate(f"{path} is a symbolic link") from None
        raise
    try:
        problem = owner_problem(os.fstat(fd), str(path), root_too=False)
    except OSError:
        os.close(fd)
        raise
    if problem:
        os.close(fd)
        raise NotPrivate(problem)
    return fd


def check_folder(path: Path) -> None:
    """Raise :class:`NotPrivate` (or OSError) unless ``path`` is an existing private folder."""
    os.close(open_folder(path, create=False))


def write_file(folder: Path, name: str, data: bytes) -> Path:
    """Write ``folder/name`` atomically; ``folder`` is made or checked private first.

    The temporary file is created exclusively, never through a link, readable by us
    only; the rename happens inside the checked folder's descriptor.
    """
    fd = open_folder(folder)
    tmp = f".{name}.tmp"
    try:
        try:
            os.unlink(tmp, dir_fd=fd)  # a crash's leftover: ours, since the folder is
        except FileNotFoundError:
            pass
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
                      | getattr(os, "O_CLOEXEC", 0), 0o600, dir_fd=fd)
        with os.fdopen(out, "wb") as stream:
            stream.write(data)
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)
    return folder / name


def open_lock(folder: Path, name: str) -> int:
    """A read-write descriptor of the lock file ``folder/name`` (private folder, 0600)."""
    fd = open_folder(folder)
    try:
        out = os.open(name, os.O_RDWR | os.O_CREAT | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                      0o600, dir_fd=fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotPrivate(f"{folder / name} is a symbolic link") from None
        raise
    finally:
        os.close(fd)
    problem = owner_problem(os.fstat(out), str(folder / name), root_too=False)
    if problem:
        os.close(out)
        raise NotPrivate(problem)
    return out


def read_file(path: Path, *, root_too: bool = False) -> bytes:
    """The bytes of ``path``, a regular file (not a link) owned by us (or ``root_too``).

    Raises :class:`NotPrivate` for anything else, OSError when it cannot be read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotPrivate(f"{path} is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotPrivate(f"{path} is not a regular file")
        problem = owner_problem(info, str(path), root_too=root_too)
        if problem:
            raise NotPrivate(problem)
        return stream.read()


# -- trusted code ------------------------------------------------------------------------------


def chain_problem(path: Path) -> str | None:
    """Why code in folder ``path`` could have been written by another user, or None.

    ``path`` is resolved first (a link the user named is followed, then judged by where
    it leads); the folder must be owned by the user or root and writable by nobody else;
    each folder above it must be owned by the user or root and, if others may write in
    it, sticky.
    """
    try:
        real = Path(os.path.realpath(path))
        info = real.stat()
    except OSError as exc:
        return f"cannot stat it ({exc.strerror})"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    problem = owner_problem(info, "it", root_too=True)
    if problem:
        return problem
    for above in real.parents:
        try:
            info = above.stat()
        except OSError as exc:
            return f"cannot stat {above} ({exc.strerror})"
        uid = me()
        if uid is not None and info.st_uid not in (uid, 0):
            return f"{above}, above it, is owned by uid {info.st_uid}, not by you or root"
        loose = _writable_by_others(info)
        if uid is not None and loose and not info.st_mode & stat.S_ISVTX:
            return (f"{above}, above it, is {loose} and not sticky, so another user can"
                    " replace what is in it")
    return None


def entry_problem(path: Path, *, folder: bool) -> str | None:
    """Why ``path`` (inside a trusted folder) is not trusted: a link, another user's,
    writable by others, or not a folder (``folder``) / regular file."""
    try:
        info = path.lstat()
    except OSError as exc:
        return f"cannot stat {path.name} ({exc.strerror})"
    if stat.S_ISLNK(info.st_mode):
        return f"{path.name} is a symbolic link"
    kind_ok = stat.S_ISDIR(info.st_mode) if folder else stat.S_ISREG(info.st_mode)
    if not kind_ok:
        return f"{path.name} is not a {'folder' if folder else 'regular file'}"
    return owner_problem(info, path.name, root_too=True)
