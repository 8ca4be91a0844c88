"""``shimtarget.mod`` as the shims left it, against a stock copy loaded from the same file
under another name (nothing watches that name): same members, same values, same bytecode;
and the report of every ``fault-*`` patch."""
import hashlib
import importlib.util
import json
import types

import shimtarget.mod as m


def describe(ns):
    out = {}
    for key, value in ns.items():
        if key in ("__name__", "__package__", "__loader__", "__spec__", "__builtins__",
                   "__cached__"):
            continue
        if isinstance(value, types.FunctionType):
            out[key] = ["function", value.__qualname__,
                        hashlib.sha256(value.__code__.co_code).hexdigest()]
        elif isinstance(value, type):
            out[key] = ["class", value.__qualname__, sorted(vars(value))]
        else:
            out[key] = ["value", repr(value)]
    return out


spec = importlib.util.spec_from_file_location("stock_copy", m.__file__)
stock = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stock)
import sglang_shims

print(json.dumps({"identical": describe(vars(m)) == describe(vars(stock)),
                  "greet": m.greet("x"),
                  "status": {k: v for k, v in sglang_shims.status().items()
                             if k.startswith("fault-")}}))
