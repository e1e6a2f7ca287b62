#!/usr/bin/env bash
# bench/memory_cap.py on the GPU machine, in pieces that each fit one 10-minute command:
# every piece appends its rows to $WORK/results.json (WORK=/root/memory-bench-<workload>,
# which stays while the machine is warm: run the pieces of one workload back to back), and
# every piece ends with the table of all rows so far and the targets.
#
# Usage: bash tests/gpu/memory_bench.sh WORKLOAD RUNS [memory_cap.py options]
#   WORKLOAD  libamm | nvcc
#   RUNS      comma list of fixed:N, cold, history (memory_cap.py --only), or `summary`
# e.g.      bash tests/gpu/memory_bench.sh libamm fixed:4,fixed:5 --cap 6GiB --repeats 3
#           (give every piece of one table the same --cap: rows group by workload and cap)
# SEED=FILE starts $WORK/results.json from an earlier piece's results.json (a fresh machine).
# Writes to $OUT (or /tmp/memory-bench): results.json, summary.txt, the piece's log, and
# for builder runs its per-job reports, .ninja_log and memory history (reports/).
#
# Planned sequence on 16 cores (H100 machine; FACTS.md: libamm -j5 67 s, builder cold ~80 s).
# nvcc workload, measured on the dev machine (bench/nvcc_peaks.py): a torch/extension.h .cu
# takes 54 s of CPU for one arch + 37 s per further arch and peaks at 2.9 GB per arch
# compiled at once, so with 4 archs at --threads 2 each of its 9 such TUs runs ~90 s at
# ~5.6 GB: -j2 (11 GB) fits 16GiB, -j3 only when peaks miss each other, -j8 uncapped
# ~3 min. libamm at --cap 6GiB (four torch TUs fit, five may not; 2.6GiB is the 2-core
# machine's cap), nvcc at its default 16GiB:
#   1) libamm fixed:16,fixed:1 --cap 6GiB                 -j16 killed in ~30 s, -j1 ~5.5 min
#   2) libamm fixed:4,fixed:5 --cap 6GiB --repeats 3      6 runs × ~70 s ≈ 7 min
#   3) libamm fixed:6,fixed:8 --cap 6GiB --repeats 3      killed runs end early: ≤ 6 min
#   4) libamm cold,history --cap 6GiB --history-runs 2    ~80 + 2 × 70 s ≈ 4 min
#   5) nvcc fixed:2                                       ~7.5 min
#   6) nvcc fixed:16,fixed:4                              both killed within ~1–2 min each
#   7) nvcc fixed:3          (twice: 7a, 7b; rows of one -jN merge, as --repeats)  ~5.5 min
#   8) nvcc cold                                          ~5–7 min
#   9) nvcc history                                       ~5–6 min
#  10) nvcc fixed:8 --cap 120GiB (uncapped: its own table) ~3 min, the workload's size check
# -j1 of nvcc (~15 min: 12 TUs × ~75 s) does not fit a command; the "-j16 OOMs, builder vs
# -j1" line is for libamm only.  A piece that hits the limit leaves the rows it finished.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 2 ] || { sed -n '2,13p' "$0"; exit 2; }
workload=$1 runs=$2
shift 2
out=${OUT:-/tmp/memory-bench}
work=${WORK:-/root/memory-bench-$workload}
mkdir -p "$out" "$work"
# SEED=results.json of earlier pieces (carried from the dev machine): a fresh machine goes on
# with the same table
if [ -n "${SEED:-}" ] && [ -f "$SEED" ] && [ ! -e "$work/results.json" ]; then
  cp "$SEED" "$work/results.json"
fi
. tests/gpu/carry.sh
use_distro_cxx
if [ "$runs" = summary ]; then
  python3 bench/memory_cap.py --workload "$workload" --work "$work" --summary "$@" \
    | tee "$out/summary.txt"
  rc=${PIPESTATUS[0]}
else
  nvidia-smi -L 2>/dev/null | head -1
  python3 bench/memory_cap.py --workload "$workload" --work "$work" --only "$runs" \
    --copy-reports "$out/reports" "$@" 2>&1 | tee "$out/piece-${runs//[:,]/_}.log"
  rc=${PIPESTATUS[0]}
  python3 bench/memory_cap.py --workload "$workload" --work "$work" --summary "$@" \
    > "$out/summary.txt"
fi
cp "$work/results.json" "$out/" 2>/dev/null
exit "$rc"
