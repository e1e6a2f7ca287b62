"""Builds under a memory cap: fixed `-jN` against builder's memory-aware scheduling.

Runs a workload's clean build inside a memory cgroup capped at ``--cap``:
(a) `cmake --build -j<cores>`, (b) `-j1`, (c) every other fixed `-jN`, (d) builder
cold (empty build history) and then with history.  Prints OOM kills, the build
step's wall time, the cap's peak usage (page cache included, which the kernel reclaims
before it kills) and the ratio of (d) to the best fixed `-jN` that had no OOM kill.

Workloads (``--workload``): ``libamm`` (recipes/libamm.yaml: g++ on torch/torch.h,
default cap 2.6GiB) and ``nvcc`` (bench/recipes/nvccload.yaml: nvcc on torch/extension.h
for two archs at once; default cap 16GiB).  The fixed runs configure the same
sources with the recipe's archs and release flags.

Targets: builder has 0 OOM kills in every run; cold its wall time is ≤ 1.05× the best
fixed -jN that survived every repeat, with history ≤ 1.0×, median against median (the
fastest runs' ratio is printed too); at a cap where -j<cores> OOMs it is faster than -j1.
Where no memory cgroup can be created this says so and exits 2.

A fixed `-jN` whose jobs only sometimes peak together (two torch TUs at the 2.6 GiB
cap on 2 cores) passes one run and is killed the next: ``--repeats 3`` runs every
fixed `-jN` three times and counts it as safe only if no run was killed — and builder's
cold build three times, since the same build varies by ±10 % from run to run on the GPU
machines (libamm's `-j5`: 54.0, 57.9, 62.8 s on one machine).

In pieces (each of the whole does not fit a 10-minute command on 16 cores): ``--work
DIR`` keeps builds, builder's state (its history) and logs, and appends each run's row to
DIR/results.json; ``--only fixed:16,fixed:4,cold,history`` runs only those (``history``
needs the cold run's state in the same DIR); ``--summary`` prints the table and targets
from DIR/results.json without running anything.

    python bench/memory_cap.py [--workload libamm|nvcc] [--cap SIZE] [--cores N]
                               [--fixed 4,5,6] [--history-runs 2] [--repeats 3]
                               [--work DIR] [--only RUNS] [--summary]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.capbench import (  # noqa: E402
    append_row,
    can_cgroup,
    capped,
    cgroup_peak,
    host_info,
    load_rows,
    most_at_once,
    summarize,
)
from builder.recipe.validate import parse_size  # noqa: E402

__all__ = ["WORKLOADS", "Workload", "main"]

PY = sys.executable
Row = dict[str, Any]


@dataclass(frozen=True)
class Workload:
    name: str
    recipe: Path  # builder builds it by this path
    package: str  # the recipe's package name: its logs and reports
    backend: str
    cap: str  # the default cap

    def source(self) -> Path:
        doc = yaml.safe_load(self.recipe.read_text())
        return (self.recipe.parent / str(doc["source"]["path"])).resolve()

    def cmake_args(self, torch_cmake: str) -> list[str]:
        """The fixed runs' configure arguments: the recipe's archs and release flags."""
        doc = yaml.safe_load(self.recipe.read_text())
        flags = doc.get("flags", {}).get("release", {})
        args = ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                f"-DCMAKE_PREFIX_PATH={torch_cmake}", f"-DPython_EXECUTABLE={PY}",
                "-DCMAKE_CXX_FLAGS=" + " ".join(flags.get("cxx", []))]
        archs = doc.get("backends", {}).get(self.backend, {}).get("archs", [])
        if archs:
            args.append("-DCMAKE_CUDA_ARCHITECTURES=" + ";".join(
                str(a).removeprefix("sm_") for a in archs))
        if flags.get("cuda"):
            args.append("-DCMAKE_CUDA_FLAGS=" + " ".join(map(str, flags["cuda"])))
        return args


WORKLOADS = {
    "libamm": Workload("libamm", REPO / "recipes" / "libamm.yaml", "libamm", "cpu", "2.6GiB"),
    "nvcc": Workload("nvcc", REPO / "bench" / "recipes" / "nvccload.yaml", "nvccload", "cuda",
                     "16GiB"),
}


@dataclass(frozen=True)
class Bench:
    wl: Workload
    cap: int
    work: Path  # this workload's folder under --work
    torch_cmake: str


def fixed(b: Bench, jobs: int) -> Row:
    build = b.work / f"build-j{jobs}"
    shutil.rmtree(build, ignore_errors=True)
    subprocess.run(["cmake", "-S", str(b.wl.source()), "-B", str(build),
                    *b.wl.cmake_args(b.torch_cmake)], check=True, capture_output=True)
    log = b.work / f"j{jobs}.log"
    rc, kills, secs, out = capped(b.cap, f"bench-j{jobs}", ["cmake", "--build", str(build),
                                                            "-j", str(jobs)], log)
    return {"run": f"fixed -j{jobs}", "jobs": jobs, "ok": rc == 0, "oom": kills,
            "seconds": secs, "peak": cgroup_peak(out), "log": str(log)}


def repeated(b: Bench, jobs: int, times: int) -> Row:
    """``fixed`` run ``times`` times: safe only if no run had an OOM kill; ``good`` lists
    the times of the runs that were not killed (``seconds``: the fastest)."""
    runs = [fixed(b, jobs) for _ in range(max(times, 1))]
    good = [r for r in runs if r["ok"] and not r["oom"]]
    killed = sum(1 for r in runs if r["oom"] or not r["ok"])
    row = dict(min(good, key=lambda r: float(r["seconds"])) if good else runs[-1])
    row.update(ok=all(r["ok"] for r in runs), oom=sum(int(r["oom"]) for r in runs),
               peak=max(int(r["peak"]) for r in runs), runs=len(runs), killed=killed,
               good=[float(r["seconds"]) for r in good])
    return row


def with_builder(b: Bench, label: str) -> Row:
    state, pkg = b.work / "state", b.wl.package
    for sub in ("build", "stage", "install", "wheels", "reports", "logs"):
        shutil.rmtree(state / sub, ignore_errors=True)  # a clean build; history stays
    log = b.work / f"builder-{label}.log"
    rc, kills, secs, out = capped(b.cap, f"bench-{label}", [
        PY, "-m", "builder", "--state-dir", str(state), "build", str(b.wl.recipe),
        "--backend", b.wl.backend, "--no-tests"], log)
    m = re.search(rf"done +{re.escape(pkg)}/\S+/build \(([\d.]+)s\)", out)
    build_secs = float(m.group(1)) if m else secs
    logs = "".join(p.read_text() for p in state.glob(f"logs/{pkg}_*_build.log"))
    nested = sum(int(k) for k in re.findall(r"OOM kills: (\d+)", logs))
    jobs = _jobs(state, pkg)
    return {"run": f"builder ({label})", "ok": rc == 0, "oom": kills + nested,
            "seconds": build_secs, "peak": max(cgroup_peak(out), cgroup_peak(logs)),
            "retries": sum(1 for j in jobs if j.get("retry")),
            "pauses": sum(int(str(j.get("pauses", 0))) for j in jobs),
            "most": most_at_once(jobs),
            "timed": f"{sum(1 for j in jobs if float(str(j.get('model_cpu', 0) or 0)) > 0)}"
                     f"/{len(jobs)}",
            "curved": sum(1 for j in jobs if j.get("model_curve")),
            # why the time model held jobs at their peaks (job-seconds; policy.envelope)
            "above": round(sum(float(str(j.get("above", 0))) for j in jobs), 1),
            "overdue": round(sum(float(str(j.get("overdue", 0))) for j in jobs), 1),
            "paused_s": round(sum(float(str(j.get("paused", 0))) for j in jobs), 1),
            "log": str(log)}


def _jobs(state: Path, pkg: str) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for p in state.glob(f"reports/{pkg}_*build.jobs.json"):
        out.extend(json.loads(p.read_text()).get("jobs", []))
    return out


def keep_reports(b: Bench, label: str, dest_root: Path | None) -> None:
    if dest_root is None:
        return
    state, dest = b.work / "state", dest_root / b.wl.name / label
    dest.mkdir(parents=True, exist_ok=True)
    for f in [*state.glob(f"reports/{b.wl.package}_*build.jobs.json"),
              *state.glob(f"build/{b.wl.package}/*/cmake/.ninja_log"),
              *state.glob("memory-history.json")]:
        shutil.copy(f, dest / f.name)


def plan_runs(args: argparse.Namespace) -> list[str]:
    """The runs to make, in order: ``fixed:N``, ``cold``, ``history``."""
    if args.only:
        runs = [x.strip() for x in args.only.split(",") if x.strip()]
        bad = [r for r in runs if r not in ("cold", "history") and
               not re.fullmatch(r"fixed:\d+", r)]
        if bad:
            raise SystemExit(f"memory_cap: --only: unknown run(s) {bad} (fixed:N, cold, history)")
        times = {"history": args.history_runs, "cold": args.repeats}
        return [x for r in runs for x in [r] * times.get(r, 1)]
    runs = [] if args.no_baselines else [f"fixed:{args.cores}", "fixed:1"]
    extra = [int(x) for x in args.fixed.split(",") if x.strip()] if args.fixed else \
        list(range(2, args.cores))
    runs += [f"fixed:{j}" for j in extra if j not in (1, args.cores)]
    return [*runs, *["cold"] * args.repeats, *["history"] * args.history_runs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="libamm")
    ap.add_argument("--cap", help="memory cap of every run (default: libamm 2.6GiB, where two "
                    "torch translation units at once do not fit; nvcc 16GiB)")
    ap.add_argument("--cores", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--fixed", default="", metavar="N,N,…",
                    help="the fixed -jN runs besides -j<cores> and -j1 (default: every N)")
    ap.add_argument("--history-runs", type=int, default=1, metavar="N",
                    help="builder runs with history after the cold one, and per `history` in "
                    "--only (default 1; the last is compared with the target)")
    ap.add_argument("--repeats", type=int, default=1, metavar="N",
                    help="run every fixed -jN and builder's cold build N times (a fixed -jN "
                    "is safe only if no run was killed; the history runs follow the last "
                    "cold one) (default 1)")
    ap.add_argument("--no-baselines", action="store_true",
                    help="skip -j<cores> and -j1 (only --fixed and builder; for investigations)")
    ap.add_argument("--work", type=Path, metavar="DIR",
                    help="keep builds, builder's state, logs and results.json here (default: "
                    "a new temporary folder)")
    ap.add_argument("--only", metavar="RUNS",
                    help="comma list of fixed:N, cold, history: run only these")
    ap.add_argument("--summary", action="store_true",
                    help="print the table and targets from --work's results.json; run nothing")
    ap.add_argument("--copy-reports", type=Path, metavar="DIR",
                    help="copy builder's per-job reports and every run's .ninja_log here")
    args = ap.parse_args()
    wl = WORKLOADS[args.workload]
    if args.summary:
        if not args.work:
            ap.error("--summary needs --work")
        return 0 if summarize(load_rows(args.work), wl.name) else 1
    why = can_cgroup()
    if why:
        print(f"memory_cap: cannot create a memory cgroup here ({why}); no meaningful numbers "
              "can be measured without one", file=sys.stderr)
        return 2
    cap_text = args.cap or wl.cap
    runs = plan_runs(args)
    root = (args.work or Path(tempfile.mkdtemp(prefix="memory-cap-"))).resolve()
    work = root / wl.name
    work.mkdir(parents=True, exist_ok=True)
    if "history" in runs and "cold" not in runs and \
            not (work / "state" / "memory-history.json").is_file():
        print(f"memory_cap: `history` needs a cold run's state in {work}/state; run "
              "--only cold first", file=sys.stderr)
        return 2
    import torch.utils

    b = Bench(wl, parse_size(cap_text), work, torch.utils.cmake_prefix_path)
    print(f"cap {cap_text}, {args.cores} cores, {wl.name} clean builds; logs in {work}")
    common = {"workload": wl.name, "cap": cap_text, "host": host_info(args.cores)}
    earlier = 0  # builder runs with history since the last cold one
    for r in load_rows(root):
        if r["workload"] == wl.name and r["cap"] == cap_text and r["run"].startswith("builder"):
            earlier = 0 if r["run"] == "builder (cold)" else earlier + 1
    failed = False
    for run in runs:
        if run.startswith("fixed:"):
            row = repeated(b, int(run.split(":")[1]), args.repeats)
        else:
            if run == "cold":
                shutil.rmtree(work / "state", ignore_errors=True)  # history too
                earlier = -1
            # a peak measured twice (agreeing) gets the 1.5 % margin instead of 5 %
            earlier += 1
            label = "cold" if run == "cold" else "history" + (f"-{earlier}" if earlier > 1
                                                              else "")
            row = with_builder(b, label)
            keep_reports(b, label, args.copy_reports)
            failed = failed or bool(row["oom"]) or not row["ok"]
        append_row(root, {**common, **row})
    if args.copy_reports:
        for build in work.glob("build-j*"):
            if (build / ".ninja_log").is_file():
                dest = args.copy_reports / wl.name
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy(build / ".ninja_log", dest / f"{build.name}.ninja_log")
    ok = summarize(load_rows(root), wl.name)
    return 1 if failed or (not ok and not args.only) else 0


if __name__ == "__main__":
    sys.exit(main())
