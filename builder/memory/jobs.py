"""What the broker knows of each compile job: its record for the report (times, estimate,
measured peak and CPU, OOM, pauses), its live state while it runs, and what a group of
sibling translation units has taught the build about the ones still waiting."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from builder.memory.estimate import Estimate, learned
from builder.memory.policy import Envelope, Running, after_peak, upper

__all__ = ["LAUNCHER_BYTES", "JobRecord", "Learned", "Live", "fall", "oom_kills", "plausible",
           "relearn", "requeues"]

#: memory of one launcher process (Python, ~8 MB anonymous), counted for every launcher
#: connected — waiting or running — since the jobs' estimates do not include it
LAUNCHER_BYTES = 10 * 2**20


@dataclass
class JobRecord:
    id: str
    file: str
    estimate: int
    reserve: int
    source: str
    queued: float
    started: float = 0.0
    ended: float = 0.0
    peak: int = 0
    rc: int | None = None
    oom: bool = False
    lowmem: bool = False
    alone: bool = False
    retry: bool = False
    cpu: float = 0.0  # measured CPU seconds of the compile
    model_cpu: float = 0.0  # the CPU seconds the time model used (0: peak reserved)
    model_curve: bool = False  # the time model used the job's measured memory curve
    paused: float = 0.0  # seconds it was stopped by the guard or the backstop
    pauses: int = 0
    held: int = 0  # of its pauses, those by the backstop (measured memory near the budget)
    requeued: bool = False  # killed by the backstop to make room; run again as a new job
    #: seconds the time model counted it at its peak because its reported memory was above
    #: its modelled bound, and seconds it ran past its predicted end (``policy.envelope``)
    above: float = 0.0
    overdue: float = 0.0
    rerun: bool = False  # the run again of a requeued job
    speculative: bool = False  # admitted on its prior's time, the backstop as the guarantee
    kind: str = "compile"  # compile | link
    measured_by: str = ""  # cgroup (the kernel's peak of its own cgroup) | tree (sampled)
    group: str = ""  # estimate group (recipe glob, umbrella header) when not measured
    family: str = ""  # the umbrella header's group, which learns from every job
    #: where it compiled: "" here, "remote" on the distributed pool (``builder build
    #: --dist``), which then reserved only its local part (:mod:`builder.memory.remote`)
    where: str = ""

    @property
    def groups(self) -> set[str]:
        """The estimate groups its measurement teaches (and whose jobs it is one of)."""
        return {self.group, self.family} - {""}


@dataclass(frozen=True)
class Learned:
    """What the jobs of one estimate group measured so far in this build: the largest
    peak (and the next largest: do the two agree?), the smallest CPU time (a faster job
    peaks sooner), the pointwise highest curve, how many jobs, the largest CPU time
    (when the next one may end), and the most any held after its single peak
    (``policy.after_peak``; -1 once one had no such fall: the pointwise highest curve of
    jobs peaking at different points has two peaks, and says nothing of a fall)."""

    peak: int = 0
    cpu: float = 0.0
    curve: tuple[float, ...] = ()
    count: int = 0
    slowest: float = 0.0
    second: int = 0
    fall: float = 0.0

    def add(self, peak: int, cpu: float, curve: tuple[float, ...]) -> Learned:
        top, second = sorted((self.peak, self.second, peak))[-1:-3:-1]
        tail = after_peak(curve)
        fall = -1.0 if tail is None or self.fall < 0 else max(self.fall, tail)
        return Learned(top, min(self.cpu, cpu) if self.cpu else cpu,
                       upper(self.curve, curve), self.count + 1,
                       max(self.slowest, cpu), second, fall)

    @property
    def agreed(self) -> bool:
        """The two largest peaks are within 2 % of each other."""
        return self.count >= 2 and self.peak - self.second <= 0.02 * self.peak


def relearn(est: Estimate, known: Mapping[str, Learned], holding: Mapping[str, int]
            ) -> Estimate | None:
    """``est`` re-estimated from what its group — or, until one of its group was measured,
    its umbrella header's family — measured so far in this build (``known``); None when
    neither has, or when what they measured is not plausible for it (:func:`plausible`).
    The peak is at least what the group's running jobs hold now (``holding``): a first
    sibling to finish may be the lightest."""
    via = est.group if est.group in known else est.family
    got = known.get(via) if via else None
    if got is None:
        return None
    held = holding.get(via, 0)
    peak = max(got.peak, held)
    if not plausible(est, via, peak):
        return None
    return learned(est, peak, got.cpu, got.curve, got.agreed and held <= got.peak,
                   got.slowest, via)


def fall(rec: JobRecord, known: Mapping[str, Learned], est: Estimate | None) -> float:
    """What tells when a job never measured is past its single peak (``Live.fall``): what
    its siblings held after theirs (``known``), or — until one of them ended — its prior's
    fall (``Estimate.fall``: nvcc's host compile after its cicc runs)."""
    return next((known[g].fall for g in (rec.group, rec.family) if g in known),
                est.fall if est is not None else 0.0)


def plausible(est: Estimate, via: str, peak: int) -> bool:
    """Whether a sibling's measured ``peak`` may replace ``est``.  Siblings known only by
    their umbrella header (a prior, or the default prior) — or learning through that
    header's family — are alike only in what they include: a first TU measured far
    lighter than the header's prior says nothing of the others (a cold build learned 91
    MiB from a light unity batch and reserved that for siblings that peaked at 1055 MiB).
    Learning may raise such an estimate, and lower it only within the range the header's
    TUs really span (``est.floor``: 0.6 × a header's prior; a job known by no header is
    never lowered below the default prior).  The jobs of one recipe glob are alike by the
    recipe author's word: what they measure may lower it."""
    own_recipe_glob = est.source == "recipe" and via == est.group
    return own_recipe_glob or peak >= est.floor


@dataclass
class Live:
    """A granted job as the broker sees it while it runs."""

    rec: JobRecord
    seconds: float  # the time model's CPU seconds (0: unknown)
    threads: int
    started: float  # broker clock
    curve: tuple[float, ...] = ()  # its measured memory curve (the time model's bound)
    span: float = 0.0  # CPU seconds that predict its end, if longer than ``seconds``
    cpu: float | None = None  # last reported CPU seconds …
    cpu_active: float = 0.0  # … and the job's active time when it was reported
    rss: int = 0
    top: int = 0  # the most it reported holding
    fall: float = 0.0  # what its siblings held after their peaks, or its prior's fall
    paused: bool = False
    paused_at: float = 0.0
    paused_total: float = 0.0
    held: bool = False  # stopped by the backstop: only the backstop thaws it
    granted: bool = False  # the grant was written: commands may follow
    ticked: float = -1.0  # when :meth:`account` last ran
    conn: socket.socket | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def active(self, now: float) -> float:
        """Seconds it has run, not counting pauses."""
        stopped = self.paused_total + (now - self.paused_at if self.paused else 0.0)
        return max(0.0, now - self.started - stopped)

    def view(self, now: float) -> Running:
        """What the policy needs: its progress bounded from its last report."""
        active = self.active(now)
        cpu = None
        if self.cpu is not None:
            cpu = self.cpu + max(0.0, active - self.cpu_active) * max(self.threads, 1)
        return Running(self.rec.reserve, now - active, self.seconds, self.threads, cpu,
                       self.rss, self.paused, curve=self.curve, rss_cpu=self.cpu or 0.0,
                       span=self.span, since=self.started, top=self.top, fall=self.fall,
                       speculative=self.rec.speculative)

    def account(self, env: Envelope, now: float) -> None:
        """Add the time since the last scheduling tick to the record's ``above`` or
        ``overdue`` when its bound ``env`` says why it counts at its peak (job report)."""
        dt = now - self.ticked if self.ticked >= 0 else 0.0
        self.ticked = now
        if env.why == "above":
            self.rec.above += dt
        elif env.why == "overdue":
            self.rec.overdue += dt

    def stop(self, now: float, held: bool = False) -> None:
        """Pause it (``held``: by the backstop, which alone thaws it)."""
        if not self.paused:
            self.paused, self.paused_at = True, now
            self.rec.pauses += 1
            self.command("pause")
        if held and not self.held:
            self.held = True
            self.rec.held += 1

    def go(self, now: float) -> None:
        """Resume it."""
        if self.paused:
            self.paused_total += now - self.paused_at
            self.paused = self.held = False
            self.command("resume")

    def command(self, op: str) -> None:
        """Send ``pause``/``resume`` (after the grant; a lost connection is the
        launcher's end, which the job's own thread sees)."""
        with self.lock:
            if self.granted and self.conn is not None:
                with contextlib.suppress(OSError):
                    self.conn.sendall((json.dumps({"op": op}) + "\n").encode())




def oom_kills(jobs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per compile killed for memory in a build (``Broker.report()`` records):
    the file, its peak when killed against what was reserved for it and why, and how its
    retry — alone, with the low-memory flags — ended.  A build that recovered still says
    so: its estimates were wrong and it ran slower for it."""
    out = []
    for i, job in enumerate(jobs):
        if not job.get("oom") or job.get("retry"):
            continue
        file = str(job.get("file", "?"))
        retry = next((j for j in jobs[i + 1:] if j.get("retry") and j.get("file") == file),
                     None)
        if retry is None:
            after = "not retried"
        elif retry.get("oom"):
            after = "killed again when retried alone with the low-memory flags"
        elif retry.get("rc") == 0:
            after = (f"retried alone with the low-memory flags: succeeded (peak "
                     f"{int(retry.get('peak', 0)) >> 20} MiB)")
        else:
            after = f"retried alone with the low-memory flags: exit code {retry.get('rc')}"
        out.append(f"{file} was killed out of memory at {int(job.get('peak', 0)) >> 20} MiB "
                   f"({int(job.get('reserve', 0)) >> 20} MiB reserved, estimate from "
                   f"{job.get('source', '?')}); {after}")
    return out


def requeues(jobs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per compile the backstop killed and ran again to keep the build within its
    budget (its work until then was lost; no OOM kill happened)."""
    return [f"{job.get('file', '?')} was stopped at {int(job.get('peak', 0)) >> 20} MiB and "
            f"run again ({int(job.get('reserve', 0)) >> 20} MiB reserved, estimate from "
            f"{job.get('source', '?')}): the build's memory reached its budget"
            for job in jobs if job.get("requeued")]
