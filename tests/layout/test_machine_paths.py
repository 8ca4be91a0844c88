"""Committed data reads the same whoever made it: no maker's paths.

The tools record error messages, and an ImportError names the file it read
(``/home/me/venv/lib/python3.11/site-packages/triton/runtime/cache.py``); committed as is,
that tells readers about one developer's disk and changes with every maker.  The recorders
pass text through ``tools.paths.portable``; this checks them and the committed files."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from tools.paths import portable, portable_tree

from ..support.run import REPO

SITE_PATH = re.compile(r"/[\w.-]+(?:/[\w.-]+)*/(?:site|dist)-packages/"
                       r"|(?<![\w.~<>-])(?:/root|/home/[\w.-]+|/Users/[\w.-]+)/")
"""A package folder, or anything in a home folder (a wheel cache, a virtual environment)."""
QUOTED = {"docs/real-world.json"}
"""Files that quote users' reports, paths included, as the evidence they are."""


def test_a_package_folder_reads_site_packages() -> None:
    error = ("ImportError: cannot import name 'default_cache_dir' from 'triton.runtime.cache'"
             " (/home/me/.venvs/x/lib/python3.11/site-packages/triton/runtime/cache.py)")
    assert portable(error).endswith("(<site-packages>/triton/runtime/cache.py)")
    assert portable("/usr/lib/python3/dist-packages/torch/x.py:3") == "<site-packages>/torch/x.py:3"


def test_a_scratch_folder_keeps_what_follows_it() -> None:
    tmp = tempfile.gettempdir()
    text = f"from 'sgl_kernel' ({tmp}/sglang-matrix-kyqkn0tg/0.5.3/sgl_kernel/__init__.py)"
    assert portable(text) == "from 'sgl_kernel' (<tmp>/0.5.3/sgl_kernel/__init__.py)"
    repro = (f"Repro command: /opt/v/lib/python3.12/site-packages/triton/bin/ptxas -o"
             f" {tmp}/tmpg0mcfzdq.ptx.o")
    assert portable(repro) == "Repro command: <site-packages>/triton/bin/ptxas -o <tmp>"


def test_the_wheel_cache_and_the_home_folder_are_named_not_spelled(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("SGLANG_SHIMS_WHEEL_CACHE", str(cache))
    error = f"cannot import name 'VideoInput' ({cache}/matrix/0.4.4.post1-tf5.25.0/site/x.py)"
    assert portable(error) == ("cannot import name 'VideoInput'"
                               " (<wheel-cache>/matrix/0.4.4.post1-tf5.25.0/site/x.py)")
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: Path("/home/me")))
    assert portable("see /home/me/notes/a.txt, not /home/meg/b") == \
        "see ~/notes/a.txt, not /home/meg/b"
    assert SITE_PATH.search("/home/me/x") and SITE_PATH.search("(/root/.cache/a)")
    assert not SITE_PATH.search("<wheel-cache>/matrix/x and ~/notes")


def test_text_without_paths_is_left_alone() -> None:
    for text in ("RuntimeError: server exited (1)", "3 of 4 differ", "a/b", ""):
        assert portable(text) == text
    data = {"k /x/site-packages/a": ["/y/site-packages/b", 3, None]}
    assert portable_tree(data) == {"k <site-packages>/a": ["<site-packages>/b", 3, None]}


def test_committed_data_names_no_package_folder_of_its_maker() -> None:
    files = subprocess.run(["git", "ls-files", "*.json", "*.md"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()
    found = [f"{rel}: {m.group(0)}" for rel in files if rel not in QUOTED
             for m in [SITE_PATH.search((REPO / rel).read_text(encoding="utf-8",
                                                                errors="replace"))] if m]
    assert not found, found
