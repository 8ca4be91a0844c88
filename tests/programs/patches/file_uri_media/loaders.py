"""sglang's media loaders (``load_image``, ``load_audio``, ``load_video``) given file: URIs
and other inputs, with the network and the video decoder replaced by recorders.

argv: the allowed root, a folder outside it, a data: URI.
"""
import json
import os
import sys
import types

from patch_state import patch_entry

ROOT, OUTSIDE, DATA_URI = sys.argv[1], sys.argv[2], sys.argv[3]
calls = {"video": [], "http": []}

class Decoder:  # records what the video loader hands to the decoder
    def __init__(self, source, *args, **kwargs):
        calls["video"].append(source if isinstance(source, str) else f"{len(source)} bytes")

decord = types.ModuleType("decord")
decord.VideoReader, decord.cpu, decord.gpu = Decoder, (lambda *a: "cpu"), (lambda *a: "gpu")
sys.modules["decord"] = decord
sys.modules.setdefault("torchaudio", types.ModuleType("torchaudio"))  # 0.5.10: unused at 16 kHz

import requests
def fake_get(url, *args, **kwargs):
    calls["http"].append(url)
    raise ConnectionError("network is mocked")
requests.get = fake_get

import sglang.srt.utils as u
defining = sys.modules.get("sglang.srt.utils.common", u)
if hasattr(defining, "VideoDecoderWrapper"):
    defining.VideoDecoderWrapper = Decoder

def attempt(fn, *args):
    try:
        value = fn(*args)
    except Exception as exc:
        return {"error": type(exc).__name__, "message": str(exc),
                "is_value_error": isinstance(exc, ValueError)}
    if isinstance(value, tuple):
        value = value[0]
    if hasattr(value, "size") and hasattr(value, "mode"):
        return {"image": list(value.size)}
    if isinstance(value, bytes):
        return {"bytes": len(value)}
    if hasattr(value, "shape"):
        return {"samples": int(value.shape[0])}
    return {"other": type(value).__name__}

img = os.path.join(ROOT, "img.png")
out = {"images": {}, "other": {}}
cases = {
    "triple-slash": "file://" + img,
    "localhost": "file://localhost" + img,
    "LOCALHOST-upper-scheme": "FILE://LOCALHOST" + img,
    "one-slash": "file:" + img,
    "percent-encoded": "file://" + os.path.join(ROOT, "a%20b.png"),
    "no-extension": "file://" + os.path.join(ROOT, "no-extension"),
    "subfolder": "file://" + os.path.join(ROOT, "sub", "deep.png"),
    "outside": "file://" + os.path.join(OUTSIDE, "secret.png"),
    "dot-dot": "file://" + os.path.join(ROOT, "..", "outside", "secret.png"),
    "symlink-escape": "file://" + os.path.join(ROOT, "link.png"),
    "symlinked-dir-escape": "file://" + os.path.join(ROOT, "dirlink", "secret.png"),
    "other-host": "file://otherhost" + img,
    "host-looking-relative": "file://img.png",
    "relative": "file:img.png",
    "query": "file://" + img + "?x=1",
    "missing": "file://" + os.path.join(ROOT, "missing.png"),
    "plain-path": img,
    "data-uri": DATA_URI,
    "http": "http://media.invalid/x.png",
}
for name, value in cases.items():
    out["images"][name] = attempt(u.load_image, value)
if hasattr(u, "ImageData"):
    out["other"]["imagedata"] = attempt(u.load_image, u.ImageData(url="file://" + img))
    out["other"]["imagedata-outside"] = attempt(
        u.load_image, u.ImageData(url="file://" + os.path.join(OUTSIDE, "secret.png")))
if hasattr(defining, "get_image_bytes"):
    out["other"]["get_image_bytes"] = attempt(u.get_image_bytes, "file://" + img)
out["other"]["audio"] = attempt(u.load_audio, "file://" + os.path.join(ROOT, "tone.wav"))
out["other"]["audio-outside"] = attempt(u.load_audio, "file://otherhost" + ROOT + "/tone.wav")
out["other"]["video"] = attempt(u.load_video, "file://" + os.path.join(ROOT, "clip.mp4"))
out["other"]["video-outside"] = attempt(u.load_video, "file://" + os.path.join(ROOT, "link.png"))
out["other"]["video-http"] = attempt(u.load_video, "https://media.invalid/v.mp4")
out["calls"] = calls
out["reexport_is_wrapped"] = all(
    getattr(u, n) is getattr(defining, n) for n in ("load_image", "load_video", "load_audio"))
out["wrapped"] = type(defining.load_image).__name__
if os.environ.get("SGLANG_SHIMS") != "0":
    entry = patch_entry("file-uri-media")
    out["state"], out["notes"] = entry["state"], entry["notes"]
print(json.dumps(out))
