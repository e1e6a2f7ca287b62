"""What a build's compile jobs will do under :mod:`.policy`, before any runs: the plan's
prediction (``builder plan``: wall time, the memory planned for, how many at once).

With a distributed pool (``--dist``) the jobs' launchers take the pool's remote slots as
a build's do (:mod:`.remote`): a job that the pool can hold with the jobs already out
(:func:`.remote.fits`) takes a free slot when ninja starts it and is held here at its
local part; with every slot taken, or too heavy, it compiles here under local
admission.  A remote job is assumed to take as long as it would here (a build server's
core against one of this machine's).

Pure: a virtual clock over the jobs' estimates, admission as the broker runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from builder.memory.admission import admit
from builder.memory.policy import Job, Running, envelope
from builder.memory.remote import LOCAL_PART, Pool, Share, fits
from builder.memory.tuning import TUNING, Tuning

__all__ = ["Prediction", "simulate"]


@dataclass(frozen=True)
class Prediction:
    wall: float  # seconds
    peak: int  # bytes the policy plans for at most (the running jobs' bounds)
    parallelism: float  # average running jobs
    jobs: int
    most: int = 0  # most jobs running at once
    remote: int = 0  # jobs compiled on the distributed pool


def simulate(jobs: Sequence[tuple[Any, ...]], budget: int, slots: int,
             model: Tuning = TUNING, window: int = 0,
             remote: Pool | None = None) -> Prediction:
    """Run :func:`admit` on a virtual clock over ``(id, estimate, seconds[, cpu[,
    curve]])`` jobs, each taking ``seconds``; ``cpu`` (0 or absent: unknown) is the
    measured CPU time that lets admission use the time model, as the broker does with
    build history, and ``curve`` the job's measured memory curve.  As in a
    build, the broker sees only the jobs ninja has started: ``window`` (default 2 ×
    ``slots``, what builder gives ninja) less those running.  Every job runs as
    predicted, so the guard has nothing to do.  ``remote``: the distributed pool (None:
    none)."""
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
    count = remote.cores if remote is not None else 0
    out: dict[str, Share] = {}  # jobs on the pool, from ninja's start to their end
    sent = 0

    def view(t: float) -> dict[str, Running]:
        return {i: Running(job.estimate, start, job.seconds, 1, (t - start) * job.share,
                           share=job.share, curve=job.curve)
                for i, (job, start, _) in running.items()}

    now, peak, busy_time, most, nxt = 0.0, 0.0, 0.0, 0, 0
    waiting: list[Job] = []
    while nxt < len(queue) or waiting or running:
        while nxt < len(queue) and len(waiting) + len(running) < window:
            job = queue[nxt]
            share = Share(job.estimate)
            if remote is not None and len(out) < count and job.estimate > 0 and \
                    fits([*out.values(), share], remote):
                out[job.id] = share  # its launcher took a slot: held here at its local part
                job = replace(job, estimate=LOCAL_PART, seconds=0.0, share=1.0, curve=())
                sent += 1
            waiting.append(job)
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
        live = running.keys() | {j.id for j in waiting}
        out = {i: s for i, s in out.items() if i in live}
    return Prediction(now, int(peak), busy_time / now if now else 0.0, len(jobs), most, sent)
