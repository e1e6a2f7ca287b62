"""The admission policy: which waiting compile jobs start now.

Pure: no clock, no I/O.  A job is admitted when the memory *reserved* for running
jobs (their predicted peaks, not their live use — RSS peaks at ~98 % of a compile,
so live memory over-admits) plus its own prediction fits the budget and a CPU slot
is free.  Waiting jobs are considered largest first, smaller ones backfill.  A job
predicted above the whole budget waits for the machine to drain and runs alone,
with the low-memory flag tier.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Job:
    id: str
    estimate: int  # bytes to reserve
    order: int = 0  # arrival order, for stable ties


@dataclass(frozen=True)
class Grant:
    job: Job
    alone: bool = False  # runs with nothing else (predicted above the budget, or a retry)
    lowmem: bool = False  # add the low-memory flag tier


def admit(waiting: list[Job], running: dict[str, int], budget: int, slots: int,
          exclusive: frozenset[str] = frozenset()) -> list[Grant]:
    """Jobs of ``waiting`` to start now.  ``running`` maps job id → reserved bytes;
    ``exclusive`` are ids that must run alone (e.g. retried after an OOM kill)."""
    grants: list[Grant] = []
    reserved = sum(running.values())
    busy = len(running)
    for job in sorted(waiting, key=lambda j: (-j.estimate, j.order)):
        if busy >= slots:
            break
        alone = job.id in exclusive or job.estimate > budget
        if alone:
            if busy == 0:
                grants.append(Grant(job, alone=True, lowmem=True))
                return grants
            # drain: start nothing else until the machine is free for it
            return grants
        if reserved + job.estimate <= budget:
            grants.append(Grant(job))
            reserved += job.estimate
            busy += 1
    return grants


@dataclass(frozen=True)
class Prediction:
    wall: float  # seconds
    peak: int  # bytes reserved at most
    parallelism: float  # average running jobs
    jobs: int


def simulate(jobs: list[tuple[str, int, float]], budget: int, slots: int) -> Prediction:
    """Run :func:`admit` over ``(id, estimate, seconds)`` jobs on a virtual clock."""
    if not jobs:
        return Prediction(0.0, 0, 0.0, 0)
    waiting = [Job(i, est, n) for n, (i, est, _) in enumerate(jobs)]
    seconds = {i: s for i, _, s in jobs}
    running: dict[str, int] = {}
    ends: list[tuple[float, str]] = []
    now, peak, busy_time = 0.0, 0, 0.0
    while waiting or running:
        for g in admit(waiting, running, budget, slots):
            waiting.remove(g.job)
            running[g.job.id] = g.job.estimate
            ends.append((now + seconds[g.job.id], g.job.id))
            busy_time += seconds[g.job.id]
        peak = max(peak, sum(running.values()))
        if not ends:  # nothing can ever start (cannot happen: oversize jobs run alone)
            break
        ends.sort()
        now, done = ends.pop(0)
        running.pop(done)
    return Prediction(now, peak, busy_time / now if now else 0.0, len(jobs))
