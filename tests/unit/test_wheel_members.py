"""A few files of a wheel read over byte ranges (``sglang_shims.testing.wheel_members``),
against a package index served from this process on 127.0.0.1: the PEP 691 page, ``HEAD``
and ``Range`` requests as PyPI answers them.  The wheel carries a large member that is never
asked for: reading two small files must not fetch it."""

from __future__ import annotations

import json
import os
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from sglang_shims.testing import wheel_members
from sglang_shims.testing.wheels import NotServed

WHEEL = "tiny_pkg-1.0-py3-none-any.whl"
BIG = 1 << 20


def _wheel() -> bytes:
    import io

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("tiny_pkg/a.py", "A = 1\n")
        archive.writestr("tiny_pkg/b.py", "B = 2\n")
        archive.writestr("tiny_pkg/big.bin", os.urandom(BIG))  # stored: not compressible
    return out.getvalue()


class Index:
    """What the fake index served: the bytes of the wheel it sent, by request."""

    def __init__(self) -> None:
        self.wheel = _wheel()
        self.sent = 0
        self.requests: list[str] = []
        self.url = ""


@pytest.fixture
def index() -> Iterator[Index]:
    state = Index()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:
            state.requests.append("HEAD " + self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(state.wheel)))
            self.end_headers()

        def do_GET(self) -> None:
            state.requests.append("GET " + self.path)
            if self.path == "/simple/tiny-pkg/":
                assert "application/vnd.pypi.simple.v1+json" in self.headers["Accept"]
                files = [{"filename": name, "url": f"{state.url}/files/{name}", **extra}
                         for name, extra in (("tiny_pkg-1.0.1-py3-none-any.whl", {}),
                                             ("tiny_pkg-1.0-cp99-none-any.whl",
                                              {"yanked": True}),
                                             ("tiny_pkg-1.0.tar.gz", {}), (WHEEL, {}))]
                body = json.dumps({"files": files}).encode()
                self.send_response(200)
            elif self.path == f"/files/{WHEEL}":
                first, last = (int(v) for v in self.headers["Range"][6:].split("-"))
                body = state.wheel[first:last + 1]
                state.sent += len(body)
                self.send_response(206)
            else:
                body = b""
                self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def local(index: Index, monkeypatch: pytest.MonkeyPatch) -> Index:
    real = wheel_members.wheel_url
    monkeypatch.setattr(wheel_members, "wheel_url",
                        lambda dist, version: real(dist, version, f"{index.url}/simple"))
    return index


def test_the_wheel_of_a_version_is_the_one_listed_under_its_normalised_name(
        index: Index) -> None:
    url = wheel_members.wheel_url("Tiny.Pkg", "1.0", f"{index.url}/simple")
    assert url == f"{index.url}/files/{WHEEL}"  # not 1.0.1's, not a yanked one, not an sdist
    with pytest.raises(RuntimeError, match="lists no wheel"):
        wheel_members.wheel_url("tiny-pkg", "2.0", f"{index.url}/simple")


def test_members_are_read_by_ranges_and_kept(local: Index, tmp_path: Path) -> None:
    folder = wheel_members.members("tiny-pkg", "1.0", ("tiny_pkg/a.py", "tiny_pkg/none.py"),
                                   tmp_path)
    assert folder == tmp_path / "members" / "tiny_pkg-1.0"
    assert (folder / "tiny_pkg" / "a.py").read_text() == "A = 1\n"
    assert not (folder / "tiny_pkg" / "b.py").exists()
    assert not (folder / "tiny_pkg" / "none.py").exists()  # not in the wheel: left out
    assert 0 < local.sent < BIG // 4, local.sent  # the directory and a.py, not big.bin
    asked = len(local.requests)
    assert wheel_members.members("tiny-pkg", "1.0", ("tiny_pkg/a.py",), tmp_path) == folder
    assert len(local.requests) == asked  # kept: nothing asked again
    wheel_members.members("tiny-pkg", "1.0", ("tiny_pkg/b.py",), tmp_path)
    assert (folder / "tiny_pkg" / "b.py").read_text() == "B = 2\n"
    assert (folder / "tiny_pkg" / "a.py").is_file()  # another caller's file stays
    assert sorted((folder / ".complete").read_text().split()) == [
        "tiny_pkg/a.py", "tiny_pkg/b.py", "tiny_pkg/none.py"]
    assert sorted(p.name for p in folder.parent.iterdir()) == ["tiny_pkg-1.0"]


def test_an_index_that_cannot_be_reached_is_not_served(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    real = wheel_members.wheel_url
    monkeypatch.setattr(wheel_members, "wheel_url",
                        lambda dist, version: real(dist, version,
                                                   f"http://127.0.0.1:{port}/simple"))
    with pytest.raises(NotServed, match=r"cannot read tiny-pkg==1\.0 from the index"):
        wheel_members.members("tiny-pkg", "1.0", ("tiny_pkg/a.py",), tmp_path)
    assert list(tmp_path.rglob("*")) == []  # no half-made folder left
