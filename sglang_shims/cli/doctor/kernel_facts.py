"""Facts about published sgl-kernel / sglang-kernel wheels that ``doctor`` checks against.

Kept apart from the checks so that a new release is one line here.  Every row says
where it comes from: sgl-kernel's build files at each version-bump commit in sglang's
repository, PyPI metadata, or a published wheel read while writing this file.
Versions are PEP 440 strings, ranges are inclusive at both ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from .version_text import local_label, minor_of, public_version, version_between


@dataclass(frozen=True)
class KernelBuild:
    """Kernel versions ``first``..``last`` (inclusive) were built against ``torch``.

    ``label`` is a local version label (``cu130``) when only that CUDA variant used
    another torch; ``None`` is the PyPI default build (and every other variant).
    """

    first: str
    last: str
    torch: str
    label: str | None = None
    also: tuple[str, ...] = ()
    """Other torch releases whose libraries export every torch symbol these wheels import."""
    gone: bool = False
    """No longer on PyPI: diagnosed when installed, never offered as a kernel to install."""

    @property
    def dist(self) -> str:
        """The PyPI name these versions were published under (renamed at 0.4.0)."""
        return "sglang-kernel" if self.first.startswith("0.4.") else "sgl-kernel"


# At each bump commit: TORCH_INSTALL in sgl-kernel/build.sh up to 0.3.20, the
# Dockerfile's TORCH_VER block from 0.3.21 (sglang PR #14066).  Requires-Dist says
# nothing until 0.4.7.
# Label-specific rows come first: the first matching row wins.
#
# 0.1.x (the first releases still on PyPI; 0.0.x are gone from it) were read from the
# published x86_64 wheels instead: the c10/at/torch symbols their extension modules import
# (nm -D --undefined-only), looked up in the exports of torch 2.5.1, 2.6.0 and 2.7.1's
# libraries (PyPI wheels).  0.1.0 resolves in 2.5.1 and 2.6.0; 0.1.1-0.1.6.post1 only in
# 2.6.0 (one symbol missing from 2.5.1, eight from 2.7.1); 0.1.7-0.1.9 only in 2.7.1
# (eight missing from 2.6.0), as 0.2.0 -- the row the build scripts give -- does too.
# sglang's pins agree: 0.4.6.post1-post5 pin 0.1.0-0.1.4 with torch 2.6.0, 0.4.7-0.4.8.post1
# pin 0.1.7/0.1.9 with torch 2.7.1.
#
# 0.0.x are gone from PyPI, so their libraries cannot be read; the row comes from the sglang
# wheels that pinned them (Requires-Dist, read from each wheel): 0.4.3.post3-0.4.5.post2 pin
# sgl-kernel 0.0.3.post6, 0.0.5, 0.0.5.post3, 0.0.5.post4, 0.0.8, 0.0.9.post1, 0.0.9.post2 each
# with torch==2.5.1, and 0.4.5.post3/0.4.6 pin 0.0.9.post2 with torch==2.6.0; sglang issue
# 5247 (a PyTorch developer) reports these 2.5.1 builds loading on 2.6 and failing on 2.7.
KERNEL_BUILDS: tuple[KernelBuild, ...] = (
    KernelBuild("0.0.3.post6", "0.0.9.post2", "2.5.1", also=("2.6.0",), gone=True),
    KernelBuild("0.3.16.post4", "0.3.18", "2.9.0", label="cu130"),
    KernelBuild("0.1.0", "0.1.0", "2.6.0", also=("2.5.1",)),
    KernelBuild("0.1.1", "0.1.6.post1", "2.6.0"),
    KernelBuild("0.1.7", "0.1.9", "2.7.1"),
    KernelBuild("0.2.0", "0.2.9", "2.7.1"),
    KernelBuild("0.3.0", "0.3.16.post3", "2.8.0"),
    KernelBuild("0.3.16.post4", "0.3.18", "2.8.0"),
    KernelBuild("0.3.18.post1", "0.3.21", "2.9.1"),
    KernelBuild("0.4.0", "0.4.1.post1", "2.9.1"),
    KernelBuild("0.4.2", "0.4.6", "2.11.0"),
    KernelBuild("0.4.6.post1", "0.4.8", "2.13.0"),
    KernelBuild("0.4.9", "0.4.10", "2.14.1"),
)


def kernel_builds(version: str) -> list[KernelBuild]:
    """The rows for a kernel version: the one of its local label (``+cu130``) if any, else
    the default build's."""
    label = local_label(version)
    public = public_version(version)
    hits = [b for b in KERNEL_BUILDS if version_between(public, b.first, b.last)]
    exact = [b for b in hits if b.label and b.label == label]
    return exact or [b for b in hits if b.label is None]


def builds_for_torch(torch_version: str) -> list[KernelBuild]:
    """The default builds, still published, made with this torch's minor."""
    wanted = minor_of(torch_version)
    return [b for b in KERNEL_BUILDS
            if b.label is None and not b.gone and minor_of(b.torch) == wanted]


# CUDA major of the PyPI default file (no local label), from the same build files:
# cu124 up to 0.3.8, cu129 from 0.3.9 (PR #10188), cu130 from 0.4.2 (PR #24162); 0.1.0 and
# 0.1.9 read from the wheels (readelf -d: libcudart.so.12, libnvrtc.so.12).
DEFAULT_CUDA_MAJOR: tuple[tuple[str, str, int], ...] = (
    ("0.1.0", "0.1.9", 12),
    ("0.2.0", "0.3.8", 12),
    ("0.3.9", "0.4.1.post1", 12),
    ("0.4.2", "0.4.10", 13),
)

# Where the other CUDA variants are served (sglang PR #18747 names the index).
VARIANT_INDEX = "https://docs.sglang.ai/whl/{label}/"

# sglang issue 8432: versions whose common_ops imports cuGreenCtx* from the driver as
# undefined dynamic symbols.  Measured on the published x86_64 wheels with
# ``readelf --dyn-syms``: none in 0.2.5; three (cuGreenCtxCreate/Destroy/StreamCreate
# family) in 0.2.6, 0.2.7, 0.2.8, 0.2.9, 0.3.0, 0.3.3, 0.3.5; from 0.3.6.post1 (PR
# #9231) they live only in the optional spatial_ops extension (0.3.6.post1, 0.3.7,
# 0.3.9, 0.3.18 checked), so common_ops loads on an old driver.
GREEN_CTX_FIRST = "0.2.6"
GREEN_CTX_LAST = "0.3.5"
GREEN_CTX_FIXED = "0.3.6.post1"
# The driver API release that introduced each symbol (CUDA driver API reference, "Green
# Contexts"; sglang PR 8090): cuGreenCtxCreate/Destroy came with 12.4, but
# cuGreenCtxStreamCreate only with 12.5, so a 12.4 driver still fails on it.  As
# (cuDriverGetVersion, first Linux driver branch).
GREEN_CTX_SYMBOLS: dict[str, tuple[int, int]] = {
    "cuGreenCtxCreate": (12040, 550),
    "cuGreenCtxDestroy": (12040, 550),
    "cuGreenCtxStreamCreate": (12050, 555),
}
# What common_ops of 0.2.6-0.3.5 imports (readelf, above): all three.
GREEN_CTX_NEEDED = ("cuGreenCtxCreate", "cuGreenCtxDestroy", "cuGreenCtxStreamCreate")
GREEN_CTX_MIN_DRIVER = max(GREEN_CTX_SYMBOLS[s][0] for s in GREEN_CTX_NEEDED)
GREEN_CTX_MIN_DRIVER_BRANCH = max(GREEN_CTX_SYMBOLS[s][1] for s in GREEN_CTX_NEEDED)


def green_ctx_lacking(driver_cuda: int | None, branch: int | None) -> list[str]:
    """The needed green-context symbols a driver (by CUDA version or branch) lacks."""
    return [s for s in GREEN_CTX_NEEDED
            if (driver_cuda is not None and driver_cuda < GREEN_CTX_SYMBOLS[s][0])
            or (driver_cuda is None and branch is not None and branch < GREEN_CTX_SYMBOLS[s][1])]

# Where a GPU can find kernel images, by compute capability: the -gencode targets of
# sgl-kernel/CMakeLists.txt (SGL_KERNEL_CUDA_FLAGS) at each bump commit.  Shown as part
# of a "no kernel image" remedy.
_SM8X = ("x86_64 builds carry sm_80/sm_89; aarch64 builds have no sm_8x code"
         " (ENABLE_BELOW_SM90 is off there)")
ARCH_HINTS: dict[tuple[int, int], str] = {
    (7, 5): "sm_75 was dropped in sgl-kernel 0.3.6.post1 (PR #9207); 0.3.5 and older carry it",
    (8, 0): _SM8X,
    (8, 6): _SM8X,
    (8, 7): _SM8X,
    (8, 9): _SM8X,
    (10, 0): "PyPI builds from 0.3.9 carry sm_100a; for 0.3.8 and older use the +cu128 build"
             " from https://docs.sglang.ai/whl/cu128/",
    (10, 3): "only +cu130 builds (sm_103a) or sglang-kernel >= 0.4.6 (sm_100f covers 10.x)"
             " carry code for 10.3",
    (11, 0): "only the aarch64 CUDA-13 builds carry sm_110a",
    (12, 0): "PyPI builds from 0.3.9 carry sm_120a; for 0.3.8 and older use the +cu128 build"
             " from https://docs.sglang.ai/whl/cu128/",
    (12, 1): "only the aarch64 CUDA-13 builds carry sm_121a (DGX Spark / GB10)",
}

# Shared objects a kernel library may need, by soname stem: (pip name for CUDA 12,
# pip name for CUDA 13).  CUDA 12 packages carry a -cu12 suffix; the CUDA 13 ones
# are versioned 13.x and install into site-packages/nvidia/cu13/lib.
CUDA_LIB_PACKAGES: dict[str, tuple[str, str]] = {
    "libcudart": ("nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime"),
    "libnvrtc": ("nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc"),
    "libcublas": ("nvidia-cublas-cu12", "nvidia-cublas"),
    "libcublasLt": ("nvidia-cublas-cu12", "nvidia-cublas"),
    "libcufft": ("nvidia-cufft-cu12", "nvidia-cufft"),
    "libcurand": ("nvidia-curand-cu12", "nvidia-curand"),
    "libcusparse": ("nvidia-cusparse-cu12", "nvidia-cusparse"),
    "libcusolver": ("nvidia-cusolver-cu12", "nvidia-cusolver"),
    "libnvJitLink": ("nvidia-nvjitlink-cu12", "nvidia-nvjitlink"),
    "libcupti": ("nvidia-cuda-cupti-cu12", "nvidia-cuda-cupti"),
}

# System libraries outside CUDA and torch that a kernel library needs, with the
# package that provides them.  libnuma.so.1 is in common_ops' DT_NEEDED (0.3.18).
SYSTEM_LIB_PACKAGES: dict[str, str] = {
    "libnuma.so.1": "apt-get install libnuma1 (Debian/Ubuntu) or dnf install numactl-libs",
}

# Provided by torch itself: loaded by ``import torch``, which sgl_kernel does first.
TORCH_LIB_PREFIXES = ("libtorch", "libc10", "libshm", "libcaffe2")

# What ``import torch`` (a CUDA build) loads from pip's site-packages/nvidia/<lib>/lib
# or nvidia/cu<major>/lib beyond the DT_NEEDED of its own libraries, by soname stem:
# _load_global_deps() in torch/__init__.py, read in the published wheels.  2.8.0
# preloads libnvrtc; 2.9.1 adds libnvJitLink; 2.13.0 preloads its whole CUDA list.
# Each row holds from that release on (2.10-2.12 were not read: treated as 2.9).
TORCH_PRELOADS: tuple[tuple[str, frozenset[str]], ...] = (
    ("2.8", frozenset({"libnvrtc"})),
    ("2.9", frozenset({"libnvrtc", "libnvJitLink"})),
    ("2.13", frozenset({
        "libcublasLt", "libcublas", "libcudnn", "libnvrtc", "libcudart", "libcupti",
        "libcufft", "libcurand", "libnvJitLink", "libcusparse", "libcusparseLt",
        "libcusolver", "libnccl", "libnvshmem_host", "libcufile",
    })),
)

# Always present with glibc / the compiler runtime: never reported.
BASE_LIBS = frozenset({
    "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
    "libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
    "libutil.so.1",
})
