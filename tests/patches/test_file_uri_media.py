"""file-uri-media: sglang's real media loaders, given file: URIs, under the shims.

Each release runs in a fresh interpreter with its real ``sglang.srt.utils`` (PIL,
numpy, soundfile, scipy and torch from this environment).  Media files are written in
``tmp_path``: a 3x2 PNG, a 16 kHz WAV, a stand-in video file, a file outside the
allowed root and symbolic links from inside the root to it.  Nothing touches the
network: ``requests.get`` is replaced by a recorder, and the video decoder (decord,
or the 0.5.10 decoder wrapper) by one that records the source it is given.
"""

from __future__ import annotations

import base64
import struct
import wave
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.programs import program
from ..support.run import need, run_python

pytestmark = pytest.mark.wheels

PATCH = "file-uri-media"
ENV = "SGLANG_SHIMS_FILE_URI_ROOTS"
# first with all three loaders; last of 0.5.1's shape; first with utils/common.py and its
# star re-export; first with the host-dropping file:// branches; last in range
RELEASES = ["0.4.9.post2", "0.5.1", "0.5.3", "0.5.9", "0.5.10.post1"]


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("media")
    root, outside = base / "allowed", base / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    image = png(3, 2)
    for name in ("img.png", "a b.png", "no-extension", "sub/deep.png"):
        (root / name).write_bytes(image)
    (outside / "secret.png").write_bytes(png(5, 5))
    (root / "link.png").symlink_to(outside / "secret.png")
    (root / "dirlink").symlink_to(outside, target_is_directory=True)
    (root / "clip.mp4").write_bytes(b"not really a video")
    with wave.open(str(root / "tone.wav"), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\x00\x01" * 1600)
    return root, outside


CODE = program("patches/file_uri_media/loaders")


def need_media_stack() -> None:
    for module in ("torch", "PIL", "numpy", "soundfile", "scipy", "requests"):
        need(module)


def run(release: Path, media: tuple[Path, Path], env: dict[str, str]) -> dict[str, Any]:
    need_media_stack()
    root, outside = media
    data_uri = "data:image/png;base64," + base64.b64encode(png(4, 1)).decode()
    result = run_python(CODE, paths=(release,), env=env, timeout=300,
                        args=(str(root), str(outside), data_uri), fork=True)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module", params=RELEASES)
def patched(request: pytest.FixtureRequest, sglang_release: Callable[[str], Path],
            media: tuple[Path, Path]) -> dict[str, Any]:
    data = run(sglang_release(request.param), media, {ENV: str(media[0])})
    data["version"] = request.param
    return data


def refused(result: dict[str, Any], *words: str) -> bool:
    return result.get("error") == "FileURIError" and result["is_value_error"] and \
        all(w in result["message"] for w in words)


def test_applied_and_rebound(patched: dict[str, Any]) -> None:
    assert patched["state"] == "applied"
    assert patched["wrapped"] == "FunctionWrapper"
    assert patched["reexport_is_wrapped"]  # 0.5.3+: the star-import copy in sglang.srt.utils


def test_allowed_file_uris_load(patched: dict[str, Any]) -> None:
    images = patched["images"]
    for name in ("triple-slash", "localhost", "LOCALHOST-upper-scheme", "one-slash",
                 "percent-encoded", "no-extension", "subfolder"):
        assert images[name] == {"image": [3, 2]}, (name, images[name])


@pytest.mark.parametrize(("case", "words"), [
    ("outside", ("outside every folder", ENV)),
    ("dot-dot", ("outside every folder",)),
    ("symlink-escape", ("after resolving symbolic links",)),
    ("symlinked-dir-escape", ("after resolving symbolic links",)),
    ("other-host", ("names the host 'otherhost'", "only local files")),
    ("host-looking-relative", ("names the host 'img.png'",)),
    ("relative", ("relative path",)),
    ("query", ("query or fragment",)),
])
def test_refused_with_a_clear_value_error(patched: dict[str, Any], media: tuple[Path, Path],
                                          case: str, words: tuple[str, ...]) -> None:
    result = patched["images"][case]
    assert refused(result, *words), result
    if "symlink" in case:  # the message names the URI, never where it resolves to
        assert str(media[1]) not in result["message"]


def test_missing_file_is_file_not_found(patched: dict[str, Any]) -> None:
    assert patched["images"]["missing"]["error"] == "FileNotFoundError"


def test_other_inputs_reach_the_original_loader(patched: dict[str, Any]) -> None:
    images = patched["images"]
    assert images["plain-path"] == {"image": [3, 2]}
    assert images["data-uri"] == {"image": [4, 1]}
    assert images["http"]["message"] == "network is mocked"
    assert "http://media.invalid/x.png" in patched["calls"]["http"]
    assert patched["other"]["video-http"]["message"] == "network is mocked"
    assert "https://media.invalid/v.mp4" in patched["calls"]["http"]


def test_audio_video_image_data_and_bytes(patched: dict[str, Any], media: tuple[Path, Path]
                                          ) -> None:
    other = patched["other"]
    assert other["audio"] == {"samples": 1600}
    assert refused(other["audio-outside"], "names the host")
    assert other["video"] == {"other": "Decoder"}
    assert patched["calls"]["video"] == [str((media[0] / "clip.mp4").resolve())]
    assert refused(other["video-outside"], "after resolving symbolic links")
    if patched["version"] != "0.4.9.post2":  # ImageData exists from 0.5.0
        assert other["imagedata"] == {"image": [3, 2]}
        assert refused(other["imagedata-outside"], "outside every folder")
    if patched["version"] not in ("0.4.9.post2", "0.5.1"):  # get_image_bytes from 0.5.3
        assert other["get_image_bytes"] == {"bytes": len(png(3, 2))}


@pytest.mark.parametrize("value", ["", " ", "relative/folder"])
def test_unset_or_bad_roots_refuse_everything(sglang_release: Callable[[str], Path],
                                              media: tuple[Path, Path], value: str) -> None:
    data = run(sglang_release("0.5.9"), media, {ENV: value} if value else {})
    assert data["state"] == "applied"
    for case in ("triple-slash", "localhost", "no-extension"):
        result = data["images"][case]
        if value.strip():
            assert refused(result, "'relative/folder' is not an absolute path", ENV), result
        else:
            assert refused(result, ENV, "is not set"), result
    assert data["images"]["plain-path"] == {"image": [3, 2]}  # not a URI: untouched


def test_several_roots(sglang_release: Callable[[str], Path], media: tuple[Path, Path]) -> None:
    import os

    root, outside = media
    data = run(sglang_release("0.5.9"), media, {ENV: os.pathsep.join([str(outside), str(root)])})
    assert data["images"]["outside"] == {"image": [5, 5]}
    assert data["images"]["symlink-escape"] == {"image": [5, 5]}  # its target is allowed now
    assert data["images"]["triple-slash"] == {"image": [3, 2]}


@pytest.mark.parametrize("version", ["0.5.1", "0.5.9"])
def test_stock_behaviour_without_the_shims(sglang_release: Callable[[str], Path],
                                           media: tuple[Path, Path], version: str) -> None:
    """What the patch fixes: 0.5.1 cannot read file: URIs; 0.5.9 reads anything, any host."""
    need_media_stack()
    root, outside = media
    result = run_python(CODE, paths=(sglang_release(version),), env={"SGLANG_SHIMS": "0"},
                        timeout=300, args=(str(root), str(outside), "data:,"), fork=True)
    assert result.returncode == 0, result.stderr[-3000:]
    images = result.json()["images"]  # type: ignore[index]
    if version == "0.5.1":
        assert images["triple-slash"]["error"] == "FileNotFoundError"
        assert images["localhost"]["error"] == "FileNotFoundError"
    else:
        assert images["other-host"] == {"image": [3, 2]}  # host silently dropped
        assert images["symlink-escape"] == {"image": [5, 5]}
        assert images["outside"] == {"image": [5, 5]}


def test_processors_get_the_wrapped_loaders(sglang_release: Callable[[str], Path],
                                            standin_kernel: Callable[..., Path]) -> None:
    """base_processor's `from sglang.srt.utils import load_image, ...` binds the wrappers."""
    need("transformers")
    result = run_python(program("patches/file_uri_media/processors"),
                        paths=(sglang_release("0.5.1"), standin_kernel("0.3.18")),
                        timeout=300, fork=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.json() == ["FunctionWrapper"] * 3


def test_late_install_rebinds_existing_copies(sglang_release: Callable[[str], Path],
                                              media: tuple[Path, Path]) -> None:
    """sglang imported before the shims: copies already made are rebound, and revert undoes."""
    need("torch")
    result = run_python(program("patches/file_uri_media/late_install"),
                        paths=(sglang_release("0.5.3"),), activate=False,
                        env={ENV: str(media[0])}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.json() == ["applied", True, True, True]
