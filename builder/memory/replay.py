"""Replays of recorded compile jobs through the scheduler core on a virtual clock.

Each job's true peak, CPU time and memory curve come from a history builder wrote
(``memory-history.json``, e.g. ``bench/data/h100-libamm-history.json``); its estimate is
what the broker would have had (recipe, priors, or history).  :func:`replay` drives
:class:`.core.Scheduler` exactly as the broker does — ``Arrived``, ``Progress``, ``Memory``
(the backstop's reading), ``Tick``, ``Finished`` — every ``dt`` seconds of virtual time,
each job holding ``peak × curve(progress)`` and using one CPU second per second while it
runs.  bench/cold_replay.py and bench/noisy_replay.py print what it gives; the unit suite
bounds it, so that a policy change that loses speed or passes the cap fails a test.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from builder.memory.core import (
    ALL_ON,
    Admit,
    Arrived,
    Decision,
    Finished,
    Memory,
    Pause,
    Progress,
    Requeue,
    Resume,
    Scheduler,
    Switches,
    Tick,
)
from builder.memory.estimate import Estimate
from builder.memory.jobs import JobRecord
from builder.memory.policy import curve_at
from builder.memory.tuning import TUNING, Tuning

__all__ = ["Outcome", "Trace", "fixed", "held", "load_traces", "replay"]


@dataclass(frozen=True)
class Trace:
    """One recorded compile: its true peak (bytes), CPU seconds and memory curve."""

    peak: int
    cpu: float
    curve: tuple[float, ...]


def load_traces(path: Path) -> dict[str, Trace]:
    """The recorded compiles of a ``memory-history.json``, by file (links, which carry no
    curve, are left out)."""
    data = json.loads(path.read_text(encoding="utf-8"))["jobs"]
    return {str(r.get("file", f)).split(":", 1)[-1]:
            Trace(int(r["peak"]), float(r["cpu"]), tuple(float(x) for x in r["curve"]))
            for f, r in data.items() if r.get("curve")}


def held(trace: Trace, done: float) -> float:
    """Bytes a compile holds once it has done ``done`` of its work (0..1)."""
    return trace.peak * curve_at(trace.curve, done) if done < 1.0 else float(trace.peak)


@dataclass
class Outcome:
    wall: float  # seconds until the last job ended
    most: float  # the most bytes the jobs (and their launchers) held at once
    paused: float = 0.0  # job-seconds spent paused
    freezes: int = 0  # pauses by the backstop
    requeues: int = 0
    records: list[JobRecord] = field(default_factory=list)


@dataclass
class _Job:
    id: str
    file: str
    cpu: float = 0.0
    paused: bool = False


def replay(traces: Mapping[str, Trace], estimates: Mapping[str, Estimate], order: Sequence[str],
           budget: int, slots: int, *, actual: Mapping[str, float] | None = None,
           tuning: Tuning = TUNING, switches: Switches = ALL_ON, watched: bool = True,
           dt: float = 0.05, limit: float = 3600.0) -> Outcome:
    """One build of the jobs ``order`` names (ninja's order), as the broker runs it.
    ``actual``: each job's CPU seconds in this build (default: as recorded, as a build
    whose times vary does); ``watched``: the backstop watches the build's memory."""
    core = Scheduler(budget, slots, tuning, switches)
    cpu = {f: (actual or {}).get(f, traces[f].cpu) for f in order}
    running: dict[str, _Job] = {}
    waiting: dict[str, str] = {}  # id → file
    out = Outcome(0.0, 0.0)
    now, n, steps = 0.0, 0, 0

    def arrive(file: str, rerun: bool = False) -> None:
        nonlocal n
        n += 1
        waiting[f"{n}:{file}"] = file
        carry(core.step(Arrived(f"{n}:{file}", file, estimates[file], rerun=rerun,
                                watched=watched), now))

    def memory(job: _Job) -> float:
        return held(traces[job.file], job.cpu / cpu[job.file])

    def carry(decisions: list[Decision]) -> None:
        for d in decisions:
            if isinstance(d, Admit):
                running[d.id] = _Job(d.id, waiting.pop(d.id))
            elif isinstance(d, Pause) and d.id in running:
                running[d.id].paused = True
                out.freezes += int(d.held)
            elif isinstance(d, Resume) and d.id in running:
                running[d.id].paused = False
            elif isinstance(d, Requeue) and d.id in running:
                job = running.pop(d.id)
                out.requeues += 1
                carry(core.step(Finished(d.id, rc=-9, requeued=True), now))
                arrive(job.file, rerun=True)

    for file in order:
        arrive(file)
    while (running or waiting) and now < limit:
        overhead = tuning.launcher_bytes * (len(running) + len(waiting))
        used = sum(memory(j) for j in running.values()) + overhead
        out.most = max(out.most, used)
        for job in list(running.values()):
            carry(core.step(Progress(job.id, job.cpu, int(memory(job))), now))
        if watched and switches.backstop:
            carry(core.step(Memory(int(used)), now))
        if steps % max(1, round(tuning.tick / dt)) == 0:
            carry(core.step(Tick(), now))
        now += dt
        steps += 1
        for job in list(running.values()):
            if job.paused:
                out.paused += dt
                continue
            job.cpu += dt
            if job.cpu >= cpu[job.file] - 1e-9 and job.id in running:
                del running[job.id]
                t = traces[job.file]
                carry(core.step(Finished(job.id, 0, t.peak, job.cpu, job.cpu, 0.0, t.curve,
                                         measured_by="replay"), now))
    out.wall, out.records = now, core.records
    return out


def fixed(traces: Mapping[str, Trace], order: Sequence[str], n: int,
          actual: Mapping[str, float] | None = None, dt: float = 0.05) -> tuple[float, float]:
    """(wall seconds, most bytes held at once) of a plain ``-jN`` in ``order``: what a
    build without a scheduler does, however much memory its jobs hold."""
    cpu = {f: (actual or {}).get(f, traces[f].cpu) for f in order}
    queue, running = list(order), dict[str, float]()
    now, most = 0.0, 0.0
    while queue or running:
        while queue and len(running) < n:
            running[queue.pop(0)] = 0.0
        most = max(most, sum(held(traces[f], c / cpu[f]) for f, c in running.items()))
        now += dt
        running = {f: c + dt for f, c in running.items() if c + dt < cpu[f] - 1e-9}
    return now, most
