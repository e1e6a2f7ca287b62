"""fusedops (a torch CUDAExtension: four <torch/extension.h> TUs and two .cu for sm_80 and
sm_90) built inside one memory cgroup cap: builder's cold build against plain
``MAX_JOBS=N pip wheel``, each repeated.

For each run it prints the wall time, the OOM kills the cap counted (``builder.memory.
cgroup``), and for builder the compile span (first job queued to last job ended, from the
step's jobs report), the most the build cgroup held and what the jobs learned from their
siblings.  The summary gives the median and band of each, and builder's median over the
best ``MAX_JOBS`` that survived every repeat.  Needs a GPU machine's CUDA toolkit and
torch; each builder run starts from an empty workspace (a cold build: no history).

    python bench/fusedops_cap.py [--cap 6GiB] [--repeats 3] [--max-jobs 1,2,3]
                                 [--only builder,plain] [--work DIR] [--summary]
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
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARCHS = "8.0;9.0"


def _capped(cmd: list[str], cap: str, name: str, cwd: Path, env: dict[str, str],
            log: Path) -> tuple[int, float, int]:
    """(exit status, wall seconds, OOM kills) of ``cmd`` run in a cgroup capped at ``cap``."""
    from builder.recipe.validate import parse_size

    argv = [sys.executable, "-m", "builder.memory.cgroup", "--limit", str(parse_size(cap)),
            "--name", name, "--", *cmd]
    t0 = time.monotonic()
    with log.open("w") as out:
        rc = subprocess.run(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                            check=False).returncode
    wall = time.monotonic() - t0
    kills = re.findall(r"OOM kills: (\d+)", log.read_text(errors="replace"))
    return rc, wall, int(kills[-1]) if kills else -1


def _env() -> dict[str, str]:
    path = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(":"))]
    return {**os.environ, "PYTHONPATH": ":".join(path), "PYTHONUNBUFFERED": "1"}


def run_plain(n: int, cap: str, work: Path, k: int) -> dict[str, object]:
    src = work / f"plain{n}-{k}"
    shutil.copytree(REPO / "sources" / "fusedops", src)
    env = {**_env(), "FUSEDOPS_BACKEND": "cuda", "TORCH_CUDA_ARCH_LIST": ARCHS,
           "MAX_JOBS": str(n), "TORCH_NO_COMPILER_WRAPPER": "1"}
    rc, wall, kills = _capped([sys.executable, "-m", "pip", "wheel", "--no-build-isolation",
                               "--no-deps", "-w", str(src / "dist"), str(src)],
                              cap, f"plain{n}x{k}{os.getpid()}", src, env,
                              work / f"plain{n}-{k}.log")
    shutil.rmtree(src, ignore_errors=True)
    return {"run": f"MAX_JOBS={n}", "rc": rc, "wall": wall, "kills": kills}


def run_builder(cap: str, work: Path, k: int) -> dict[str, object]:
    ws = work / f"builder-{k}"
    (ws / ".git").mkdir(parents=True)
    (ws / "recipes").mkdir()
    shutil.copytree(REPO / "sources" / "fusedops", ws / "sources" / "fusedops")
    shutil.copy(REPO / "recipes" / "fusedops.yaml", ws / "recipes")
    rc, wall, kills = _capped([sys.executable, "-m", "builder", "build", "fusedops",
                               "--backend", "cuda", "--no-tests"], cap,
                              f"builder{k}x{os.getpid()}", ws, _env(),
                              work / f"builder-{k}.log")
    row: dict[str, object] = {"run": "builder", "rc": rc, "wall": wall, "kills": kills}
    for report in (ws / ".builder" / "reports").glob("*.jobs.json"):
        data = json.loads(report.read_text())
        jobs = [j for j in data["jobs"] if j.get("kind") == "compile"]
        if jobs:
            row["span"] = max(j["ended"] for j in jobs) - min(j["queued"] for j in jobs)
            row["most_used"] = data.get("most_used", 0)
            row["learned"] = [f"{j['file']}: {j['first_estimate'] >> 20} → "
                              f"{j['estimate'] >> 20} MiB from {j['siblings']}"
                              for j in jobs if j.get("siblings")]
            row["jobs"] = [(j["file"], round(j["started"], 1), round(j["ended"], 1),
                            j["peak"] >> 20, j["source"]) for j in jobs]
    shutil.rmtree(ws, ignore_errors=True)
    return row


def summary(rows: list[dict[str, object]]) -> None:
    by: dict[str, list[dict[str, object]]] = {}
    for r in rows:
        by.setdefault(str(r["run"]), []).append(r)
    best = None
    for run, rs in sorted(by.items()):
        walls = sorted(float(str(r["wall"])) for r in rs)
        killed = sum(1 for r in rs if r["rc"] != 0 or int(str(r["kills"])) > 0)
        spans = [float(str(r["span"])) for r in rs if "span" in r]
        extra = f", compile span median {statistics.median(spans):.1f} s" if spans else ""
        print(f"{run:12} {len(rs)} runs: wall median {statistics.median(walls):.1f} s "
              f"(band {walls[0]:.1f}–{walls[-1]:.1f}), killed or failed in {killed}{extra}")
        if run != "builder" and not killed and (best is None or
                                                statistics.median(walls) < best[1]):
            best = (run, statistics.median(walls))
    if "builder" in by and best is not None:
        med = statistics.median(float(str(r["wall"])) for r in by["builder"])
        print(f"builder × best surviving {best[0]}: {med / best[1]:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cap", default="6GiB")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-jobs", default="1,2,3")
    ap.add_argument("--only", default="builder,plain", help="builder, plain or both")
    ap.add_argument("--work", type=Path, default=None, help="keeps logs and results.json")
    ap.add_argument("--summary", action="store_true", help="print DIR/results.json's table")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="fusedops-cap."))
    work.mkdir(parents=True, exist_ok=True)
    results = work / "results.json"
    rows: list[dict[str, object]] = json.loads(results.read_text()) if results.exists() else []
    if not args.summary:
        only = set(args.only.split(","))
        for k in range(args.repeats):
            runs = (["builder"] if "builder" in only else []) + \
                   ([f"plain:{n}" for n in args.max_jobs.split(",")] if "plain" in only else [])
            for run in runs:
                row = run_builder(args.cap, work, k) if run == "builder" else \
                    run_plain(int(run.split(":")[1]), args.cap, work, k)
                print(json.dumps(row), flush=True)
                rows.append(row)
                results.write_text(json.dumps(rows, indent=1))
    summary(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
