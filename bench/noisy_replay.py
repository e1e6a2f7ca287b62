"""Replays libamm's measured compile jobs the way the broker runs them — admission, the
pause guard and the backstop — with CPU times that vary from run to run, against fixed
``-jN`` runs given the same times.

``bench/cold_replay.py`` replays one run with every job exactly as measured; on the GPU
machines the same TU takes ±15 % CPU time from run to run, and what that costs (pauses,
freezes, jobs admitted next to an end that comes late) shows only when the times vary.
Each seed draws every job's CPU time from ``[1 − spread, 1 + 1.3 × spread]`` × its
measured time (slower more often than faster, as measured); each job holds
``peak × curve(progress)``; the broker's loop runs on a virtual clock every 50 ms: the
backstop on the build's summed memory (:func:`backstop.react`), then every 100 ms the guard
(:func:`guard.guard`) and admission (:func:`admission.admit`), with the job's reported memory
and the build's speed (:func:`policy.build_speed`), as the broker runs them.  It prints,
over the seeds, builder's wall time over ``-jN``'s for a build with history and a cold
one, the seconds jobs spent paused, the freezes and requeues, and how often the summed
memory passed the cap (for ``-jN``: how often it would have had to be lucky).

The build "with history" plans with the mean CPU time of ``--history-builds`` earlier
builds (3, what a history record keeps), each drawn like the build's own: 1.04× ``-j5``
over 100 seeds, 1.05× planned on one earlier build's times as before session 14 (the H100
hosts measured 1.19× and, with the build's speed by its middle job, 1.07×; with the mean,
0.97× on two hosts).  ``--exact-history``: each job's true time, which overrates what a
history knows (1.00×).  Cold jobs
are admitted speculatively, with the bet (:mod:`builder.memory.admission`): 1.08–1.10×
over 30–100 seeds, 1.22× without it (host A measured 1.02×, host B 1.17×).

``--history`` is the measured jobs (a ``memory-history.json`` that builder wrote); the
default, ``bench/data/h100-libamm-history.json`` from an H100 host, reproduced that host's
cold runs before the bet (``-j5`` 60.7 s against 60.2 s measured, cold 1.22× against 1.23×,
29 against 31 job-seconds paused); ``bench/data/h200-libamm-history.json`` is an H200
host's (TUs half as long, which the priors' CPU times overrate) and replays that host, not
the H100 ones.

    python bench/noisy_replay.py [--spread 0.15] [--seeds 100] [--fixed 5] [--cap 6GiB]
                                 [--history FILE]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from cold_replay import NINJA_ORDER, REPO, Truth, held, load_truth

from builder.memory.admission import admit
from builder.memory.backstop import JobView, react
from builder.memory.estimate import Estimate, estimate, ramp_model, scan_includes
from builder.memory.guard import guard
from builder.memory.history import KEEP_CPUS
from builder.memory.jobs import LAUNCHER_BYTES, Learned, relearn
from builder.memory.policy import Job, Running, build_speed, sped_up
from builder.recipe.recipeset import load_recipe
from builder.recipe.validate import parse_size
from builder.resolve.request import MIN_RESERVE

DT = 0.05  # the backstop's period; admission and the guard run every other step


@dataclass
class _Job:
    job: Job
    start: float
    order: int
    cpu: float = 0.0
    paused: bool = False
    held: bool = False
    stopped: float = 0.0  # seconds paused so far


@dataclass
class Outcome:
    wall: float
    most: float  # bytes the jobs held at once
    paused: float  # job-seconds paused
    freezes: int
    requeues: int
    ratios: list[float] = field(default_factory=list)


def fixed(truth: Truth, actual: dict[str, float], n: int) -> tuple[float, float]:
    """(wall, most held at once) of ``-jN`` in ninja's order."""
    queue, now, most = list(NINJA_ORDER), 0.0, 0.0
    running: dict[str, float] = {}
    while queue or running:
        while queue and len(running) < n:
            running[queue.pop(0)] = 0.0
        most = max(most, sum(held(truth, f, c * truth[f][1] / actual[f])
                             for f, c in running.items()))
        now += DT
        running = {f: c + DT for f, c in running.items() if c + DT < actual[f]}
    return now, most


def build(truth: Truth, estimates: dict[str, Estimate], actual: dict[str, float],
          budget: int, slots: int) -> Outcome:
    """One build through the broker's loop (the backstop watching, as on the GPU machine)."""
    base = replace(ramp_model(), fast=ramp_model().watched_fast)
    model, speed = base, 1.0
    jobs = {f: (Job(f, e.reserve, n, e.cpu, curve=e.curve, span=e.span) if e.cpu else
                Job(f, e.peak, n, e.seconds, speculative=True))  # never measured
            for n, (f, e) in enumerate((f, estimates[f]) for f in NINJA_ORDER)}
    waiting = list(NINJA_ORDER)
    running: dict[str, _Job] = {}
    known: dict[str, Learned] = {}
    samples: list[tuple[float, float]] = []
    now, step, order = 0.0, 0, 0
    out = Outcome(0.0, 0.0, 0.0, 0, 0)

    def mem(f: str, r: _Job) -> float:  # what it holds after r.cpu of actual[f] seconds
        return held(truth, f, r.cpu * truth[f][1] / actual[f])

    while waiting or running:
        holding: dict[str, int] = {}
        for f, r in running.items():
            for g in {estimates[f].group, estimates[f].family} - {""}:
                holding[g] = max(holding.get(g, 0), int(mem(f, r)))
        for f in waiting:
            new = None if estimates[f].cpu else relearn(estimates[f], known, holding)
            if new is not None:
                jobs[f] = replace(jobs[f], estimate=new.reserve, seconds=new.cpu,
                                  curve=new.curve, span=new.span)
        overhead = LAUNCHER_BYTES * (len(waiting) + len(running))
        used = sum(mem(f, r) for f, r in running.items()) + overhead
        out.most = max(out.most, used)
        samples = [(t, u) for t, u in samples if now - t <= 0.3] + [(now, used)]
        rate = (used - samples[0][1]) / (now - samples[0][0]) if now - samples[0][0] > 0.02 \
            else 0.0
        act = react([JobView(f, r.order, r.job.estimate, int(mem(f, r)), r.paused, r.held)
                     for f, r in running.items()], int(used), rate, budget)
        for f in act.freeze:
            running[f].paused = running[f].held = True
            out.freezes += 1
            samples = [(now, used)]
        for f in act.thaw:  # (the backstop's thaws; the guard may pause it again)
            running[f].paused = running[f].held = False
        for f in act.requeue:
            del running[f]
            waiting.append(f)
            out.requeues += 1
        if step % 2 == 0:
            view = {f: Running(r.job.estimate, r.start + r.stopped, r.job.seconds, 1, r.cpu,
                               int(mem(f, r)), r.paused, curve=r.job.curve, rss_cpu=r.cpu,
                               span=r.job.span, since=r.start, speculative=r.job.speculative)
                    for f, r in running.items()}
            speed = max(speed, build_speed(view.values()))  # as the broker does
            model = sped_up(base, speed)
            if view:
                stop = guard(view, budget, now, model, overhead)
                for f, r in running.items():
                    r.paused = f in stop or r.held
                view = {f: replace(v, paused=running[f].paused) for f, v in view.items()}
            for grant in admit([jobs[f] for f in waiting], view, budget, slots, now=now,
                               model=model, overhead=overhead):
                waiting.remove(grant.job.id)
                order += 1
                running[grant.job.id] = _Job(grant.job, now, order)
        now += DT
        step += 1
        for f, r in list(running.items()):
            if r.paused:
                r.stopped += DT
                out.paused += DT
            else:
                r.cpu += DT
            if r.cpu >= actual[f]:
                del running[f]
                for g in {estimates[f].group, estimates[f].family} - {""}:
                    known[g] = known.get(g, Learned()).add(truth[f][0], actual[f],
                                                           truth[f][2])
    out.wall = now
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spread", type=float, default=0.15)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--fixed", type=int, default=5, help="the fixed -jN to compare with")
    ap.add_argument("--cap", default="6GiB")
    ap.add_argument("--history", type=Path, default=REPO / "bench" / "data" /
                    "h100-libamm-history.json", help="the measured jobs (memory-history.json)")
    ap.add_argument("--exact-history", action="store_true",
                    help="a history of each job's true CPU time (default: of an earlier build "
                    "whose times varied as much)")
    ap.add_argument("--history-builds", type=int, default=KEEP_CPUS, metavar="K",
                    help="earlier builds the history measured (its CPU times vary as the "
                    f"build's; the time model plans with the mean of the last {KEEP_CPUS})")
    args = ap.parse_args()
    truth = load_truth(args.history)
    cap = parse_size(args.cap)
    budget = cap - max(MIN_RESERVE, cap * 3 // 100)
    recipe = load_recipe(REPO / "recipes" / "libamm.yaml")
    root = REPO / "sources" / "libamm"
    includes = {f: scan_includes(root / f, (root,)) for f in truth}

    def measured(*builds: dict[str, float]) -> dict[str, Estimate]:
        """Estimates from a history of ``builds`` (each job's CPU times, the last one
        last: a record keeps ``KEEP_CPUS`` of them); peaks and curves as true."""
        return {f: estimate(f, includes[f], history={
                    "peak": p, "prev_peak": p, "runs": len(builds) + 1,
                    "cpu": builds[-1][f], "cpus": [b[f] for b in builds][-KEEP_CPUS:],
                    "curve": cv})
                for f, (p, _, cv) in truth.items()}

    def drawn(rng: random.Random) -> dict[str, float]:
        """Each job's CPU time in one build: its measured time, spread as on the hosts."""
        return {f: c * rng.uniform(1 - args.spread, 1 + 1.3 * args.spread)
                for f, (_, c, _) in truth.items()}

    exact = measured({f: c for f, (_, c, _) in truth.items()})
    cold = {f: estimate(f, includes[f], recipe_globs=recipe.memory.per_file,
                        recipe_default=recipe.memory.default) for f in truth}
    outs: dict[str, list[Outcome]] = {"with history": [], "cold": []}
    walls, over = [], 0
    for seed in range(args.seeds):
        rng = random.Random(seed)
        actual = drawn(rng)
        # the history's build took its own, other times (unless --exact-history)
        earlier = [drawn(rng) for _ in range(args.history_builds)]
        runs = {"with history": exact if args.exact_history else measured(*earlier),
                "cold": cold}
        wall, most = fixed(truth, actual, args.fixed)
        walls.append(wall)
        over += int(most > cap)
        for label, est in runs.items():
            o = build(truth, est, actual, budget, 16)
            o.ratios.append(o.wall / wall)
            outs[label].append(o)
    print(f"libamm, {len(truth)} TUs, CPU times ±{args.spread:.0%} over {args.seeds} seeds; "
          f"cap {args.cap}: -j{args.fixed} median {statistics.median(walls):.1f} s, its jobs "
          f"held more than the cap in {over} of {args.seeds}")
    for label, os_ in outs.items():
        r = [o.ratios[0] for o in os_]
        print(f"builder, {label:13} × -j{args.fixed}: median {statistics.median(r):.3f}, "
              f"mean {statistics.mean(r):.3f}, worst {max(r):.3f}; paused "
              f"{statistics.mean(o.paused for o in os_):.1f} job-s, freezes "
              f"{statistics.mean(o.freezes for o in os_):.1f}, requeues "
              f"{sum(o.requeues for o in os_)}, above the cap in "
              f"{sum(o.most > cap for o in os_)} of {args.seeds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
