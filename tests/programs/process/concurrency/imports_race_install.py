"""Imports of three watched modules (argv[1] rounds) racing ``install()``/``revert()`` in
a loop, then a final ``revert()``: threads left alive, errors, states and values."""
import importlib
import json
import sys
import threading

import sglang_shims

ROUNDS = int(sys.argv[1])
stop = threading.Event()
errors = []


def importer():
    for _ in range(ROUNDS):
        for name in ("soakpkg.m0", "soakpkg.m1", "soakpkg.m2"):
            sys.modules.pop(name, None)
            try:
                importlib.import_module(name)
            except Exception as exc:
                errors.append(repr(exc))


def toggler():
    while not stop.is_set():
        sglang_shims.install()
        sglang_shims.revert()


t1 = threading.Thread(target=importer)
t2 = threading.Thread(target=toggler)
t2.start()
t1.start()
t1.join(120)
stop.set()
t2.join(120)
sglang_shims.revert()
states = {k: v["state"] for k, v in sglang_shims.status().items() if k.startswith("soak")}
mods = [importlib.import_module(n) for n in ("soakpkg.m0", "soakpkg.m1", "soakpkg.m2")]
print(json.dumps({"alive": t1.is_alive() + t2.is_alive(), "errors": errors,
                  "states": states, "values": [m.VALUE for m in mods]}))
