"""The memory scheduler's core: state in, decisions out — no threads, sockets or clock.

:class:`Scheduler` holds what the broker knows of a build's compile jobs and decides, for
each :data:`Event` and the time ``now`` it is given, what to do (:data:`Decision`): admit a
waiting job, pause or resume a running one, requeue (kill and run again) one as the
backstop's last resort.  The broker (:mod:`.broker`) turns sockets, launchers, cgroup reads
and the real clock into events and carries the decisions out; the replays
(:mod:`.replay`) and the tests feed it recorded jobs on a virtual clock — the same code,
driven the same way.  The policy it applies lives in pure functions: admission
(:func:`.admission.admit`), the pause guard (:func:`.guard.guard`), the backstop
(:func:`.backstop.react`), the bounds (:func:`.policy.envelope`) and learning from
siblings (:func:`.jobs.relearn`); every knob is a field of :class:`.tuning.Tuning`.

Should the policy ever raise, the scheduler keeps the first error (``failure``), resumes
every stopped job and runs the rest one at a time: a bug costs time, never the build.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from builder.memory import backstop
from builder.memory.admission import admit
from builder.memory.estimate import Estimate
from builder.memory.guard import guard
from builder.memory.jobs import JobRecord, Learned, fall, relearn
from builder.memory.policy import Job, build_speed, envelope, passed_peak, released, sped_up
from builder.memory.running import Run
from builder.memory.suffixes import DEVICE_SUFFIXES
from builder.memory.tuning import TUNING, Tuning

__all__ = ["Admit", "Arrived", "Decision", "Event", "Fault", "Finished", "Memory", "Pause",
           "Progress", "Requeue", "Resume", "Scheduler", "Switches", "Tick"]


# -- events ------------------------------------------------------------------------


@dataclass(frozen=True)
class Arrived:
    """A launcher asks to run a compile (or link) job, estimated by the caller."""

    id: str
    file: str  # relative to the source root where it lies below it
    est: Estimate
    threads: int = 1  # CPU seconds it can use per second (nvcc --threads)
    link: bool = False
    retry: bool = False  # the retry of a job killed out of memory: runs alone
    rerun: bool = False  # the run again of a job the backstop requeued
    watched: bool = False  # the backstop watches the build cgroup this job runs in
    #: "remote": it compiles on the distributed pool and is held here at its local part
    where: str = ""


@dataclass(frozen=True)
class Progress:
    """A running job's report: CPU seconds of its process tree and its memory."""

    id: str
    cpu: float
    rss: int


@dataclass(frozen=True)
class Memory:
    """The build cgroup's measured, unreclaimable memory (the backstop's one number)."""

    used: int


@dataclass(frozen=True)
class Finished:
    """A job ended — or its launcher went away (``rc`` None) — with what it measured;
    ``measures``: its measurement says something of the compile (not a cache hit)."""

    id: str
    rc: int | None = None
    peak: int = 0
    cpu: float = 0.0
    seconds: float = 0.0  # wall
    paused: float = 0.0
    curve: tuple[float, ...] = ()
    oom: bool = False
    requeued: bool = False
    measured_by: str = ""
    measures: bool = True


@dataclass(frozen=True)
class Tick:
    """Time passed: under the time model memory frees up with time, not only at ends."""


@dataclass(frozen=True)
class Fault:
    """An error outside the core (a broker thread, a cgroup read): from now on one job
    at a time, nothing stopped."""

    error: str


Event = Arrived | Progress | Memory | Finished | Tick | Fault


# -- decisions ---------------------------------------------------------------------


@dataclass(frozen=True)
class Admit:
    id: str
    alone: bool = False  # runs with nothing else (predicted above the budget, or a retry)
    lowmem: bool = False  # with the recipe's low-memory flag tier


@dataclass(frozen=True)
class Pause:
    id: str
    held: bool = False  # by the backstop (only the backstop thaws it)


@dataclass(frozen=True)
class Resume:
    id: str


@dataclass(frozen=True)
class Requeue:
    """Kill the job and run it again: its work is lost, nothing else."""

    id: str


Decision = Admit | Pause | Resume | Requeue


@dataclass(frozen=True)
class Switches:
    """Which parts of the policy run (all, in a build; the tests and replays turn some off
    to see what each does)."""

    time_model: bool = True  # False: reserve every job's peak for its whole life
    pause: bool = True  # run the guard (pause/resume); False: admission alone
    learn: bool = True  # re-estimate waiting jobs from their siblings measured so far
    #: the backstop watches the build cgroup's measured memory (:mod:`.backstop`)
    backstop: bool = True
    #: with the backstop watching: admit jobs never measured on their prior's CPU time
    speculate: bool = True


#: every part of the policy on
ALL_ON = Switches()


class Scheduler:
    """The state of one build's compile jobs and the decisions they call for (module doc)."""

    def __init__(self, budget: int, slots: int, tuning: Tuning = TUNING,
                 switches: Switches = ALL_ON) -> None:
        self.budget, self.slots, self.tuning, self.switches = budget, slots, tuning, switches
        self.records: list[JobRecord] = []
        self.waiting: list[Job] = []
        self.running: dict[str, Run] = {}
        self.exclusive: set[str] = set()
        #: estimate group → what its jobs measured in this build
        self.learned: dict[str, Learned] = {}
        self.estimates: dict[str, Estimate] = {}  # a job's first estimate, while it runs
        #: device compiles reserved at their predicted peak without its margin, learning
        #: keeps it so: the backstop, which watches their memory, keeps the budget where a
        #: prediction is short (host compiles' learned estimates keep their margins)
        self.bare: set[str] = set()
        self.speed = 1.0  # the most the jobs went faster than their curves (build_speed)
        self.watching = False  # the backstop watches the build's cgroup
        self.most_used = 0  # the most the build's cgroup held, as the backstop saw it
        #: the first error of the policy or around it ("": none); then one job at a time
        self.failure = ""
        self._by_id: dict[str, JobRecord] = {}
        self._shares: list[tuple[float, float]] = []  # (CPU, active seconds) of recent jobs
        self._used: list[tuple[float, int]] = []  # (time, bytes) of the backstop's samples
        self._burst = 0.0  # when the first job arrived at an idle scheduler
        self._order = 0

    # -- the one entry point ------------------------------------------------------

    def step(self, event: Event, now: float) -> list[Decision]:
        """What ``event`` at ``now`` calls for."""
        handler: Callable[[Event, float], list[Decision]] = getattr(
            self, f"_on_{type(event).__name__.lower()}")
        return handler(event, now)

    def _on_arrived(self, ev: Event, now: float) -> list[Decision]:
        assert isinstance(ev, Arrived)
        est, sw = ev.est, self.switches
        self.watching = self.watching or (ev.watched and sw.backstop)
        # only this very compile's measured CPU time drives the time model: other flags,
        # recipe values and priors say nothing reliable about its speed — unless the
        # backstop watches, which makes a wrong guess cost time only
        cpu = est.cpu if est.source == "history" and sw.time_model else 0.0
        curve = est.curve if cpu else ()
        watched = ev.watched and sw.backstop and not cpu and sw.speculate
        # nvcc's memory comes in one cicc peak per arch, early: the ramp does not bound it
        spec = watched and est.seconds > 0 and not ev.file.endswith(DEVICE_SUFFIXES)
        if watched:
            cpu, est = (est.seconds if spec else 0.0), replace(est, reserve=est.peak)
            if ev.file.endswith(DEVICE_SUFFIXES):
                self.bare.add(ev.id)
        rec = JobRecord(ev.id, ev.file, est.peak, est.reserve, est.source, now,
                        retry=ev.retry, model_cpu=cpu, model_curve=bool(curve),
                        family=est.family,
                        group="" if est.source.startswith("history") else est.group,
                        speculative=spec, kind="link" if ev.link else "compile",
                        rerun=ev.rerun, first_estimate=est.peak, where=ev.where)
        if rec.group:
            self.estimates[rec.id] = est
        self._order += 1
        job = Job(rec.id, rec.reserve, self._order, cpu, ev.threads, self._share(), curve,
                  link=ev.link, speculative=spec)
        self.records.append(rec)
        self._by_id[rec.id] = rec
        if ev.retry:
            self.exclusive.add(rec.id)
        if not self.running and not self.waiting:
            self._burst = now
        self.waiting.append(job)
        return self._schedule(now)

    def _on_progress(self, ev: Event, now: float) -> list[Decision]:
        assert isinstance(ev, Progress)
        run = self.running.get(ev.id)
        if run is not None:
            run.report(ev.cpu, ev.rss, now)
        return []

    def _on_tick(self, ev: Event, now: float) -> list[Decision]:
        return self._schedule(now) if self.running or self.waiting else []

    def _on_fault(self, ev: Event, now: float) -> list[Decision]:
        assert isinstance(ev, Fault)
        return self._failed(ev.error, now)

    def _on_finished(self, ev: Event, now: float) -> list[Decision]:
        assert isinstance(ev, Finished)
        rec = self._by_id.get(ev.id)
        if rec is None:
            return []
        rec.ended = now
        rec.requeued = rec.requeued or ev.requeued
        rec.measured_by, rec.peak, rec.rc, rec.oom = ev.measured_by, ev.peak, ev.rc, ev.oom
        rec.cpu, rec.paused = ev.cpu, ev.paused
        if rec.peak and rec.rc == 0 and ev.measures:
            if not (rec.lowmem or rec.alone or rec.retry):
                for g in rec.groups:
                    self.learned[g] = self.learned.get(g, Learned()).add(
                        rec.peak, rec.cpu, ev.curve, self.tuning)
            active = ev.seconds - ev.paused
            run = self.running.get(ev.id)
            if rec.cpu > 0.5 and active > 0 and run is not None:
                keep = self.tuning.shares_kept - 1
                self._shares = [*self._shares[-keep:], (rec.cpu / run.threads, active)]
        self.running.pop(ev.id, None)
        self.waiting = [j for j in self.waiting if j.id != ev.id]
        self.exclusive.discard(ev.id)
        self.estimates.pop(ev.id, None)
        self.bare.discard(ev.id)
        return self._schedule(now)

    def _on_memory(self, ev: Event, now: float) -> list[Decision]:
        """The backstop: freeze, thaw or requeue as :func:`backstop.react` says."""
        assert isinstance(ev, Memory)
        used, t = ev.used, self.tuning
        self._used = [*((s, u) for s, u in self._used if now - s <= t.rate_window), (now, used)]
        t0, u0 = self._used[0]
        rate = (used - u0) / (now - t0) if now - t0 > 0.02 else 0.0
        self.most_used = max(self.most_used, used)
        dying = any(run.rec.requeued for run in self.running.values())
        views = [backstop.JobView(i, run.started, self.expected(run, now), run.rss,
                                  run.paused, run.held)
                 for i, run in self.running.items() if not run.rec.requeued]
        act = backstop.react(views, used, rate, self.budget, t)
        out: list[Decision] = []
        for i in act.freeze:
            if self.running[i].stop(now, held=True):
                out.append(Pause(i, held=True))
        if act.freeze:  # what grew before the freeze says nothing of what grows now
            self._used = [(now, used)]
        for i in act.thaw:
            if self.running[i].go(now):
                out.append(Resume(i))
        for i in act.requeue if not dying else ():  # one at a time: wait for its memory
            self.running[i].rec.requeued = True
            out.append(Requeue(i))
        if act.thaw:
            out += self._schedule(now)
        return out

    # -- what the broker shows -----------------------------------------------------

    def model(self) -> Tuning:
        """The tuning now: thinner allowances while the backstop watches, tightened for
        jobs seen running ahead of their curves (:func:`policy.sped_up`)."""
        return sped_up(self.tuning.watched() if self.watching else self.tuning, self.speed)

    def bounds(self, now: float) -> dict[str, int]:
        """Each running job's memory bound now (what live progress shows as reserved)."""
        model = self.model()
        return {i: int(envelope(run.view(now), now, model).ahead(now))
                for i, run in self.running.items()}

    def expected(self, run: Run, now: float) -> int:
        """The peak a running job is expected to reach: its reservation, or what its
        siblings reached, or — once it holds more than either — a quarter more than now;
        for a job past its single peak, what its curve holds after it (``released``)."""
        after = released(run.view(now), self.tuning)
        if after is not None:
            return int(after)
        top = max([run.rec.reserve, *(self.learned[g].peak for g in run.rec.groups
                                      if g in self.learned)])
        return top if run.rss < top else int(run.rss * self.tuning.above_growth)

    # -- the policy ------------------------------------------------------------------

    def _share(self) -> float:
        """CPU share per thread of the jobs that ended last: a new job's expected speed
        (its memory bound assumes full speed anyway)."""
        cpu = sum(c for c, _ in self._shares)
        active = sum(a for _, a in self._shares)
        if cpu <= 1.0 or active <= 0:
            return 1.0
        return min(1.0, max(self.tuning.min_share, cpu / active))

    def _overhead(self) -> int:
        return self.tuning.launcher_bytes * (len(self.waiting) + len(self.running))

    def _schedule(self, now: float) -> list[Decision]:
        """Pause/resume what the guard says, then admit what the policy admits — or,
        should the policy ever fail, one job at a time."""
        if not self.failure:
            try:
                return self._by_policy(now)
            except Exception as exc:  # any failure: the build must go on
                out = self._failed(f"{type(exc).__name__}: {exc}", now)
                return out + self._one_at_a_time(now)
        return self._one_at_a_time(now)

    def _one_at_a_time(self, now: float) -> list[Decision]:
        if self.running or not self.waiting:
            return []
        job = min(self.waiting, key=lambda j: j.order)
        return [self._start(job, now, alone=False, lowmem=False)]

    def _failed(self, error: str, now: float) -> list[Decision]:
        """Keep the first error; resume every stopped job (nothing stays stopped by a
        scheduler that failed)."""
        self.failure = self.failure or error
        return [Resume(i) for i, run in self.running.items() if run.go(now)]

    def _start(self, job: Job, now: float, alone: bool, lowmem: bool) -> Admit:
        self.waiting.remove(job)
        rec = self._by_id[job.id]
        rec.alone, rec.lowmem, rec.started = alone, lowmem or rec.retry, now
        self.running[job.id] = Run(rec, job.seconds, job.threads, now, job.curve, job.span)
        return Admit(job.id, alone, lowmem or rec.retry)

    def _by_policy(self, now: float) -> list[Decision]:
        out: list[Decision] = []
        view = {i: run.view(now) for i, run in self.running.items()}
        self.speed = max(self.speed, build_speed(view.values()))
        model = self.model()
        for i, run in self.running.items():  # why jobs count at their peaks, for the report
            run.account(envelope(view[i], now, model), now)
        if self.switches.pause and view:
            paused = guard(view, self.budget, now, model, self._overhead())
            for i, run in self.running.items():
                if i in paused:
                    if run.stop(now):
                        out.append(Pause(i))
                elif not run.held and run.go(now):  # the backstop's pauses are its own
                    out.append(Resume(i))
            view = {i: run.view(now) for i, run in self.running.items()}
        if self.switches.learn:
            self._learn(now)
        if not self.running and len(self.waiting) < self.slots and \
                now - self._burst < self.tuning.settle:
            return out  # the rest of ninja's burst is on its way
        for g in admit(self.waiting, view, self.budget, self.slots, frozenset(self.exclusive),
                       now, model, self._overhead()):
            out.append(self._start(g.job, now, g.alone, g.lowmem))
        return out

    def _shown(self, run: Run, now: float) -> bool:
        """Whether a device compile has shown its peak (:func:`.policy.passed_peak`):
        nvcc's cicc peaks early, once per batch of archs, alike; a host compiler's memory
        dips and climbs again, so only its end tells its peak."""
        return run.rec.file.endswith(DEVICE_SUFFIXES) and \
            passed_peak(run.view(now), self.tuning)

    def _learn(self, now: float) -> None:
        """Re-estimate waiting jobs from what their group measured in this build
        (:func:`relearn`) — finished siblings, and running ones that have shown their peak
        (:func:`.policy.passed_peak`: an nvcc job past its first cicc run) — and tell
        running jobs never measured what their siblings held after their peaks
        (``jobs.fall``).  A job reserved at its bare peak (the backstop watching) that has
        shown its own peak is reserved at what it and its siblings reached, if less:
        two nvcc jobs whose recipe value is high then run side by side."""
        holding: dict[str, int] = {}
        known = dict(self.learned)
        for run in self.running.values():
            for g in run.rec.groups:
                holding[g] = max(holding.get(g, 0), run.rss)
            if not run.rec.source.startswith("history"):  # not measured itself
                run.fall = fall(run.rec, self.learned, self.estimates.get(run.rec.id))
                if self._shown(run, now):
                    for g in run.rec.groups:
                        known[g] = known.get(g, Learned()).passed(run.top)
        for i, run in self.running.items():
            if i in self.bare and run.rec.group in known and self._shown(run, now):
                reached = max(known[run.rec.group].peak, run.top)
                run.rec.reserve = min(run.rec.reserve, reached)
        for k, job in enumerate(self.waiting):
            est = self.estimates.get(job.id)
            new = relearn(est, known, holding, self.tuning) if est is not None else None
            if new is None:
                continue
            rec = self._by_id[job.id]
            cpu = new.cpu if self.switches.time_model else 0.0
            curve, span = (new.curve, new.span) if cpu else ((), 0.0)
            again = replace(job, estimate=new.reserve, seconds=cpu, curve=curve, span=span)
            if rec.retry or again == job:
                continue
            if job.id in self.bare:  # reserved without a margin, as when it arrived
                new = replace(new, reserve=new.peak)
                again = replace(again, estimate=new.peak)
                if again == job:
                    continue
            rec.estimate, rec.reserve, rec.source = new.peak, new.reserve, new.source
            rec.model_cpu, rec.model_curve = cpu, bool(curve)
            rec.siblings = known[new.source.split(":", 1)[1]].count
            self.waiting[k] = again
