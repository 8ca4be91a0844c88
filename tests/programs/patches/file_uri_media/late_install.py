"""sglang imported before the shims, a module holding copies of its loaders, then
``install()`` and ``revert()``: whether the copies are wrapped and given back."""
import json
import sys
import types

import sglang.srt.utils as u

consumer = types.ModuleType("sglang.consumer")  # a processor-like module
exec("from sglang.srt.utils import load_image, load_audio", consumer.__dict__)
sys.modules["sglang.consumer"] = consumer
stock = consumer.load_image
import sglang_shims

state = sglang_shims.install()["file-uri-media"]["state"]
try:
    consumer.load_image("file:///etc/hostname")
    refused = False
except ValueError:
    refused = True
rebound = consumer.load_image is u.load_image is not stock
sglang_shims.revert()
print(json.dumps([state, refused, rebound, consumer.load_image is stock]))
