"""40 calls of the missing ``fused_marlin_moe`` from 4 threads: the messages they raise and
what the patch's proxy counted."""
import json
import threading

import sglang_shims
from sgl_kernel import fused_marlin_moe

from patch_state import patch_entry

messages = []


def call(times):
    for _ in range(times):
        try:
            fused_marlin_moe(None, None)
        except Exception as exc:
            messages.append(str(exc))


threads = [threading.Thread(target=call, args=(10,)) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
proxy = patch_entry("sgl-kernel-fused-marlin-moe")["proxies"]
counts = proxy["sgl_kernel.fused_marlin_moe"]
print(json.dumps({"messages": len(messages), "distinct": len(set(messages)),
                  "failed_calls": counts["failed_calls"], "rebound": counts["rebound"]}))
