"""The kernel names the installed sglang imports and the installed kernel lacks, and who
serves each of them under sglang-shims (the hybrid tier): the judge of the rule
``sgl-kernel-hybrid-ops``, with the remedy it needs (which published kernel to install).

Read from data alone (the names every sglang release imports, every kernel's export
list), so it needs neither a GPU nor an importable kernel, and it gives the table the
patch ``sgl-kernel-missing-symbols`` builds at run time from the live module.
"""

from __future__ import annotations

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

from ....kernels.serving import hybrid
from ....kernels.surface import symbols
from ....kernels.surface.exports import surfaces
from .. import kernel_facts as kf
from ..facts import Facts
from ..finding import Finding, Level
from ..version_text import cuda_from_label, local_label, minor_of, version_between, version_in
from ._common import patch_on, verdict

PATCH = "sgl-kernel-missing-symbols"


def _stood_in(kernel: str, needs: dict[str, str]) -> list[str] | None:
    """None when this kernel (by its export data) lacks a name the sglang release imports;
    else the names among them that only another built-in patch's stand-in supplies there
    (``fused_marlin_moe`` from 0.3.18 on: imports work, those ops cannot run)."""
    exported = hybrid.exported_by_data(kernel)
    owned = symbols.deferred(kernel)
    if exported is None or any(n not in exported and n not in owned for n in needs):
        return None
    return sorted(n for n in needs if n not in exported)


def _candidates(torch: str, needs: dict[str, str]) -> list[tuple[str, str, str, list[str]]]:
    """(dist, version, torch it was built with, names left to a stand-in) for every
    published kernel built for this torch's minor that serves every name in ``needs``."""
    found = []
    for build in kf.builds_for_torch(torch):
        for version in surfaces():
            try:
                parsed = Version(version)
            except InvalidVersion:
                continue
            if parsed.local or not Version(build.first) <= parsed <= Version(build.last):
                continue
            stood_in = _stood_in(version, needs)
            if stood_in is not None:
                found.append((build.dist, version, build.torch, stood_in))
    return found


def variant_index(kernel: str, torch: str | None) -> str:
    """`` --index-url ...`` when the torch is a CUDA build (``+cu130``) of another major than
    the kernel's PyPI default file: that kernel's variant for the torch's CUDA lives there."""
    cuda = cuda_from_label(local_label(torch))
    default = next((major for first, last, major in kf.DEFAULT_CUDA_MAJOR
                    if version_between(kernel, first, last)), None)
    if cuda is None or default is None or int(cuda.split(".")[0]) == default:
        return ""
    label = ("cu130" if int(cuda.split(".")[0]) >= 13 else
             "cu129" if version_in(kernel, ">=0.3.9") else "cu128")
    return f" --index-url {kf.VARIANT_INDEX.format(label=label)}"


def install_text(sglang: str, needs: dict[str, str], torch: str | None,
                 installed: str | None = None) -> str:
    """What to install so that the real kernel serves every name: the pinned kernel when it
    was built for the installed torch's minor; else the published kernel built for that
    torch (the kernel->torch table) that serves every name -- fewest names left to a
    stand-in first, then the nearest above the pin -- or else says that none exists.  A
    kernel built for another torch does not load (undefined symbol), so the pinned kernel
    is no remedy on another torch.  ``installed`` is the kernel distribution installed: both
    provide the module sgl_kernel, so changing the name means uninstalling it first."""

    def install(dist: str, spec: str, version: str) -> str:
        swap = f"pip uninstall -y {installed} && " if installed and installed != dist else ""
        return f"{swap}pip install '{dist}{spec}'{variant_index(version, torch)}"

    pin = symbols.pinned(sglang)
    req = Requirement(pin) if pin else None
    exact = [s.version for s in req.specifier if s.operator == "=="] if req else []
    pinned = exact[0] if exact else ""
    label = local_label(torch) if cuda_from_label(local_label(torch)) else None
    builds = kf.kernel_builds(f"{pinned}+{label}" if label else pinned) if pinned else []
    built = builds[0].torch if builds else None
    as_pinned = install(req.name, str(req.specifier), pinned) if req else ""
    if req and (torch is None or built is None or minor_of(built) == minor_of(torch)):
        return as_pinned + (f" (built with torch {built})" if built else "")
    if torch is None:
        return "install the kernel version your sglang pins"
    wanted = ".".join(map(str, minor_of(torch) or ()))
    found = _candidates(torch, needs)
    if not found:
        return (f"no published kernel built for torch {wanted} exports every name sglang"
                f" {sglang} imports: " + (f"{as_pinned} with torch {built}, the torch it was"
                                          " built with" if req and built else
                                          "install the torch and kernel your sglang pins"))
    anchor = Version(pinned) if pinned else Version("0")
    ordered = sorted(found, key=lambda c: Version(c[1]))
    nearest = ([c for c in ordered if Version(c[1]) >= anchor]
               + [c for c in reversed(ordered) if Version(c[1]) < anchor])
    dist, version, torch_built, stood_in = min(nearest, key=lambda c: len(c[3]))
    left = (f" but {', '.join(stood_in)}, which only another patch's stand-in supplies (the"
            " import works, the op cannot run)" if stood_in else "")
    return (f"{install(dist, '==' + version, version)} (built with torch {torch_built}; it"
            f" exports every name sglang {sglang} imports{left}) -- the pinned"
            f" {pin or 'kernel'} was built with torch {built or 'another release'} and does not"
            f" load on {torch}")


def missing_names(facts: Facts) -> Finding | None:
    """The judge: a verdict when some name is not served by the real kernel."""
    sglang, kernel = facts.version("sglang"), facts.kernel()
    if not sglang or kernel is None:
        return None
    needs = symbols.needed(sglang)
    exported = hybrid.exported_by_data(kernel[1])
    if needs is None or exported is None:
        return None
    owned = symbols.deferred(kernel[1])
    routes = hybrid.plan((n for n in needs if n not in exported and n not in owned), exported)
    if not routes:
        return None
    install = install_text(sglang, needs, facts.version("torch"), kernel[0])
    listed = "; ".join([f"{name}: {chosen.label()}" for name, chosen in routes.items()]
                       + [f"{name}: {hybrid.HALF_ONLY_LABEL}"
                          for name in hybrid.widened(needs, routes, exported)])
    head = (f"sglang {sglang} imports {len(routes)} name(s) from sgl_kernel that"
            f" {kernel[0]} {kernel[1]} does not export")
    on, why = patch_on(facts, PATCH)
    if not on:
        return verdict(
            Level.FAIL, f"{head} ({', '.join(routes)}): importing sglang fails with"
            f" ImportError; the patch {PATCH} is off ({why})",
            f"SGLANG_SHIMS_ENABLE={PATCH}, or {install}")
    unserved = [n for n, r in routes.items() if r.provider == hybrid.NONE]
    detail = (f"{head}; with sglang-shims ({PATCH} on: {why}) the real kernel serves every"
              f" other op, and these: {listed}")
    if unserved:
        return verdict(
            Level.WARN, detail + "; a model that calls a 'none' op fails at that call",
            f"for those ops: {install}")
    return verdict(Level.INFO, detail, "")
