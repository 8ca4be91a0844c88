"""``sglang-shims doctor``: what is installed, what will break, and what to do about it.

sglang fails at start-up, or worse at the first kernel launch, when its pieces drift
apart: a kernel built for another torch (undefined C++ symbols), a kernel with no
image for the GPU, a CUDA runtime library that is not on the loader's path, a
transformers that silently changed a config field.  Each of these can be told in
advance from versions, from the ELF headers of the kernel libraries and from one
``import sgl_kernel`` in a child process -- without a GPU and without importing the
kernel here, so a broken install cannot take the diagnosis down with it.

The checks live one per module, in the order :func:`diagnose` runs them: ``hook``
(is sglang-shims active at all), ``checks`` (versions, GPUs), ``abi``, ``probe``,
``arch``, ``libs``, ``rules`` (known-bad combinations), ``pins``, ``tested`` (the
compatibility matrix's result for this combination).  Facts about the
machine are gathered once (``facts``); every check is a function of them, so each
can be tested with a hermetic :class:`~sglang_shims.engine.gates.Environment`.
"""

from __future__ import annotations

from collections.abc import Callable

from ...engine.gates import Environment
from .facts import Facts, gather
from .finding import Finding, failed

__all__ = ["Facts", "Finding", "diagnose"]

Check = Callable[[Facts], list[Finding]]


def _checks(probe_import: bool, announce: Callable[[str], None] | None
            ) -> list[tuple[str, Check]]:
    from . import abi, arch, checks, hook, libs, pins, probe, rules, tested

    return [
        ("hook", hook.check_hook),
        ("versions", checks.check_versions),
        ("gpu", checks.check_gpus),
        ("sgl-kernel-abi", abi.check_abi),
        ("sgl-kernel-import",
         lambda f: probe.check_import(f, probe_import and not f.env.hermetic, announce)),
        ("sgl-kernel-arch", arch.check_arch),
        ("cuda-libs", libs.check_libs),
        ("known-bad", rules.check_rules),
        ("sglang-pin", pins.check_pins),
        ("tested", tested.check_tested),
    ]


def diagnose(env: Environment | None = None, *, probe_import: bool = True,
             use_torch: bool = True,
             announce: Callable[[str], None] | None = None) -> list[Finding]:
    """Diagnose the environment; never raises.

    ``env`` defaults to this interpreter's; a hermetic one is judged on its versions
    (and ``capabilities``) alone.  ``probe_import`` imports ``sgl_kernel`` in a child
    process (up to a minute, only when a kernel is installed); ``use_torch`` lets
    GPU detection import torch when it is installed; ``announce`` gets one line
    before a step that may take long (the probe).
    """
    try:
        facts = gather(env, use_torch=use_torch)
    except Exception as exc:
        return [failed("doctor", exc)]
    findings = [Finding("doctor", "warn", f"could not read the {what}: {why}; checks that need "
                        "it are less precise") for what, why in facts.problems]
    for check_id, check in _checks(probe_import, announce):
        try:
            findings.extend(check(facts))
        except Exception as exc:
            findings.append(failed(check_id, exc))
    return findings
