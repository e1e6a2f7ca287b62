"""What a build's compile jobs will do under :mod:`.policy`, before any runs: the plan's
prediction (``builder plan``: wall time, the memory planned for, how many at once).

Pure: a virtual clock over the jobs' estimates, admission as the broker runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from builder.memory.admission import admit
from builder.memory.policy import Job, Running, envelope
from builder.memory.tuning import TUNING, Tuning

__all__ = ["Prediction", "simulate"]


@dataclass(frozen=True)
class Prediction:
    wall: float  # seconds
    peak: int  # bytes the policy plans for at most (the running jobs' bounds)
    parallelism: float  # average running jobs
    jobs: int
    most: int = 0  # most jobs running at once


def simulate(jobs: Sequence[tuple[Any, ...]], budget: int, slots: int,
             model: Tuning = TUNING, window: int = 0) -> Prediction:
    """Run :func:`admit` on a virtual clock over ``(id, estimate, seconds[, cpu[,
    curve]])`` jobs, each taking ``seconds``; ``cpu`` (0 or absent: unknown) is the
    measured CPU time that lets admission use the time model, as the broker does with
    build history, and ``curve`` the job's measured memory curve.  As in a
    build, the broker sees only the jobs ninja has started: ``window`` (default 2 ×
    ``slots``, what builder gives ninja) less those running.  Every job runs as
    predicted, so the guard has nothing to do."""
    if not jobs:
        return Prediction(0.0, 0, 0.0, 0)
    window = window or 2 * slots
    queue: list[Job] = []
    seconds: dict[str, float] = {}
    for n, row in enumerate(jobs):
        secs = float(row[2])
        cpu = float(row[3]) if len(row) >= 4 else 0.0
        curve = tuple(row[4]) if len(row) >= 5 and cpu else ()
        queue.append(Job(row[0], int(row[1]), n, cpu,
                         share=min(1.0, cpu / secs) if cpu and secs > 0 else 1.0,
                         curve=curve))
        seconds[row[0]] = secs
    # admission re-runs between ends as in the broker, at most ~1000 times
    tick = max(model.tick, sum(seconds.values()) / max(slots, 1) / 1000)
    running: dict[str, tuple[Job, float, float]] = {}  # id → (job, start, end)

    def view(t: float) -> dict[str, Running]:
        return {i: Running(job.estimate, start, job.seconds, 1, (t - start) * job.share,
                           share=job.share, curve=job.curve)
                for i, (job, start, _) in running.items()}

    now, peak, busy_time, most, nxt = 0.0, 0.0, 0.0, 0, 0
    waiting: list[Job] = []
    while nxt < len(queue) or waiting or running:
        while nxt < len(queue) and len(waiting) + len(running) < window:
            waiting.append(queue[nxt])
            nxt += 1
        for g in admit(waiting, view(now), budget, slots, now=now, model=model):
            waiting.remove(g.job)
            running[g.job.id] = (g.job, now, now + seconds[g.job.id])
            busy_time += seconds[g.job.id]
        most = max(most, len(running))
        if not running:  # nothing can ever start (cannot happen: oversize jobs run alone)
            break
        t = min(end for _, _, end in running.values())
        if waiting and len(running) < slots and any(j.seconds for j, _, _ in running.values()):
            t = min(t, now + tick)  # time alone may let a waiting job in
        # what the plan allows for just before t (bounds rise until their job ends)
        peak = max(peak, sum(envelope(r, t, model).ahead(t) for r in view(t).values()))
        now = t
        running = {i: r for i, r in running.items() if r[2] > now}
    return Prediction(now, int(peak), busy_time / now if now else 0.0, len(jobs), most)
