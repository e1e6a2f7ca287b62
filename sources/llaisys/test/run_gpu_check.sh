#!/usr/bin/env bash
# One-shot check on a GPU machine: CUDA build + install + ctest + pytest on
# both devices + the timing script. Usage (from anywhere):
#   bash sources/llaisys/test/run_gpu_check.sh [build_dir] [prefix] [cuda_archs]
# Every step runs even if an earlier test step fails; the exit code is the
# first failure's.
set -u -o pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-/tmp/llaisys-gpu-build}
P=${2:-/tmp/llaisys-gpu-prefix}
ARCHS=${3:-80;90}
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
rc=0
step() { echo "=== $*"; "$@"; local r=$?; [ $r -ne 0 ] && echo "=== FAILED ($r): $*" && [ $rc -eq 0 ] && rc=$r; return 0; }

nvidia-smi -L || true
cmake --version | head -1
step cmake -S "$SRC" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAISYS_ENABLE_CUDA=ON \
  "-DCMAKE_CUDA_ARCHITECTURES=$ARCHS" "-DCMAKE_CUDA_COMPILER=$NVCC" || exit 1
step cmake --build "$B" -j "$(nproc)"
[ $rc -ne 0 ] && exit $rc
step cmake --install "$B" --prefix "$P"
ldd "$P/lib/libllaisys.so"
echo "exported C API symbols: $(nm -D --defined-only "$P/lib/libllaisys.so" | grep -c ' T llaisys')"
step ctest --test-dir "$B" --output-on-failure
export PYTHONPATH="$P/python"
step python -c "import llaisys; print(llaisys.cuda_info())"
step python -m pytest "$SRC/test" --device nvidia -q
step python -m pytest "$SRC/test" --device cpu -q
step python "$SRC/test/bench_ops.py" --device nvidia
exit $rc
