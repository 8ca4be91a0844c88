"""The whole sglang 0.4.9 ``srt/utils.py`` on the installed triton: its helpers' folders
against triton's knobs, and sglang's own CustomCacheManager built on them."""
import json

import triton
from triton import knobs

from patch_state import print_result

out = {"triton": triton.__version__}
try:
    import sglang.srt.utils as u
except ImportError as exc:
    print(json.dumps({**out, "error": str(exc)}))
    raise SystemExit from None
out["knobs"] = [knobs.cache.dir, knobs.cache.dump_dir, knobs.cache.override_dir]
out["helpers"] = [u.default_cache_dir(), u.default_dump_dir(), u.default_override_dir()]
# sglang's own custom cache manager (set when tp*dp > 1) on these helpers
out["managers"] = [u.CustomCacheManager("k", dump=True).cache_dir,
                   u.CustomCacheManager("k", override=True).cache_dir]
print_result(out, "triton-cache-helpers-removed")
