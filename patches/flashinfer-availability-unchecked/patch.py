"""sglang 0.3.3-0.4.5: ``is_flashinfer_available()`` says yes without looking for flashinfer.

The function answers from the device alone (``torch.cuda.is_available()``, later
``is_cuda()``), and ``srt/layers/layernorm.py`` and ``activation.py`` run
``if is_flashinfer_available(): from flashinfer... import ...`` at module level.  On a
CUDA machine without flashinfer -- 0.4.0-0.4.2.post1 require ``flashinfer``, a name only
flashinfer's own index ever served, one build per torch and CUDA -- the runtime fails to
import, although both modules have a fallback for exactly that answer.  sglang
0.4.5.post1 made the function also ask ``importlib.util.find_spec("flashinfer")``; this
patch gives the older releases that answer, and a stricter one: flashinfer counts only if
it imports (a build for another torch is installed and still cannot serve).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from sglang_shims.patching import PatchContext


def apply(ctx: PatchContext) -> None:
    verdict: list[bool] = []  # flashinfer imports here: found once per process

    def imports() -> bool:
        if not verdict:
            ok = importlib.util.find_spec("flashinfer") is not None
            if ok:
                try:
                    importlib.import_module("flashinfer")
                except Exception as exc:  # any failure to load: flashinfer cannot serve
                    ctx.log.warning("flashinfer is installed but does not import (%s: %s);"
                                    " sglang takes its fallbacks", type(exc).__name__, exc)
                    ok = False
            verdict.append(ok)
        return verdict[0]

    def available(wrapped: Any, instance: Any, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Any:
        answer = wrapped(*args, **kwargs)
        return answer if not answer or imports() else False

    ctx.wrap(ctx.module, "is_flashinfer_available", available)
