"""Evaluate a manifest's gates against what is installed: versions and the GPU.

Versions come from distribution metadata (never from importing the package), so the
same code serves the runtime and the static CLI.  Comparison follows PEP 440 with two
deliberate choices: pre-, post- and dev-releases of an installed package are compared
by their numbers (a ``0.5.1.dev3`` sglang is inside ``<0.5.6``), and a local label
(``+cu130``) is ignored by ordered comparisons, as ``packaging`` does.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from .. import _versions

if TYPE_CHECKING:
    from ..catalog.manifest import Gate, Manifest


def canonical(dist: str) -> str:
    """PEP 503's name: runs of ``-``, ``_`` and ``.`` become one ``-``, lower case."""
    name = dist.replace("_", "-").replace(".", "-")
    while "--" in name:
        name = name.replace("--", "-")
    return name.lower()


class Environment:
    """Installed versions and GPU capabilities, each looked up once per process.

    ``versions`` and ``capabilities`` may be given up front (tests, ``explain`` of a
    hypothetical environment); otherwise they are read lazily.  ``hermetic``: only
    ``versions`` exist, nothing is read from this interpreter's metadata.  A plain class:
    a dataclass costs a few hundred microseconds to create, at every wake-up.
    """

    __slots__ = ("capabilities", "gpu_source", "hermetic", "versions")

    def __init__(self, versions: dict[str, str | None] | None = None,
                 capabilities: list[tuple[int, int]] | None = None, gpu_source: str = "",
                 hermetic: bool = False) -> None:
        self.versions = {canonical(k): v for k, v in (versions or {}).items()}
        self.capabilities = capabilities
        self.gpu_source = gpu_source
        self.hermetic = hermetic

    def __repr__(self) -> str:
        return (f"Environment(versions={self.versions!r}, capabilities={self.capabilities!r},"
                f" gpu_source={self.gpu_source!r}, hermetic={self.hermetic!r})")

    def version(self, dist: str) -> str | None:
        key = canonical(dist)
        if key not in self.versions:
            self.versions[key] = None if self.hermetic else _installed_version(dist)
        return self.versions[key]

    def first_installed(self, dists: tuple[str, ...]) -> tuple[str, str | None]:
        for dist in dists:
            found = self.version(dist)
            if found is not None:
                return dist, found
        return dists[0], None

    def gpu(self) -> list[tuple[int, int]]:
        if self.capabilities is None:
            self.capabilities, self.gpu_source = detect_gpus()
        return self.capabilities


def _installed_version(dist: str) -> str | None:
    from . import installed  # importlib.metadata's answer, read cheaply

    return installed.version(dist)


def detect_gpus() -> tuple[list[tuple[int, int]], str]:
    """Compute capabilities of the visible GPUs, without initialising CUDA here.

    ``SGLANG_SHIMS_GPU_CAPABILITY`` (e.g. ``12.0`` or ``9.0,12.0``) overrides, for
    tests and for machines where detection is wrong.  Otherwise torch is asked only
    if it is already imported and CUDA already initialised; then ``nvidia-smi``.
    """
    override = os.environ.get("SGLANG_SHIMS_GPU_CAPABILITY", "").strip()
    try:
        caps = [(int(major), int(minor or 0)) for major, _, minor in
                (part.partition(".") for part in override.replace(",", " ").split())]
    except ValueError:
        caps = []  # not a capability list: the toggles' warning names it; detect instead
    if caps:
        return caps, "SGLANG_SHIMS_GPU_CAPABILITY"
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_initialized():
            caps = [tuple(cuda.get_device_capability(i)) for i in range(cuda.device_count())]
            return [(int(a), int(b)) for a, b in caps], "torch.cuda"
    except Exception:
        pass
    import shutil
    import subprocess

    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run(
                [smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=10, check=True,
            ).stdout
            caps = []
            for line in out.splitlines():
                major, _, minor = line.strip().partition(".")
                if major.isdigit():
                    caps.append((int(major), int(minor or 0)))
            return caps, "nvidia-smi"
        except (OSError, subprocess.SubprocessError, ValueError):
            pass
    return [], "none found"


OPERATORS = ("===", "==", "!=", "<=", ">=", "~=", "<", ">")


def _without_packaging(version: str, spec: str) -> bool | None:
    """The answer of the import-free PEP 440 reader (``_versions``), where it can tell (a test
    holds it to packaging's answers); None sends the question to packaging, whose import
    costs about 3.5 ms in a process that has not loaded it -- most of waking up."""
    key = _versions.version_key(version)
    if key is None:
        return None
    for clause in (c.strip() for c in spec.split(",")):
        if not clause:
            continue
        op = next((o for o in OPERATORS if clause.startswith(o)), "")
        bound = clause[len(op):].strip()
        if op in ("", "===") or "+" in bound:
            return None
        if bound.endswith(".*"):
            if op not in ("==", "!=") or not all(p.isdigit() for p in bound[:-2].split(".")):
                return None
        elif (other := _versions.version_key(bound)) is None or (
                op == "~=" and not ("." in bound and all(p.isdigit() for p in bound.split(".")))):
            return None  # ~= on a pre-release or other non-plain bound: packaging's call
        elif op in ("<", ">") and other[:2] == key[:2]:
            # "<V" / ">V" against a pre-, post- or dev-release of V itself: packaging < 26
            # and >= 26 answer differently there; let the installed packaging decide
            return None
    return _versions.spec_contains(spec, version)


def satisfies(version: str, spec: str) -> tuple[bool, str]:
    """Is ``version`` inside ``spec``? Returns (answer, problem text if unparseable)."""
    quick = _without_packaging(version, spec)
    if quick is not None:
        return quick, ""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version)
    except InvalidVersion:
        return False, f"version {version!r} is not PEP 440"
    if not spec:
        return True, ""
    return SpecifierSet(spec).contains(parsed, prereleases=True), ""


def check_gate(gate: Gate, env: Environment) -> tuple[bool, str]:
    dist, found = env.first_installed(gate.dists)
    if found is None:
        names = " or ".join(gate.dists)
        return False, f"{names} is not installed (needs {gate.spec or 'any version'})"
    ok, problem = satisfies(found, gate.spec)
    if problem:
        return False, f"{dist}: {problem}"
    verdict = "in" if ok else "not in"
    return ok, f"{dist} {found} {verdict} {gate.spec or 'any version'}"


def check_gpu(spec: str, env: Environment) -> tuple[bool, str]:
    caps = env.gpu()
    if not caps:
        return False, f"no GPU found ({env.gpu_source}); needs compute capability {spec}"
    hits = [c for c in caps if satisfies(f"{c[0]}.{c[1]}", spec)[0]]
    shown = ", ".join(f"{a}.{b}" for a, b in caps)
    if hits:
        return True, f"GPU compute capability {shown} matches {spec}"
    return False, f"GPU compute capability {shown} does not match {spec}"


def evaluate(manifest: Manifest, env: Environment) -> tuple[bool, list[str], str]:
    """Every version gate, then the GPU gate -- only if the versions pass, since it may
    spawn ``nvidia-smi``.  Returns (pass, one line per gate evaluated, first failure)."""
    lines = []
    failure = ""
    for gate in manifest.requires:
        ok, detail = check_gate(gate, env)
        lines.append(detail)
        if not ok and not failure:
            failure = detail
    if manifest.gpu and not failure:
        ok, detail = check_gpu(manifest.gpu, env)
        lines.append(detail)
        if not ok:
            failure = detail
    return not failure, lines, failure
