"""argv[1] threads, released together, each importing three watched modules with slow
patches: threads left alive, the values they saw, each patch's calls and states."""
import importlib
import json
import sys
import threading

import sglang_shims._bootstrap as b

b.activate("test")
THREADS = int(sys.argv[1])
barrier = threading.Barrier(THREADS)
seen = []


def work(i):
    barrier.wait()
    for name in ("soakpkg.m0", "soakpkg.m1", "soakpkg.m2"):
        seen.append((name, importlib.import_module(name).VALUE))


threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join(60)
alive = sum(t.is_alive() for t in threads)
import sglang_shims

status = sglang_shims.status()
calls = {pid: sys.modules["sglang_shims.patches." + pid.replace("-", "_")].calls
         for pid in ("soak-0", "soak-1", "soak-2")}
print(json.dumps({"alive": alive, "values": sorted(set(seen)), "n": len(seen),
                  "calls": calls,
                  "states": {k: v["state"] for k, v in status.items() if k.startswith("soak")}}))
