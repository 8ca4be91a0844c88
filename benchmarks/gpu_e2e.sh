#!/usr/bin/env bash
# One command for the end-to-end and kernel runs on a GPU machine without network:
#
#   benchmarks/gpu_e2e.sh CARRY OUT [e2e_serve.py arguments...]
#
# CARRY (built on a machine with network, see benchmarks/README.md) holds
#   site.tar.xz     the sglang release under test and what its serving graph imports that
#                   the machine lacks (from ../shared/tools/gpu-wheelhouse), unpacked into
#                   one folder that goes on PYTHONPATH;
#   kern.tar.xz     optional: a real sgl_kernel package (+ dist-info) for modes real/broken;
#   shims/*.whl     this project's wheel (installed into the machine's python, so the .pth
#                   is live in every process);
#   bin/patchelf    for mode broken.
# Which sglang is tested is which site.tar.xz is carried; which modes and tiers, the
# arguments (default: every mode, the three speed tiers, CUDA graphs on, and the kernel
# table).  Results land in OUT: e2e.md, e2e.json, kernels.md, logs.tar.gz.
# MoE and FP8 through the fallback (issue 17): the one-call command and its expected time
# are in benchmarks/README.md ("MoE and FP8 through the fallback").
set -uo pipefail
carry=${1:?usage: gpu_e2e.sh CARRY OUT [e2e args]}; out=${2:?usage: gpu_e2e.sh CARRY OUT}
shift 2
py=${PYTHON:-python3}
# fresh private folders each call: unpacking over an earlier carry (another sglang's
# site folder on a machine kept warm between calls) mixes two releases' files
site=$(mktemp -d) kern=$(mktemp -d) || exit 1
mkdir -p "$out"
tar -xJf "$carry/site.tar.xz" -C "$site" || exit 1
kernel_args=()
[ -f "$carry/fidata.tar.xz" ] && { tar -xJf "$carry/fidata.tar.xz" -C "$site" || exit 1; }
if [ -f "$carry/kern.tar.xz" ]; then
  tar -xJf "$carry/kern.tar.xz" -C "$kern" || exit 1
  kernel_args=(--kernel-dir "$kern" --patchelf "$carry/bin/patchelf")
fi
"$py" -m pip install -q --no-index --no-deps --force-reinstall "$carry"/shims/*.whl || exit 1
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
if [ $# -eq 0 ]; then
  set -- --modes none,real,broken --speed none:triton,none:torch,real:aot --cuda-graphs
fi
work=$(mktemp -d)
timeout "${E2E_TIMEOUT:-540}" "$py" examples/e2e_serve.py --out "$work/e2e" "${kernel_args[@]}" "$@"
rc=$?
cp "$work/e2e/e2e.md" "$work/e2e/e2e.json" "$out/" 2>/dev/null
if [ -n "${KERNELS:-}" ]; then  # the kernel table, AOT column when the real kernel imports
  # SGLANG_SHIMS=0: the AOT column is the kernel as shipped, nothing of ours bound onto it
  SGLANG_SHIMS=0 PYTHONPATH=$kern:$PYTHONPATH timeout "${KERNELS_TIMEOUT:-240}" \
    "$py" benchmarks/kernels.py $KERNELS > "$out/kernels.md" 2>&1
fi
tar -czf "$out/logs.tar.gz" -C "$work/e2e" --exclude='triton-cache-*' --exclude='reports-*' . \
  2>/dev/null
exit $rc
