"""Admission: which waiting compile jobs start now (:func:`admit`), in which order
(:func:`by_size`).

Pure, like :mod:`.policy`, whose bounds it sums: a waiting job starts when the running
jobs' bounds and its own stay within the budget (less ``overhead``: the launchers' own
memory) at *every* future instant, each job counted until its predicted end.  Bounds only
rise until their job ends, so it is enough to check just before each predicted end and at
infinity (:class:`.policy.Load`).  The caller re-runs admission every ``tick`` while jobs
wait: a job may become admissible just because time passed.  Links first, then largest
first (:func:`by_size`: jobs within 10 % of each other in arrival order), smaller jobs
backfill; a job predicted above the budget (or a retry after an OOM kill) waits for the
machine to drain and runs alone with the low-memory flag tier; at most ``slots`` jobs run;
nothing new starts while a job is paused.

**The bet.**  A *speculative* job — never measured, admitted on its prior's CPU time and
peak while the backstop (:mod:`.backstop`) keeps the build's measured memory within the
budget — may be planned up to :attr:`.tuning.Tuning.bet` above the budget, and the
guard lets it run there too (:func:`.policy.room_of`).  The bounds assume that jobs started
together peak together, on a CPU time no build has measured; torch TUs hold 95 % of their
peak only for their last ~15 % of CPU time, and alike TUs of one build take ±15-20 % of
each other's time, so a cold batch's peaks do not meet.  A wrong bet costs a freeze (or,
as the last resort, the youngest job's work), never an OOM kill: the backstop reads the
real memory.  Measured jobs keep the budget: for them the bet gains little and requeues
often (``bench/noisy_replay.py``; figures in bench/RESULTS.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from builder.memory.policy import INF, Job, Load, Running, envelope, room_of
from builder.memory.tuning import TUNING, Tuning

__all__ = ["Grant", "admit", "by_size"]


@dataclass(frozen=True)
class Grant:
    job: Job
    alone: bool = False  # runs with nothing else (predicted above the budget, or a retry)
    lowmem: bool = False  # add the low-memory flag tier


def _as_running(r: int | Running) -> Running:
    return r if isinstance(r, Running) else Running(int(r))


def by_size(waiting: Sequence[Job], tuning: Tuning = TUNING) -> list[Job]:
    """Links first (short, and the rest of the build waits on them: under largest-first
    they ran one by one at the end), then largest first; jobs of about the same size
    (within ``Tuning.same_size`` of the largest of their band) in the build tool's order —
    except the band's long ones, which go first, longest first.  A few MB of estimate
    between two torch TUs say nothing, and ninja's order follows its graph: strict
    largest-first lets one TU wait behind every later one, and ordering a band by its
    measured CPU times (which vary by about ±15 % for alike TUs: run-to-run noise) starts
    the TU that the library's link waits for last.  A job measured at ``Tuning.long`` × its
    band's median or more is no noise: started late, it is the build's tail, running alone
    at the end (an nvcc TU of twice its siblings' CPU time)."""
    out = sorted((j for j in waiting if j.link), key=lambda j: j.order)
    ranked = sorted((j for j in waiting if not j.link), key=lambda j: (-j.estimate, j.order))
    while ranked:
        top = ranked[0].estimate
        band = [j for j in ranked if j.estimate >= top * (1 - tuning.same_size)]
        ranked = ranked[len(band):]
        known = sorted(_duration(j) for j in band if j.seconds > 0)
        typical = known[len(known) // 2] if known else INF
        long = sorted((j for j in band if j.seconds > 0 and _duration(j) >= tuning.long * typical),
                      key=lambda j: (-_duration(j), j.order))
        first = {j.id for j in long}
        out.extend(long)
        out.extend(sorted((j for j in band if j.id not in first), key=lambda j: j.order))
    return out


def _duration(job: Job) -> float:
    """Seconds ``job`` is expected to run (its CPU time over the threads it can use)."""
    return max(job.seconds, job.span) / max(job.threads, 1)


def admit(waiting: Sequence[Job], running: Mapping[str, int | Running], budget: int,
          slots: int, exclusive: frozenset[str] = frozenset(), now: float = 0.0,
          model: Tuning = TUNING, overhead: int = 0) -> list[Grant]:
    """Jobs of ``waiting`` to start now.  ``running`` maps job id → :class:`.policy.Running`
    (or bytes reserved for its whole life); ``exclusive`` are ids that must run
    alone (e.g. retried after an OOM kill); ``overhead`` is memory used besides the
    jobs (their launchers)."""
    runs = [_as_running(r) for r in running.values()]
    if any(r.paused for r in runs):
        return []  # paused jobs go first
    grants: list[Grant] = []
    load = Load([envelope(r, now, model) for r in runs])
    room = budget - overhead
    busy = len(runs)
    #: a shape that did not fit will not fit now
    failed: set[tuple[int, float, int, float, tuple[float, ...], float, bool]] = set()
    for job in by_size(waiting, model):
        if busy >= slots:
            break
        if job.id in exclusive or job.estimate > budget:
            if busy == 0:
                grants.append(Grant(job, alone=True, lowmem=True))
            # else drain: start nothing else until the machine is free for it
            return grants
        shape = (job.estimate, job.seconds, job.threads, job.share, job.curve, job.span,
                 job.speculative)
        if shape in failed:
            continue
        env = envelope(Running(job.estimate, now, job.seconds, job.threads, 0.0,
                               share=job.share, curve=job.curve, span=job.span), now, model)
        if load.with_(env) <= room_of(room, job.speculative, model):
            grants.append(Grant(job))
            load = Load([*load.envs, env])
            busy += 1
        else:
            failed.add(shape)
    return grants
