#!/usr/bin/env bash
# GPU proof for build.system python: the CUDAExtension example (fusedops, backend cuda: four
# <torch/extension.h> TUs + two .cu kernels for sm_80 and sm_90) built inside one memory
# cgroup cap two ways:
#   plain:   FUSEDOPS_BACKEND=cuda TORCH_CUDA_ARCH_LIST="8.0;9.0" MAX_JOBS=16 pip wheel
#            --no-build-isolation   (how flash-attention/xformers/vLLM users build: expected
#            to be OOM-killed under the cap)
#   builder: builder build fusedops --backend cuda   (same cap, Ninja at MAX_JOBS=2×cores,
#            every g++/nvcc admitted by memory: expected 0 OOM kills), whose test steps then
#            run the extension on the GPU (test:ops on CPU and GPU, test:gpu: -k cuda)
# Usage: bash tests/gpu/fusedops_cap.sh    (CAP=6GiB by default; logs in $OUT or /tmp/fusedops-cap)
# Wheels for what the GPU machine lacks (jsonschema, ruamel.yaml, …) are taken from .whl/.
# Exit status 0 only when plain was killed (≥ 1 OOM kill or failed) and builder built and
# tested with 0 OOM kills.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
out=${OUT:-/tmp/fusedops-cap}
mkdir -p "$out"
# carried wheels, this checkout on PYTHONPATH; a compiler without a shared libstdc++ (the
# GPU machine's /opt/gcc) links a private copy into the extension: use the distribution's
. tests/gpu/carry.sh
use_distro_cxx
cap=$(python3 -c "from builder.recipe.validate import parse_size; print(parse_size('${CAP:-6GiB}'))")
cores=$(nproc)
work=$(mktemp -d /tmp/fusedops-cap.XXXXXX)
mkdir -p "$work/.git" "$work/recipes" "$work/sources"
cp -r sources/fusedops "$work/sources/"
cp recipes/fusedops.yaml "$work/recipes/"
nvidia-smi -L | tee "$out/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" \
  | tee -a "$out/gpu.txt"
echo "cap $cap bytes, $cores cores" | tee "$out/summary.txt"

t0=$(date +%s)
( cd "$work" && FUSEDOPS_BACKEND=cuda TORCH_CUDA_ARCH_LIST="8.0;9.0" MAX_JOBS=16 \
  TORCH_NO_COMPILER_WRAPPER=1 python3 -m builder.memory.cgroup --limit "$cap" \
  --name "plain$$" -- python3 -m pip wheel --no-build-isolation --no-deps -v \
  -w "$work/dist" "$work/sources/fusedops" ) > "$out/plain.log" 2>&1
plain_rc=$?
plain_s=$(( $(date +%s) - t0 ))
plain_kills=$(grep -o "OOM kills: [0-9]*" "$out/plain.log" | tail -1 | grep -o "[0-9]*$")
echo "plain MAX_JOBS=16 pip wheel: exit $plain_rc, OOM kills ${plain_kills:-?}, ${plain_s}s" \
  | tee -a "$out/summary.txt"

t0=$(date +%s)
( cd "$work" && python3 -m builder.memory.cgroup --limit "$cap" --name "builder$$" -- \
  python3 -m builder build fusedops --backend cuda ) > "$out/builder.log" 2>&1
builder_rc=$?
builder_s=$(( $(date +%s) - t0 ))
builder_kills=$(grep -o "OOM kills: [0-9]*" "$out/builder.log" | tail -1 | grep -o "[0-9]*$")
echo "builder build --backend cuda: exit $builder_rc, OOM kills ${builder_kills:-?}, ${builder_s}s" \
  | tee -a "$out/summary.txt"
grep "^tests: " "$out/builder.log" | tee -a "$out/summary.txt"
cp "$work"/.builder/reports/*.jobs.json "$out/" 2>/dev/null
for f in "$work"/.builder/logs/*test*.log; do echo "===== $f"; cat "$f"; done > "$out/test-logs.txt"
python3 - "$out" <<'PY' | tee -a "$out/summary.txt"
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/fusedops_*build.jobs.json"):
    d = json.load(open(f))
    print(f"budget {d['budget'] >> 20} MiB; jobs (file, peak MiB, cpu s, oom):")
    for j in sorted(d["jobs"], key=lambda j: j["started"]):
        print(f"  {j['file']:32} {j['peak'] >> 20:6} {j['cpu']:7.1f} {j['oom']}")
PY
rm -rf "$work"
plain_killed=0
{ [ "${plain_kills:-0}" -gt 0 ] || [ "$plain_rc" -ne 0 ]; } && plain_killed=1
if [ "$plain_killed" = 1 ] && [ "$builder_rc" = 0 ] && [ "${builder_kills:-1}" = 0 ] && \
   grep -q "test:gpu: [1-9][0-9]* passed" "$out/builder.log"; then
  echo "PASS: plain killed, builder 0 OOM kills and the GPU tests passed" | tee -a "$out/summary.txt"
  exit 0
fi
echo "FAIL (see $out)" | tee -a "$out/summary.txt"
exit 1
