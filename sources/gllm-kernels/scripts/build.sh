#!/usr/bin/env bash
# Build artifacts the way the builder does — one compiler call per
# (kernel, backend, arch) — into <root>/<backend>/<kernel>/<arch>.<ext>.
# For local use and the GPU check; the builder is the real build.
#
# usage: scripts/build.sh [ROOT]        (ROOT defaults to $GLLM_KERNELS_ROOT, else ~/.gsc/gllm/kernels)
# env:   CUDA_ARCHS="sm_80 sm_90"  ROCM_ARCHS="gfx1030"  METAL_ARCHS="apple-m1"
#        (set one to "" to skip that backend; absent compilers are skipped)
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-${GLLM_KERNELS_ROOT:-$HOME/.gsc/gllm/kernels}}
CUDA_ARCHS=${CUDA_ARCHS-"sm_75 sm_80 sm_86 sm_87 sm_89 sm_90"}
ROCM_ARCHS=${ROCM_ARCHS-"gfx1030 gfx1031"}
METAL_ARCHS=${METAL_ARCHS-"apple-m1 apple-m2 apple-m3"}
kernels="flash_attn rms_norm rotary"

for k in $kernels; do
  if [ -n "$CUDA_ARCHS" ] && command -v nvcc >/dev/null; then
    mkdir -p "$root/cuda/$k"
    for a in $CUDA_ARCHS; do
      echo "nvcc -ptx -arch=$a -O3 --use_fast_math kernels/cuda/$k.cu -o $root/cuda/$k/$a.ptx"
      nvcc -ptx -arch="$a" -O3 --use_fast_math "kernels/cuda/$k.cu" -o "$root/cuda/$k/$a.ptx"
    done
  fi
  if [ -n "$ROCM_ARCHS" ] && command -v hipcc >/dev/null; then
    mkdir -p "$root/rocm/$k"
    for a in $ROCM_ARCHS; do
      echo "HIP_PLATFORM=amd hipcc --genco --offload-arch=$a -O3 kernels/rocm/$k.hip -o $root/rocm/$k/$a.hsaco"
      HIP_PLATFORM=amd hipcc --genco --offload-arch="$a" -O3 "kernels/rocm/$k.hip" -o "$root/rocm/$k/$a.hsaco"
    done
  fi
  if [ -n "$METAL_ARCHS" ] && command -v xcrun >/dev/null; then
    # Metal has no per-chip codegen flag: the .air is the same for every
    # apple-mN; one library per arch name keeps the root layout uniform.
    mkdir -p "$root/metal/$k"
    tmp=$(mktemp -d)
    xcrun -sdk macosx metal -std=macos-metal2.4 -c "kernels/metal/$k.metal" -o "$tmp/$k.air"
    for a in $METAL_ARCHS; do
      xcrun -sdk macosx metallib "$tmp/$k.air" -o "$root/metal/$k/$a.metallib"
    done
    rm -rf "$tmp"
  fi
done
echo "artifacts under $root"
