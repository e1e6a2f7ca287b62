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
# SEED=FILE starts $WORK/results.json from an earlier piece's results.json (a fresh machine;
# its rows are kept, but builder's runs are compared only with the fixed -jN runs of their
# own machine, told apart by boot id: run the fixed pieces again there).
# Writes to $OUT (or /tmp/memory-bench): results.json, summary.txt, the piece's log, and
# for builder runs its per-job reports, .ninja_log and memory history (reports.tgz).
#
# Measured on 16 cores (H100 machine, 2026-11-24; bench/RESULTS.md has every run): libamm at
# --cap 6GiB: -j16 and -j6 killed within ~25 s, -j5 ~56 s, -j4 ~70 s, builder cold ~80-95 s
# and with history ~75 s; nvcc (bench/recipes/nvccload.yaml: seven .cu, two archs,
# --threads 2, a torch/extension.h TU ~65 s at ~5.4 GB) at 16GiB (2026-11-25):
# -j4 killed, -j3 115-148 s, builder cold 111-140 s, with history ~104 s.  --repeats N runs
# every fixed -jN *and* builder's cold build N times (the targets compare medians).  Pieces
# that fit one command each (≤ 10 min):
#   1) libamm fixed:5,cold --cap 6GiB --repeats 3         7.1-9.2 min (2026-11-25)
#   2) libamm history --cap 6GiB --history-runs 3         3.8-4.6 min (same warm machine: the
#                                                         history is in $WORK)
#   3) libamm fixed:4,fixed:6 --cap 6GiB --repeats 2      ~3 min
#   4) nvcc fixed:3 --cap 16GiB --repeats 3               7.8 min with the machine's start
#   5) nvcc cold --cap 16GiB --repeats 3                  6.8-8.6 min
#   6) nvcc history --cap 16GiB --history-runs 3          5.9 min (after 5, same machine)
#   7) nvcc fixed:4 --cap 16GiB                           ~1.7 min (2 OOM kills)
# 1-2 and 4-6 fill one 30-minute lease each.  -j1 of either does not fit well (libamm
# ~4 min, nvcc ~6.5 min by its TUs' times).  A piece that hits the
# limit leaves the rows it finished; SEED carries results.json to a fresh machine.
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
# what comes back from the GPU machine is at most 8 files, 2 folders down: one archive
if [ -d "$out/reports" ]; then
  tar -czf "$out/reports.tgz" -C "$out" reports && rm -rf "$out/reports"
fi
exit "$rc"
