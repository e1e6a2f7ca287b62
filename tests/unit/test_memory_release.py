"""A job past its single peak (builder/memory/policy.py: ``released``): nvcc holds 5.8 GB
for two archs while its cicc runs, then ~1.3 GB in the host compile that takes the last
fifth of its CPU time.  The launcher keeps that fall in the job's curve (the most held in
each twentieth, not a running maximum), and admission counts a job seen past its peak at
what its curve holds after it — so the next nvcc job starts while one compiles host code."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from builder.memory.admission import admit
from builder.memory.core import Scheduler
from builder.memory.estimate import estimate
from builder.memory.guard import guard
from builder.memory.jobs import JobRecord, Learned
from builder.memory.launcher import curve_of
from builder.memory.policy import (
    INF,
    Job,
    Running,
    after_peak,
    envelope,
    released,
    rising,
)
from builder.memory.running import Run
from builder.memory.tuning import Tuning

GiB = 2**30
#: RSS / peak against CPU time / total of nvcc 13 on a torch/extension.h TU for two archs
#: at --threads 2 (tree RSS sampled every 0.1 s): gcc -E and cudafe++ to 0.35, both cicc
#: to 1.0 at 79 %, ptxas, then the host cc1plus at 0.23
NVCC = [(0.0, 0.01), (0.03, 0.06), (0.06, 0.05), (0.075, 0.2), (0.12, 0.26), (0.16, 0.35),
        (0.2, 0.35), (0.206, 0.01), (0.23, 0.18), (0.28, 0.39), (0.33, 0.5), (0.4, 0.64),
        (0.5, 0.79), (0.6, 0.88), (0.7, 0.94), (0.77, 0.99), (0.79, 1.0), (0.797, 0.5),
        (0.8, 0.03), (0.81, 0.05), (0.85, 0.13), (0.9, 0.19), (0.95, 0.22), (1.0, 0.23)]
#: g++ on a torch TU: its peak is its end
GXX = [(0.0, 0.07), (0.25, 0.41), (0.5, 0.58), (0.75, 0.86), (0.95, 0.99), (1.0, 1.0)]


def _at(points: list[tuple[float, float]], x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def _measured(points: list[tuple[float, float]], cpu: float = 90.0) -> tuple[float, ...]:
    """What a launcher records for a compile following ``points``, sampled every 0.1 s."""
    return curve_of([(k / 10, int(GiB * _at(points, k / 10 / cpu)))
                     for k in range(int(cpu * 10) + 1)], cpu)


def test_the_launcher_keeps_a_fall_and_each_point_covers_its_part() -> None:
    curve = _measured(NVCC)
    assert len(curve) == 20 and max(curve) == 1.0
    assert curve[-1] < 0.3  # not a running maximum: the host compile's memory
    for k, y in enumerate(curve):  # the most held anywhere in its twentieth
        for step in range(11):
            assert y >= _at(NVCC, (k + step / 10) / 20) - 1e-3, (k, step)
    assert rising(curve)[-1] == 1.0 and list(rising(curve)) == sorted(rising(curve))
    # a compile whose memory only grows keeps a rising curve, as before
    gxx = _measured(GXX, 20.0)
    assert list(gxx) == sorted(gxx) and gxx[-1] == 1.0


def test_only_a_single_peak_followed_by_a_fall_counts() -> None:
    curve = _measured(NVCC)
    tail = after_peak(curve)
    assert tail is not None and 0.2 <= tail <= 0.3
    assert after_peak(_measured(GXX, 20.0)) is None  # g++: the peak is its end
    assert after_peak(rising(curve)) is None  # a history from before: no fall recorded
    # two archs after two (--threads 2, four archs): two peaks; past the first is not past
    twice = curve[:10] + curve[3:13]
    assert after_peak(twice) is None
    assert after_peak(()) is None
    # measured on the GPU machine (reduce.cu): the point it falls in holds some of the
    # peak (0.64); the host compile after it 0.25
    gpu = (0.07, 0.10, 0.20, 0.34, 0.36, 0.36, 0.26, 0.40, 0.55, 0.68, 0.79, 0.89, 0.97,
           1.00, 0.64, 0.09, 0.14, 0.18, 0.24, 0.25)
    assert after_peak(gpu) == 0.25
    assert after_peak((*gpu[:15], 0.62, *gpu[16:])) is None  # falls too slowly to say


def _job(cpu: float, rss: float, top: float, curve: tuple[float, ...] = ()) -> Running:
    return Running(6 * GiB, 0.0, 90.0, cpu=cpu, rss=int(rss * GiB), curve=curve or
                   _measured(NVCC), rss_cpu=cpu, top=int(top * GiB))


def test_a_job_is_released_only_once_seen_at_its_peak_and_below_it_again() -> None:
    m = Tuning()
    # in the host compile: it held 5.8 GB, holds 1.2 GB
    past = _job(80.0, 1.2, 5.8)
    after = released(past)
    assert after is not None and 1.2 * GiB < after < 0.35 * 6 * GiB
    env = envelope(past, 80.0, m)
    assert env.ahead(80.0) == env.ahead(10_000.0) == after  # until it ends
    assert env.end < INF and env.at(env.end) == 0.0
    # not seen at its peak (the cudafe++ dip before the cicc runs, or a slow report)
    assert released(_job(20.0, 1.2, 2.1)) is None
    # seen at its peak and still near it
    assert released(_job(71.0, 5.0, 5.8)) is None
    # above what its curve holds after the peak: the curve says nothing of this run
    assert released(_job(80.0, 3.0, 5.8)) is None
    assert envelope(_job(80.0, 3.0, 5.8), 80.0, m).ahead(80.0) == 6 * GiB
    # a g++ job's curve has no fall: never released
    assert released(_job(19.0, 0.5, 5.9, _measured(GXX, 20.0))) is None
    # overdue (more CPU than measured) but past its peak: what it holds past the peak
    late = envelope(_job(100.0, 1.2, 5.8), 100.0, m)
    assert late.end == INF and late.ahead(100.0) == after


def test_a_job_without_a_time_model_is_released_by_its_siblings_fall() -> None:
    # a cold nvcc job: no CPU time to predict its end, no curve of its own
    m = Tuning()
    cold = Running(6 * GiB, 0.0, 0.0, cpu=60.0, rss=int(0.3 * GiB), top=int(5.7 * GiB),
                   fall=0.25)
    env = envelope(cold, 60.0, m)
    assert env.end == INF and env.ahead(60.0) == env.ahead(600.0) == released(cold) < 2 * GiB
    assert envelope(Running(6 * GiB, 0.0, 0.0, cpu=60.0, rss=int(0.3 * GiB)), 60.0,
                    m).ahead(60.0) == 6 * GiB  # no curve: its peak until it ends


def test_the_scheduler_tells_running_jobs_what_their_siblings_held_after_peaks() -> None:
    b = Scheduler(16 * GiB, 8)
    family = "prior:torch/extension.h:device:2x2"
    rec = JobRecord("a", "attention.cu", 5 * GiB, 6 * GiB, "prior:torch/extension.h", 0.0,
                    family=family)
    b.running["a"] = Run(rec, 0.0, 2, 0.0, rss=int(0.2 * GiB), top=int(5.6 * GiB))
    own = JobRecord("h", "h.cu", 5 * GiB, 6 * GiB, "history", 0.0, family=family)
    b.running["h"] = Run(own, 90.0, 2, 0.0)  # measured itself: its own curve decides
    b._learn(0.0)
    assert b.running["a"].fall == 0.0  # nothing measured yet
    assert released(b.running["a"].view(70.0)) is None
    # one sibling peaking at 79 %, one at 33 % (a long TU): their pointwise highest curve
    # has two peaks, but each fell to a quarter after its own
    early = (0.07, 0.32, 0.36, 0.36, 0.7, 0.93, 1.0, 0.54, 0.27, *([0.05] * 9), 0.19, 0.26)
    got = Learned().add(int(5.4 * GiB), 90.0, _measured(NVCC)).add(int(5.4 * GiB), 180.0,
                                                                     early)
    assert after_peak(got.curve) is None and 0.2 <= got.fall <= 0.3
    b.learned[family] = got
    b._learn(0.0)
    assert b.running["a"].fall == got.fall and b.running["h"].fall == 0.0
    assert released(b.running["a"].view(70.0)) is not None
    # a sibling that peaked at its end (no fall) says the group's jobs may not fall
    assert got.add(int(5.4 * GiB), 90.0, _measured(GXX, 90.0)).fall < 0


def test_the_next_job_starts_beside_one_past_its_peak_not_beside_one_at_it() -> None:
    m = Tuning()
    nxt = Job("next", 6 * GiB, 1, 90.0, curve=_measured(NVCC))
    at_peak = _job(70.0, 5.8, 5.8)
    past = _job(75.0, 0.8, 5.8)
    assert admit([nxt], {"a": at_peak}, 8 * GiB, 4, now=70.0, model=m) == []
    assert [g.job.id for g in admit([nxt], {"a": past}, 8 * GiB, 4, now=75.0, model=m)] \
        == ["next"]


@dataclass
class _Fake:
    id: str
    cpu: float
    done: float = 0.0
    started: float = 0.0
    paused: bool = False
    report: tuple[float, int, int] = (0.0, 0, 0)  # CPU, RSS, most RSS

    def mem(self) -> float:
        return 5.4 * GiB * _at(NVCC, self.done / self.cpu)

    def rate(self) -> float:
        """CPU seconds per second: two while both cicc run, one before and after."""
        return 2.0 if 0.2 <= self.done / self.cpu < 0.8 else 1.0


def _world(cpus: list[float], budget: int, curve: tuple[float, ...],
           fall: float = 0.0) -> tuple[float, float]:
    """(wall, most memory held at once) of nvcc jobs admitted and guarded every 0.1 s on
    what they last reported (every 0.5 s) — by their measured ``curve``, or, with none (a
    cold build), each at its peak until it ends or is released by ``fall``."""
    m, dt = Tuning(), 0.05
    waiting = [Job(f"j{i}", int(5.5 * GiB), i, c if curve else 0.0, 2, curve=curve)
               for i, c in enumerate(cpus)]
    jobs = {f"j{i}": _Fake(f"j{i}", c) for i, c in enumerate(cpus)}
    running: dict[str, _Fake] = {}
    now, worst, step = 0.0, 0.0, 0
    while waiting or running:
        if step % 2 == 0:
            view = {i: Running(int(5.5 * GiB), f.started, f.cpu if curve else 0.0, 2,
                               cpu=f.report[0], rss=f.report[1], curve=curve,
                               rss_cpu=f.report[0], top=f.report[2], paused=f.paused,
                               fall=fall) for i, f in running.items()}
            stop = guard(view, budget, now, m) if view else frozenset()
            for i, f in running.items():
                f.paused = i in stop
            view = {i: replace(v, paused=i in stop) for i, v in view.items()}
            for g in admit(waiting, view, budget, 8, now=now, model=m):
                waiting.remove(g.job)
                running[g.job.id] = jobs[g.job.id]
                jobs[g.job.id].started = now
        worst = max(worst, sum(f.mem() for f in running.values()))
        now += dt
        step += 1
        for i, f in list(running.items()):
            if not f.paused:
                f.done += dt * f.rate()
            if step % 10 == 0:
                rss = int(f.mem())
                f.report = (f.done, rss, max(f.report[2], rss))
            if f.done >= f.cpu:
                del running[i]
        assert now < 10_000, "stuck"
    return now, worst


def test_nvcc_jobs_overlap_their_host_compiles_within_the_budget() -> None:
    cpus = [88.0, 92.0, 90.0, 95.0, 87.0, 91.0, 89.0, 93.0]
    curve = _measured(NVCC)
    budget = 16 * GiB
    falls, worst = _world(cpus, budget, curve)
    before, worst_before = _world(cpus, budget, rising(curve))  # histories of last session
    assert worst <= budget and worst_before <= budget
    assert falls <= 0.95 * before, (falls, before)


def test_a_device_compile_of_all_its_archs_at_once_falls_to_its_host_prior() -> None:
    both = estimate("csrc/k.cu", ("torch/extension.h",), nvcc_threads=2, nvcc_archs=2)
    host = estimate("csrc/k.cpp", ("torch/extension.h",))
    assert both.fall == host.peak / both.peak and 0.2 < both.fall < 0.35
    # archs in two batches (--threads 1): a cicc peak per batch, no single fall
    assert estimate("csrc/k.cu", ("torch/extension.h",), nvcc_threads=1, nvcc_archs=2).fall == 0
    assert host.fall == 0.0  # g++ peaks at its end
    one = estimate("csrc/k.cu", ("ATen/ATen.h",))  # one arch: one cicc run
    assert 0 < one.fall < 0.6


def test_cold_nvcc_jobs_overlap_their_host_compiles_by_their_prior_fall() -> None:
    # a cold build: no CPU time, no curve; each job counts at its peak until its memory
    # shows it past its cicc runs, by what the prior says its host compile holds
    cpus = [88.0, 92.0, 90.0, 95.0, 87.0, 91.0, 89.0, 93.0]
    fall = estimate("csrc/k.cu", ("torch/extension.h",), nvcc_threads=2, nvcc_archs=2).fall
    budget = 16 * GiB
    released_, worst = _world(cpus, budget, (), fall)
    held, worst_held = _world(cpus, budget, ())
    assert worst <= budget and worst_held <= budget
    assert released_ <= 0.9 * held, (released_, held)
    # a prior below what the host compile comes to hold releases a job only while it
    # holds less (then it counts at its peak again): less gain, still within the budget
    low, worst_low = _world(cpus, budget, (), 0.1)
    assert released_ < low < held and worst_low <= budget


def test_the_scheduler_releases_a_cold_nvcc_job_by_its_prior_until_a_sibling_ends() -> None:
    b = Scheduler(16 * GiB, 8)
    est = estimate("csrc/a.cu", ("torch/extension.h",), nvcc_threads=2, nvcc_archs=2)
    rec = JobRecord("a", "csrc/a.cu", est.peak, est.peak, est.source, 0.0, group=est.group,
                    family=est.family)
    b.estimates["a"] = est
    b.running["a"] = Run(rec, 0.0, 2, 0.0, rss=int(0.3 * est.peak), top=est.peak)
    b._learn(0.0)
    assert b.running["a"].fall == est.fall
    assert released(b.running["a"].view(70.0)) is not None
    # a sibling measured without a fall (its peak at its end) overrides the prior
    b.learned[est.family] = Learned().add(est.peak, 90.0, _measured(GXX, 90.0))
    b._learn(0.0)
    assert b.running["a"].fall < 0 and released(b.running["a"].view(70.0)) is None


def test_a_history_from_before_falls_were_kept_does_not_hide_the_next_fall() -> None:
    # the last build recorded a curve that falls; the one before it a running maximum (an
    # earlier version): their higher curve would hide the fall until a third build
    curve = _measured(NVCC)
    rec = {"peak": int(5.4 * GiB), "prev_peak": int(5.4 * GiB), "runs": 2, "cpu": 90.0,
           "curve": list(curve), "prev_curve": list(rising(curve))}
    got = estimate("csrc/k.cu", ("torch/extension.h",), history=rec, nvcc_threads=2,
                   nvcc_archs=2)
    assert got.curve == curve and after_peak(got.curve) is not None
    # two curves that both fall: the higher of the two, as before
    other = tuple(min(1.0, y * 1.05) for y in curve)
    both = estimate("csrc/k.cu", ("torch/extension.h",), nvcc_threads=2, nvcc_archs=2,
                    history={**rec, "prev_curve": list(other)})
    assert both.curve == other
    # g++ curves only rise: the higher of the two, as before
    gxx, higher = _measured(GXX, 20.0), tuple(min(1.0, y + 0.02) for y in _measured(GXX, 20.0))
    kept = estimate("src/a.cpp", ("torch/torch.h",), history={
        "peak": GiB, "runs": 2, "cpu": 20.0, "curve": list(gxx), "prev_curve": list(higher)})
    assert kept.curve == higher
