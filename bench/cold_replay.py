"""Replays libamm's measured compile jobs through the admission policy: what a cold build
(no history) can reach, and what would change it.

Each job's true peak, CPU time and memory curve come from a history measured by builder
(``--history``; default ``bench/data/h200-libamm-history.json``, the GPU machine).  The
replay runs what the broker runs — :func:`admission.admit` every tick, estimates from the
recipe (:func:`estimate.estimate`, globs and umbrella headers scanned from
``sources/libamm``), learning from finished siblings (:class:`broker.Learned`,
:func:`broker.relearn`) — on a virtual clock where every job runs at one CPU second
per second and holds ``peak × curve(progress)``.  It prints the wall time of:

* the cold build as builder runs it, and with history (every job measured);
* cold variants: exact per-file peaks instead of the recipe's values, no margin on
  learned estimates, bindings.cpp held back until a sibling was measured;
* fixed ``-jN`` in ninja's order, with the most memory its jobs held at once (more
  than the budget: it survives only if the kernel's reclaim and luck allow).

    python bench/cold_replay.py [--history FILE] [--cap 6GiB] [--cores 16]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.memory.admission import admit  # noqa: E402
from builder.memory.estimate import (  # noqa: E402
    Estimate,
    estimate,
    ramp_model,
    scan_includes,
)
from builder.memory.jobs import LAUNCHER_BYTES, Learned, relearn  # noqa: E402
from builder.memory.policy import Job, Model, Running, curve_at  # noqa: E402
from builder.recipe.recipeset import load_recipe  # noqa: E402
from builder.recipe.validate import parse_size  # noqa: E402
from builder.resolve.request import MIN_RESERVE  # noqa: E402

GiB = 2**30
TICK = 0.1
#: ninja's order of libamm's compile jobs (its .ninja_log of a plain -jN build)
NINJA_ORDER = ("src/core.cpp", "src/algorithms/crs.cpp", "src/algorithms/exact.cpp",
               "src/algorithms/importance.cpp", "src/algorithms/count_sketch.cpp",
               "src/algorithms/random_projection.cpp", "src/algorithms/cooccurring_fd.cpp",
               "src/algorithms/block_lra.cpp", "src/algorithms/pq.cpp", "python/bindings.cpp",
               "tests/test_sampling.cpp", "tests/test_sketching.cpp", "tests/test_lowrank.cpp")

Truth = dict[str, tuple[int, float, tuple[float, ...]]]


def load_truth(path: Path) -> Truth:
    """Each job's measured (peak, CPU seconds, curve) from a history written by builder
    (memory-history.json: keyed by compile key, the file in "file"); links carry no
    curve and are not replayed."""
    data = json.loads(path.read_text(encoding="utf-8"))["jobs"]
    return {str(r.get("file", f)).split(":", 1)[-1]:
            (int(r["peak"]), float(r["cpu"]), tuple(r["curve"]))
            for f, r in data.items() if r.get("curve")}


def held(truth: Truth, file: str, cpu: float) -> float:
    """Memory ``file``'s compile holds after ``cpu`` seconds."""
    peak, total, curve = truth[file]
    return peak * curve_at(curve, cpu / total) if cpu < total else float(peak)


def replay(truth: Truth, estimates: dict[str, Estimate], budget: int, slots: int, *,
           learn_margin: float | None = None, hold: str = "", speculate: bool = False,
           model: Model | None = None) -> tuple[float, float]:
    """(wall seconds, most bytes held at once) of one build.  ``learn_margin`` replaces
    the learned margins; ``hold`` is a file not admitted before some job of the build was
    measured; ``speculate``: jobs never measured are admitted on their prior's CPU time
    and without the prior's margin, as the broker does while its backstop watches (the
    replay has no backstop: the most held says whether it would have had to act)."""
    files = [f for f in NINJA_ORDER if f in truth]
    jobs = {f: Job(f, e.peak if speculate and not e.cpu else e.reserve, n,
                   e.seconds if speculate and not e.cpu else e.cpu, curve=e.curve,
                   speculative=speculate and not e.cpu)
            for n, (f, e) in enumerate((f, estimates[f]) for f in files)}
    waiting = list(files)
    running: dict[str, tuple[Job, float]] = {}  # file → (job as admitted, start)
    known: dict[str, Learned] = {}
    now, most = 0.0, 0.0
    while waiting or running:
        holding: dict[str, int] = {}
        for g, (_, st) in running.items():
            for group in {estimates[g].group, estimates[g].family} - {""}:
                holding[group] = max(holding.get(group, 0), int(held(truth, g, now - st)))
        for f in waiting:  # the broker's _learn (it re-estimates jobs of a group only)
            est = estimates[f]
            new = relearn(est, known, holding) if est.group else None
            if new is None:
                continue
            reserve = new.reserve if learn_margin is None else int(new.peak * learn_margin)
            jobs[f] = replace(jobs[f], estimate=reserve, seconds=new.cpu, curve=new.curve,
                              span=new.span)
        view = {f: Running(j.estimate, st, j.seconds, 1, now - st, curve=j.curve, span=j.span,
                             speculative=j.speculative)
                for f, (j, st) in running.items()}
        candidates = [jobs[f] for f in waiting if not (f == hold and not known)]
        overhead = LAUNCHER_BYTES * (len(waiting) + len(running))
        for g in admit(candidates, view, budget, slots, now=now, overhead=overhead,
                       model=model):
            waiting.remove(g.job.id)
            running[g.job.id] = (g.job, now)
        most = max(most, sum(held(truth, f, now + TICK - st) for f, (_, st) in running.items()))
        now += TICK
        for f, (_, st) in list(running.items()):
            peak, cpu, curve = truth[f]
            if now - st >= cpu - 1e-9:
                del running[f]
                for group in {estimates[f].group, estimates[f].family} - {""}:
                    known[group] = known.get(group, Learned()).add(peak, cpu, curve)
    return now, most


def fixed(truth: Truth, n: int) -> tuple[float, float]:
    """(wall seconds, most bytes held at once) of ``-jN`` in ninja's order."""
    queue = [f for f in NINJA_ORDER if f in truth]
    running: dict[str, float] = {}
    now, most = 0.0, 0.0
    while queue or running:
        while queue and len(running) < n:
            running[queue.pop(0)] = now
        most = max(most, sum(held(truth, f, now - st) for f, st in running.items()))
        now += TICK / 2
        running = {f: st for f, st in running.items() if now - st < truth[f][1]}
    return now, most


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--history", type=Path, default=REPO / "bench" / "data" /
                    "h200-libamm-history.json")
    ap.add_argument("--cap", default="6GiB", help="the memory cap (budget: cap less reserve)")
    ap.add_argument("--cores", type=int, default=16)
    args = ap.parse_args()
    truth = load_truth(args.history)
    cap = parse_size(args.cap)
    budget = cap - max(MIN_RESERVE, cap * 3 // 100)
    recipe = load_recipe(REPO / "recipes" / "libamm.yaml")
    root = REPO / "sources" / "libamm"

    def estimates(globs: tuple[tuple[str, int], ...], history: bool = False
                  ) -> dict[str, Estimate]:
        out = {}
        for f in truth:
            peak, cpu, curve = truth[f]
            rec = {"peak": peak, "prev_peak": peak, "runs": 2, "cpu": cpu, "curve": curve}
            out[f] = estimate(f, scan_includes(root / f, (root,)), recipe_globs=globs,
                              recipe_default=recipe.memory.default,
                              history=rec if history else None)
        return out

    cold = estimates(recipe.memory.per_file)
    exact = estimates(tuple((f, p) for f, (p, _, _) in truth.items()))
    print(f"libamm, {len(truth)} compile jobs from {args.history.name}; cap {args.cap}, budget "
          f"{budget / GiB:.2f} GiB, {args.cores} cores")
    rows = [("cold, as builder ran it before the backstop", replay(truth, cold, budget,
                                                                   args.cores)),
            ("cold, speculative (backstop watching)", replay(truth, cold, budget, args.cores,
                                                             speculate=True)),
            ("cold, exact per-file peaks as recipe values", replay(truth, exact, budget,
                                                                   args.cores)),
            ("cold, no margin on learned estimates", replay(truth, cold, budget, args.cores,
                                                            learn_margin=1.0)),
            ("cold, bindings.cpp after the first measurement",
             replay(truth, cold, budget, args.cores, hold="python/bindings.cpp")),
            ("with history (every job measured)", replay(truth, estimates((), True), budget,
                                                         args.cores)),
            ("with history, backstop watching", replay(
                truth, estimates((), True), budget, args.cores,
                model=replace(ramp_model(), fast=ramp_model().watched_fast)))]
    for label, (wall, most) in rows:
        print(f"{label:52} {wall:6.1f} s  holds up to {most / GiB:.2f} GiB"
              f"{'  (more than the budget)' if most > budget else ''}")
    for n in range(3, 7):
        wall, most = fixed(truth, n)
        print(f"{'fixed -j' + str(n):52} {wall:6.1f} s  holds up to {most / GiB:.2f} GiB"
              f"{'  (more than the budget)' if most > budget else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
