#!/usr/bin/env bash
# GPU proof, run on a machine with an NVIDIA GPU (the device tool's H100/H200):
# builds the cuda backends of llaisys and gllm-kernels *through builder*, whose
# recipe test steps then run on the GPU:
#   llaisys:      pytest --device nvidia for all eight ops + runtime, and a CUDA-event
#                 timing line per op (test:gpu-timing)
#   gllm-kernels: every artifact loaded through gllm_kernels and compared with torch
#                 (test:gpu-check prints the max-abs-error table)
#   dashinfer:    ctest (gtest, CUDA engine against the CPU engine) and pytest --platform cuda;
#                 protobuf/gtest/glog come from Debian packages carried in .debs/ and installed
#                 with dpkg where the GPU machine lacks them (its registry is unreachable)
# Usage: bash tests/gpu/gpu_proof.sh            (writes its logs to $OUT or /tmp/gpu-proof)
# Wheels for what the GPU machine lacks (jsonschema, conan, …) are taken from .whl/.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/gpu-proof}
mkdir -p "$out"
. tests/gpu/carry.sh  # the carried wheels, this checkout on PYTHONPATH
recipes=${GPU_PROOF_RECIPES:-llaisys gllm-kernels dashinfer}
opts=()
case " $recipes " in *" gllm-kernels "*) opts=(-o gllm-kernels:kernels_root=/tmp/gllm-kernels);; esac
if [ -d .debs ] && [ "$(id -u)" = 0 ]; then
  missing=()
  installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
  for deb in .debs/*.deb; do
    pkg=$(dpkg-deb -f "$deb" Package)
    # Ubuntu 24.04 ships the same runtime libraries renamed for the 64-bit time_t move
    installed "$pkg" || installed "${pkg}t64" || missing+=("$deb")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${#missing[@]} Debian package(s) from .debs/"
    dpkg -i --force-depends --force-breaks "${missing[@]}" > "$out/dpkg.txt" 2>&1 || true
    for pkg in libprotobuf-dev protobuf-compiler libgtest-dev libgoogle-glog-dev; do
      installed "$pkg" || { cat "$out/dpkg.txt"; echo "could not install $pkg"; exit 1; }
    done
  fi
fi
# The GPU machine's default compiler (CXX=/opt/gcc/bin/g++) has no shared libstdc++, which
# builder refuses for recipes with C++ libraries from the system (dashinfer: glog, protobuf);
# its fix is the distribution's compiler.
use_distro_cxx
nvidia-smi -L
python3 -m builder host 2>&1 | tee "$out/host.txt"
# shellcheck disable=SC2086
python3 -m builder plan $recipes --backend cuda --no-commands "${opts[@]}" \
  2>&1 | tee "$out/plan.txt"
# shellcheck disable=SC2086
python3 -m builder build $recipes --backend cuda "${opts[@]}" \
  2>&1 | tee "$out/build.txt"
rc=${PIPESTATUS[0]}
for f in .builder/logs/*test*.log; do echo "===== $f"; cat "$f"; done > "$out/test-logs.txt"
echo "builder build exit code: $rc"
exit "$rc"
