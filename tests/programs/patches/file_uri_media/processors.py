"""Whether sglang's multimodal base processor holds the wrapped loaders (its ``from
sglang.srt.utils import load_image, ...`` copies)."""
import json

import sglang.srt.utils as u
from sglang.srt.multimodal.processors import base_processor as bp

print(json.dumps([getattr(bp, n) is getattr(u, n) and type(getattr(bp, n)).__name__
                  for n in ("load_image", "load_video", "load_audio")]))
