"""The pause guard: which running compile jobs must pause now, and which may resume.

Admission (:mod:`.policy`) starts a job only when every job's bound fits the budget until
its predicted end; the guard covers the jobs that do not end when predicted (more CPU time
than measured, less CPU share than they had): it checks the bounds ``horizon`` seconds
ahead — no end assumed — and pauses (SIGSTOP, or the job cgroup's freezer) the youngest
jobs that still grow, resuming them, oldest first, when the full admission check passes
again.  Pure, like the policy: ``now`` and the running jobs are passed in.
"""

from __future__ import annotations

from collections.abc import Mapping

from builder.memory.policy import Envelope, Running, demand, envelope, room_of
from builder.memory.tuning import TUNING, Tuning

__all__ = ["guard"]


def guard(running: Mapping[str, Running], budget: int, now: float,
          model: Tuning = TUNING, overhead: int = 0) -> frozenset[str]:
    """Ids of the running jobs that should be paused now (module doc: the guard).

    Older jobs first, whatever their pauses: each job, from the oldest (by ``since``),
    runs if the bounds of the older running jobs and its own fit with every younger job
    held where it is — ``horizon`` seconds ahead for a running job, the full admission
    check for a paused one to resume.  So a job that does not fit is paused before any
    older one, and a paused job resumes before any younger one.  A job at its peak
    (overdue, or about to end) is never paused: that frees nothing and holds its memory
    longer — pausing the youngest jobs by their bounds alone would leave TUs at 99 %
    stopped, holding their peaks, while a new one compiles.  The oldest job
    always runs.  A speculative job runs within the budget and its bet, as admitted
    (:func:`.policy.room_of`)."""
    room = budget - overhead
    later = now + model.horizon
    order = sorted(running, key=lambda i: (_since(running[i]), i))
    envs = {i: envelope(running[i], now, model) for i in order}
    paused: set[str] = set()
    for k, i in enumerate(order):
        if k == 0:
            continue  # the oldest always runs
        held = paused | set(order[k + 1:])  # younger ones held where they are
        view = [_frozen(envs[j], now, running[j].rss, model.stale) if j in held else envs[j]
                for j in order]
        mine = room_of(room, running[i].speculative, model)  # a speculative job's bet
        ahead = sum(e.ahead(later) for e in view) <= mine
        if running[i].paused:
            if not (ahead and demand(view) <= mine):
                paused.add(i)
        # pausing a job that no longer grows frees nothing and delays its end
        elif not ahead and _growing(running[i], envs[i], now, later, model.near_peak):
            paused.add(i)
    return frozenset(paused)


def _growing(job: Running, env: Envelope, now: float, later: float, near_peak: float
             ) -> bool:
    """Whether pausing ``job`` stops a growth: of its bound within the horizon, or of its
    memory still well below a bound held at the peak (a job found ahead of its model).
    A job at its peak (overdue, or about to end) is not growing: pausing it would keep
    its memory held longer."""
    bound = env.ahead(now)
    return env.ahead(later) > bound or job.rss < near_peak * bound


def _since(job: Running) -> float:
    """When ``job`` first started (its age: pauses do not make a job younger)."""
    return job.started if job.since is None else job.since


def _frozen(env: Envelope, now: float, rss: int, stale: float) -> Envelope:
    """A paused job: its memory stays where it is until it is resumed — at most its bound
    now, and at most what it last reported plus ``stale`` (``Tuning.stale``) of its peak:
    what it may have grown between that report and the pause (a stopped compiler
    allocates nothing).
    Without the report a job found ahead of its model counts at its peak while paused,
    and pausing it would seem to free nothing."""
    value = env.ahead(now)
    if rss > 0:
        value = min(value, rss + stale * env.peak)
    return Envelope(value, value, 0.0, now)

