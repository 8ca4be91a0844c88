"""doctor's checks, one module each, and the order :func:`~sglang_shims.cli.doctor.diagnose`
runs them in.

Every check is a function of the :class:`~sglang_shims.cli.doctor.facts.Facts` gathered
once, returning its findings.  The order is the order of the report: whether sglang-shims
is active at all, what is installed, the GPUs, then the kernel from the inside out (built
for this torch, importable, holding code for these GPUs -- and where it holds none, what
CI found for the fallback there --, its libraries found), the
known-bad combinations, sglang's own pins, and what the compatibility matrix saw.

Three checks need more than the facts and are run by
:func:`~sglang_shims.cli.doctor.report.doctor` instead: ``model_coverage`` (a model's
``config.json``), ``patch_folders`` (the folders the patches' catalog could not load) and
``serving_tier`` (the findings above and the patches' survey).
"""

from __future__ import annotations

from collections.abc import Callable

from ..facts import Facts
from ..finding import Finding
from . import abi, arch, fallback, gpu, hook, installed, known_bad, libs, pins, probe, tested

Check = Callable[[Facts], list[Finding]]


def ordered(probe_import: bool, announce: Callable[[str], None] | None
            ) -> list[tuple[str, Check]]:
    """(check id, check) in report order.  Built per run, so the import probe can be told
    whether to start a child and whom to announce it to, and a check replaced in its
    module (as the tests do) is the one that runs."""
    return [
        ("hook", hook.check_hook),
        ("versions", installed.check_versions),
        ("gpu", gpu.check_gpus),
        ("sgl-kernel-abi", abi.check_abi),
        ("sgl-kernel-import",
         lambda f: probe.check_import(f, probe_import and not f.env.hermetic, announce)),
        ("sgl-kernel-arch", arch.check_arch),
        (fallback.CHECK, fallback.check_fallback),
        ("cuda-libs", libs.check_libs),
        ("known-bad", known_bad.check_rules),
        ("sglang-pin", pins.check_pins),
        ("tested", tested.check_tested),
    ]
