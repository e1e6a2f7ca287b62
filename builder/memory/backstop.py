"""The reactive backstop: what to freeze, thaw or kill when the build's *measured* memory
nears its budget.

Admission (:mod:`.policy`) works on predictions; where a prediction is missing or wrong
(a cold build admitted on priors, a job far above its estimate) the backstop keeps the
promise that the kernel never OOM-kills a compile.  It reads one number, the
unreclaimable memory of the build's cgroup (:func:`.jobgroup.anon_bytes`), every
``period`` seconds, and its growth rate, and decides (pure: :func:`react`):

* **freeze** the youngest running job still growing (never the oldest: the build always
  progresses; never one at ``Tuning.at_peak`` of its expected peak: freezing it stops no
  growth and holds its memory longer) once the memory, plus what it grows in
  ``Tuning.reaction`` seconds at its current rate, passes the *freeze line* (``margin`` below
  the budget).  A frozen job keeps its memory but stops growing; nothing new is
  admitted while any job is stopped.  The growth rate is measured again from each
  freeze on: the rate from before it would freeze one job after another for growth
  already stopped.
* **thaw** the oldest frozen job once there is room for it to reach its predicted peak
  (``estimate - rss``) below the freeze line — or unconditionally when nothing else runs.
* **kill and requeue** the youngest job, frozen ones first, as the last resort: when the
  memory still reaches the *kill line* (a third of the margin below the budget), frozen
  jobs hold too much for the oldest ones to finish.  Its work is lost, nothing else: the
  launcher runs it again when it is admitted again.

The budget is the build cgroup's hard cap, so the kernel acts only above the kill line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from builder.memory.tuning import TUNING, Tuning

__all__ = ["Action", "JobView", "Lines", "lines", "react"]


@dataclass(frozen=True)
class JobView:
    """A running job as the backstop sees it."""

    id: str
    started: float  # order of start (older first)
    estimate: int  # bytes reserved for its peak
    rss: int = 0  # its memory at the last report
    paused: bool = False  # stopped, by the guard or by the backstop
    held: bool = False  # stopped by the backstop (only the backstop thaws it)


@dataclass(frozen=True)
class Action:
    freeze: tuple[str, ...] = ()
    thaw: tuple[str, ...] = ()
    requeue: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lines:
    freeze: float
    kill: float


def lines(budget: int, rate: float, tuning: Tuning = TUNING) -> Lines:
    """The freeze and kill lines for ``budget`` at a growth of ``rate`` bytes/s."""
    margin = max(tuning.margin * budget, tuning.margin_min)
    ahead = max(rate, 0.0) * tuning.reaction
    return Lines(budget - margin - ahead, budget - margin / 3 - ahead / 2)


def react(jobs: Sequence[JobView], used: int, rate: float, budget: int,
          tuning: Tuning = TUNING) -> Action:
    """What to do now that the build holds ``used`` bytes, growing ``rate`` bytes/s."""
    if not jobs:
        return Action()
    line = lines(budget, rate, tuning)
    order = sorted(jobs, key=lambda j: (j.started, j.id))
    younger = order[1:]
    if used >= line.kill:
        victims = [j for j in reversed(younger) if j.paused] or list(reversed(younger))
        if victims:
            return Action(requeue=(victims[0].id,))
    if used >= line.freeze:
        # freezing a job at its expected peak stops no growth and only delays its end
        active = [j for j in reversed(younger)
                  if not j.paused and j.rss < tuning.at_peak * j.estimate]
        return Action(freeze=(active[0].id,)) if active else Action()
    held = [j for j in order if j.held]
    if not held:
        return Action()
    first = held[0]
    if all(j.paused for j in order):
        return Action(thaw=(first.id,))  # nothing else runs: it must go on
    if used + max(first.estimate - first.rss, 0) < line.freeze:
        return Action(thaw=(first.id,))
    return Action()

