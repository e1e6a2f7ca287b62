"""The admission policy: which waiting compile jobs start now, and which running ones
must pause.

Pure: no clock, no I/O.  The caller (the broker, or :func:`.forecast.simulate` for ``builder
plan``) passes ``now`` and what it knows of each running job: when it started, its
predicted peak and CPU time, and — where its launcher reports them — the CPU seconds
it has used and its live memory.

Why not admit by live memory: a compiler's RSS climbs for the whole compile and
peaks at ~98 % of it (measured for torch TUs), so live memory over-admits — jobs
admitted next to one at 30 % of its peak grow into each other.  Why not reserve each
job's peak for its whole life (what happens here when no duration is known): jobs
that start at different moments do not peak together, so peak reservation runs
fewer jobs than fit (4 where -j5 fits a 6 GiB cap).

**The model.**  A job's memory is bounded by a function of its *progress*, the CPU
seconds ``c`` it has used of the ``C`` measured for it in earlier builds (the mean of the
last three: ``history.typical_cpu``)::

    mem(c) ≤ peak × min(1, floor + (1 − floor) × c / (knee × fast × C))

``floor`` 0.2 and ``knee`` 0.6 lie above every RSS curve measured (gcc 12, torch,
pybind11 and gtest TUs: concave, 20 % of the peak after 5 % of the CPU time, 86 %
after 55 %; the tightest needs floor 0.16 at knee 0.6); ``fast`` 0.85 further lets
a job need 15 % less CPU than measured (a history taken on a busy machine with
shared cores).

With the job's own measured memory curve (``launcher.curve_of``: the most it held in
each twentieth of its CPU time, in its last builds; :func:`rising`: the most up to each
point) the bound is ``peak × rising(c / (fast × C))`` instead — much tighter: a torch TU
holds about half its peak at 40 % of its CPU time, where the ramp allows 80 %.  A job
whose memory proves it further along its curve than its CPU time says (:func:`ahead_of`)
counts at its peak once its memory passes its bound; when most running jobs are ahead
(:func:`build_speed`), ``fast`` shrinks for the whole build (:func:`sped_up`).  A job
whose curve falls after a
single peak (nvcc: its cicc runs, then a host compile at a fifth of that), once its
memory was seen at that peak and below it again, is bounded by what its curve holds
after the peak until it ends (:func:`released`): what lets the next nvcc job start while
one compiles its host code.

CPU time, not wall time, is the clock: a loaded machine stretches a compile's wall
time but not its work, and a compiler cannot use more than ``threads`` CPU seconds
per second — so from its current progress the bound holds
at every future instant, whatever the machine does.

A job is predicted gone once it has used ``late`` × C CPU seconds (1.05), at the
CPU rate it has had so far, plus ``horizon``; past that it is *overdue* and holds
its peak until it really ends.  Without a measured C (cold builds: recipe values
and priors give no trustworthy time) a job holds its peak for its whole life:
plain peak reservation.

**Admission** (:func:`.admission.admit`).  A waiting job starts when the sum of the
running jobs' bounds and its own stays within the budget (less ``overhead``: the
launchers' own memory) at *every* future instant, each job counted until its predicted
end — a *speculative* job (one never measured, admitted on its prior's time while the
backstop watches the build's memory) within the budget and ``bet`` more.  Links first,
then largest first, smaller jobs backfill (:mod:`.admission`).

**The guard** (:func:`.guard.guard`), run with admission every ``tick``.  Admission relies
on predicted ends; a job that runs late (more CPU than measured, or less CPU share
than it had, e.g. someone else's work) would let the jobs admitted next to it grow
into its peak.  The guard checks that the running jobs' bounds ``horizon`` seconds
ahead — no end assumed — fit the budget; if not it pauses the youngest growing jobs
(SIGSTOP: a stopped compiler's memory stays where it is) and resumes them, oldest
first, when the full check passes again.  Age is the job's first start (a pause does
not make it younger); a job at its peak is not paused (that frees nothing and holds
its memory longer); a paused job counts at what it last reported, not at its bound.
The oldest running job is never paused, so the build always progresses.

**Guarantees.**  With the guard running at least every ``horizon`` − (reaction
time) seconds, the jobs' memory stays within the budget less ``overhead`` (and ``bet``
more while speculative jobs run: then the backstop keeps the budget) as long as
(1) no job's peak exceeds its estimate (history: measured peaks vary < 0.05 % run to
run; a margin on top) and (2) its RSS at progress c stays under the bound above —
*whatever the jobs' durations*, however the machine slows some of them: a late job
only pauses younger ones.  Where (2) fails (a C measured too high), the job's
reported RSS rises above its bound and both functions count it at its peak from
then on, within one report interval.  Left to the budget's reserve and the cgroup
cap: if every younger job is paused and the oldest still cannot reach its peak
beside their frozen memory (only after (1) or (2) failed for several jobs) the
oldest goes on; with peaks 30 % above their estimates memory can pass the budget
by 30 %, as with peak reservation.  Without the guard, the bound holds as long as
each job needs at most ``late`` × its measured CPU time at the CPU rate it had when
the others were admitted.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from builder.memory.tuning import TUNING, Tuning

__all__ = [
    "INF",
    "Envelope",
    "Job",
    "Load",
    "Running",
    "ahead_of",
    "build_speed",
    "curve_at",
    "demand",
    "envelope",
    "passed_peak",
    "progress",
    "released",
    "rising",
    "room_of",
    "sped_up",
    "upper",
]

INF = math.inf


@dataclass(frozen=True)
class Job:
    """A waiting compile job."""

    id: str
    estimate: int  # bytes: predicted peak, margin included
    order: int = 0  # arrival order, for stable ties
    seconds: float = 0.0  # measured CPU seconds; 0: unknown → reserve the peak
    threads: int = 1  # CPU seconds it can use per second (nvcc --threads)
    share: float = 1.0  # expected CPU share per thread, for its end (the bound assumes 1)
    curve: tuple[float, ...] = ()  # its measured memory curve (:func:`curve_at`); (): none
    span: float = 0.0  # CPU seconds that predict its end, if longer than ``seconds``
    link: bool = False  # a link: ready only once its inputs are built, and others wait on it
    speculative: bool = False  # never measured: admitted on its prior's time (``Tuning.bet``)


@dataclass(frozen=True)
class Running:
    """What the caller knows of a running job."""

    estimate: int  # bytes: predicted peak, margin included
    started: float = 0.0  # on the caller's clock, moved later by the time it was paused
    seconds: float = 0.0  # measured CPU seconds; 0: unknown → holds its peak until it ends
    threads: int = 1
    cpu: float | None = None  # CPU seconds used so far, at most (reported by its launcher)
    rss: int = 0  # live memory, at least (reported)
    paused: bool = False
    share: float = 1.0  # expected CPU share per thread until it has run a second
    curve: tuple[float, ...] = ()  # its measured memory curve; (): the generic ramp
    rss_cpu: float = 0.0  # CPU seconds it had used when ``rss`` was measured
    span: float = 0.0  # CPU seconds that predict its end, if longer than ``seconds``
    since: float | None = None  # when it was granted (its age for the guard); None: started
    top: int = 0  # the most live memory it reported so far
    #: the most its siblings held after their single peaks (``jobs.Learned.fall``) or,
    #: until one ended, its prior's (``Estimate.fall``); 0: none
    fall: float = 0.0
    speculative: bool = False  # admitted on its prior's time (``Tuning.bet``)
    peak: int = 0  # bytes: its predicted peak without the margin (0: ``estimate``)


def curve_at(curve: Sequence[float], x: float) -> float:
    """Share of its peak a job may hold at progress ``x`` (CPU seconds used / total) by
    a curve whose ``curve[k]`` is the most it held up to progress (k + 1) / n, sampling
    included (:func:`rising` of ``launcher.curve_of``'s)."""
    if x >= 1.0 or not curve:
        return 1.0
    return float(curve[max(0, math.ceil(x * len(curve)) - 1)])


def rising(curve: Sequence[float]) -> tuple[float, ...]:
    """The running maximum of a measured curve: the most a job held up to each point."""
    return tuple(itertools.accumulate(curve, max))


def after_peak(curve: Sequence[float], tuning: Tuning = TUNING) -> float | None:
    """The most a job holds after its peak, as a share of it, by its measured curve — when
    the curve has a single peak (its points within ``Tuning.peak_region`` of the highest, one
    after the other) that it falls from to ``Tuning.drop`` or less; the point it falls in,
    which holds some of the peak too, is passed over.  None otherwise (g++ peaks at its
    end; nvcc for more archs than ``--threads`` peaks once per batch of archs)."""
    if not curve:
        return None
    top = tuning.peak_region * max(curve)
    high = [k for k, y in enumerate(curve) if y >= top]
    if high[-1] - high[0] + 1 != len(high):
        return None
    tail = max(curve[high[-1] + 2:], default=1.0)
    return tail if tail <= tuning.drop else None


def released(job: Running, tuning: Tuning = TUNING) -> float | None:
    """Bytes that bound ``job`` until it ends when it is past its single peak (module doc):
    its curve falls after that peak (:func:`after_peak`), its reported memory reached
    ``Tuning.reached`` of its estimate and is now at ``Tuning.drop`` of it or less, and no more
    than its curve allows after the peak (plus ``Tuning.slack``).  None: not (known to be)
    past its peak.  Without a curve of its own that says so, ``fall`` (its siblings', or
    its prior's until one of them ended) does; no time model is needed: a cold build's
    first nvcc jobs are released too."""
    tail = after_peak(job.curve, tuning)
    if tail is None and job.fall > 0:
        tail = job.fall
    # reached: against the predicted peak, not the reservation (its margin on top)
    predicted = job.peak or job.estimate
    if tail is None or job.top < tuning.reached * predicted or \
            job.rss > tuning.drop * max(predicted, job.top):
        return None
    bound = max(job.estimate, job.top) * min(1.0, tail + tuning.slack)
    return bound if job.rss <= bound else None


def passed_peak(job: Running, tuning: Tuning = TUNING) -> bool:
    """Whether ``job`` has shown its peak: it reached ``Tuning.reached`` of its predicted
    peak, and holds ``Tuning.drop`` of what it reached or less now (nvcc between or after
    its cicc runs; a job whose memory only rises has not passed it until it ends).  Its
    siblings learn that peak (``core.Scheduler``), without waiting for it to end."""
    predicted = job.peak or job.estimate
    return job.top >= tuning.reached * predicted and 0 < job.rss <= tuning.drop * job.top


def upper(a: Sequence[float], b: Sequence[float]) -> tuple[float, ...]:
    """The pointwise higher of two memory curves (one if the other is missing)."""
    if not a or not b or len(a) != len(b):
        return tuple(a or b)
    return tuple(max(x, y) for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class Envelope:
    """Upper bound of one job's memory from ``t0`` on: ``min(peak, base + slope·(t − t0))``
    — or, with a measured ``curve``, ``peak × curve_at(curve, (c0 + rate·(t − t0)) /
    scale)`` — before ``end``, nothing from ``end`` on (infinite: it holds its peak
    until it really ends).  Both only rise with ``t``."""

    peak: float
    base: float
    slope: float  # bytes per second
    t0: float
    end: float = INF
    curve: tuple[float, ...] = ()
    c0: float = 0.0  # CPU seconds used at t0
    rate: float = 1.0  # most CPU seconds it can use per second
    scale: float = 1.0  # CPU seconds of its whole curve (the fastest it may be)
    why: str = ""  # "above": held at its peak, its memory above its model; "overdue": past its end

    def at(self, t: float) -> float:
        """The bound at ``t``, counting the job gone from its predicted end."""
        return 0.0 if t >= self.end else self.ahead(t)

    def ahead(self, t: float) -> float:
        """The bound at ``t`` if the job has not ended (what the guard assumes)."""
        if self.curve:
            x = (self.c0 + self.rate * max(0.0, t - self.t0)) / self.scale
            return self.peak * curve_at(self.curve, x)
        return min(self.peak, self.base + self.slope * max(0.0, t - self.t0))


def progress(job: Running, now: float) -> float:
    """CPU seconds ``job`` may have used by ``now``: what it reported, or — never more
    than — its threads × the time it has run."""
    ceiling = max(0.0, now - job.started) * max(job.threads, 1)
    return ceiling if job.cpu is None else min(max(job.cpu, 0.0), ceiling)


def envelope(job: Running, now: float, model: Tuning) -> Envelope:
    """The bound on ``job``'s memory from ``now`` on (module doc: the model)."""
    peak = float(max(job.estimate, job.rss))  # a job above its estimate holds at least that
    after = released(job)
    if job.seconds <= 0:  # no time model: its peak (or what it holds past it) until it ends
        held = peak if after is None else after
        return Envelope(held, held, 0.0, now)
    threads = max(job.threads, 1)
    cpu = progress(job, now)
    knee = model.knee * model.fast * job.seconds
    scale = model.fast * job.seconds
    curve = rising(job.curve)
    if curve:
        base = peak * curve_at(curve, cpu / scale)
    else:
        base = peak * min(1.0, model.floor + (1.0 - model.floor) * cpu / knee)
    above = job.rss > base
    if above:  # grows faster than modelled: trust none of it, hold the peak
        base, curve = peak, ()
    total = model.late * max(job.seconds, job.span)
    if cpu >= total:  # overdue: holds its peak (or what it holds past it) until it ends
        held = peak if after is None else after
        return Envelope(held, held, 0.0, now, why="overdue")
    rate = threads * min(1.0, max(job.share, 0.02))
    elapsed = now - job.started
    if job.cpu is not None and elapsed >= 1.0:
        # the CPU share it has had so far (on a loaded machine less than its threads)
        rate = min(rate, max(cpu / elapsed, 0.02 * threads))
    end = now + (total - cpu) / rate + model.horizon
    if after is not None:
        return Envelope(after, after, 0.0, now, end)
    slope = peak * (1.0 - model.floor) / knee * threads
    return Envelope(peak, base, slope, now, end, curve, cpu, float(threads), scale,
                    "above" if above else "")


def ahead_of(job: Running) -> float:
    """How much faster a running job goes than its measured curve says: the progress its
    reported memory proves it has passed, over the progress its CPU time gives (≤ 1 on
    its curve; larger when its history was measured on a busier machine).  A job above its
    peak estimate is not faster but larger (its own bound then counts what it holds)."""
    if not _tells_speed(job):
        return 1.0
    curve = rising(job.curve)
    n = len(curve)
    passed = next((k for k, y in enumerate(curve) if job.estimate * y >= job.rss), n)
    return (passed / n) / (job.rss_cpu / job.seconds)


def _tells_speed(job: Running) -> bool:
    """Whether ``job``'s report says how fast it goes along its curve: it has one of its
    own (a speculative job's is a sibling's), has used a tenth of its CPU time, and holds
    no more than its estimate."""
    return bool(job.curve) and job.seconds > 0 and 0 < job.rss <= job.estimate \
        and job.rss_cpu >= 0.1 * job.seconds and not job.speculative


def build_speed(jobs: Iterable[Running]) -> float:
    """How much faster than their curves the build's jobs go: :func:`ahead_of` of the
    middle one (the upper one of two) among the running jobs whose reports tell; 1.0 when
    none does.  A history measured on a busier machine shows in most jobs; one TU faster
    than in its last build is run-to-run noise (±15-20 % of CPU time for alike TUs), and
    its own bound already counts it at its peak once its memory passes that bound
    (:func:`envelope`).  Letting the fastest job set the speed for the whole build would
    make every bound jump at once, and the guard pause most running TUs."""
    seen = sorted(ahead_of(j) for j in jobs if _tells_speed(j))
    return seen[len(seen) // 2] if seen else 1.0


def sped_up(model: Tuning, speed: float) -> Tuning:
    """``model`` for a build whose jobs were seen ``speed`` times faster than their curves:
    the allowance ``fast`` shrinks so that the bounds hold again (with 5 % to spare)."""
    if speed * model.fast * 1.05 <= 1.0:
        return model
    return replace(model, fast=1.0 / (speed * 1.05))


def room_of(room: float, speculative: bool, model: Tuning) -> float:
    """The memory a check of a job may plan with: ``room``, and :attr:`.tuning.Tuning.bet` of it
    more for a speculative job (admission and the guard alike)."""
    return room * (1.0 + model.bet) if speculative else room


def demand(envs: Sequence[Envelope]) -> float:
    """Most memory the jobs of ``envs`` may hold together at any instant from now on.

    Each bound only rises until its job's end, so the sum only rises between ends: its
    maximum is just before some end, or at infinity (the jobs that never end)."""
    return Load(envs).with_(None)


class Load:
    """:func:`demand` of a set of bounds, precomputed so that adding one candidate
    costs O(n), not O(n²) (admission tries many candidates against the same set)."""

    def __init__(self, envs: Sequence[Envelope]) -> None:
        self.envs = list(envs)
        self.forever = sum(e.peak for e in envs if e.end == INF)
        ends = sorted({e.end for e in envs if e.end != INF})
        self.points = [(t, sum(f.ahead(t) for f in envs if f.end >= t)) for t in ends]

    def with_(self, c: Envelope | None) -> float:
        """Demand of the set plus ``c``."""
        if c is None:
            return max([self.forever, *(s for _, s in self.points)])
        worst = self.forever + (c.peak if c.end == INF else 0.0)
        for t, s in self.points:
            worst = max(worst, s + c.ahead(t) if c.end >= t else s)
        if c.end != INF:
            worst = max(worst, c.ahead(c.end) + sum(f.ahead(c.end) for f in self.envs
                                                    if f.end >= c.end))
        return worst
