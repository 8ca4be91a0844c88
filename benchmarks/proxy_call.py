"""Call overhead of an optional-symbol proxy once resolved, against a plain function.

Three ways to reach the same substitute, 2 million calls each, best of 7:
a plain function; the name bound in a module after resolution (the proxy rebinds
every module-level copy of itself to the substitute, so this should equal plain);
and a reference captured before resolution (still the proxy object: one extra call).

    python benchmarks/proxy_call.py
"""

from __future__ import annotations

import os
import platform
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sglang_shims.engine.proxy import OptionalSymbol


def substitute(x: int) -> int:
    return x


def timed(fn: object, calls: int) -> float:
    loop = compile("for _ in r:\n    f(1)\n", "bench", "exec")
    best = float("inf")
    for _ in range(7):
        namespace = {"f": fn, "r": range(calls)}
        start = time.perf_counter()
        exec(loop, namespace)
        best = min(best, time.perf_counter() - start)
    return best / calls * 1e9


def main() -> None:
    calls = 2_000_000
    holder = types.ModuleType("bench_holder")
    sys.modules["bench_holder"] = holder
    sys.modules["bench_subst"] = types.ModuleType("bench_subst")
    sys.modules["bench_subst"].substitute = substitute  # type: ignore[attr-defined]
    proxy = OptionalSymbol("sgl_kernel", "op", "bench", lambda: "unused",
                           substitute="bench_subst:substitute")
    holder.op = proxy  # type: ignore[attr-defined]
    captured = proxy
    proxy(0)  # resolve: rebinds holder.op to the substitute
    assert holder.op is substitute  # type: ignore[attr-defined]
    plain = timed(substitute, calls)
    rebound = timed(holder.op, calls)  # type: ignore[attr-defined]
    direct = timed(captured, calls)
    print(f"date: {time.strftime('%Y-%m-%d')}; machine: {platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}; {calls} calls, best of 7")
    print("\n| call path | ns per call | vs plain |")
    print("|---|---|---|")
    for name, ns in (("plain function", plain), ("module name after resolution", rebound),
                     ("reference captured before resolution", direct)):
        print(f"| {name} | {ns:.1f} | {ns / plain:.2f}x |")


if __name__ == "__main__":
    main()
