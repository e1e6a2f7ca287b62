"""What the broker knows of each compile job: its record for the report (times, estimate,
measured peak and CPU, OOM, pauses), its live state while it runs, and what a group of
sibling translation units has taught the build about the ones still waiting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from builder.memory.estimate import Estimate, learned
from builder.memory.policy import after_peak, upper
from builder.memory.tuning import TUNING, Tuning

__all__ = ["JobRecord", "Learned", "fall", "learned_lines", "oom_kills", "plausible",
           "relearn", "requeues"]


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
    first_estimate: int = 0  # its estimate when it arrived, before learning from siblings
    siblings: int = 0  # how many siblings its learned estimate came from (0: none)
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

    def add(self, peak: int, cpu: float, curve: tuple[float, ...],
            tuning: Tuning = TUNING) -> Learned:
        top, second = sorted((self.peak, self.second, peak))[-1:-3:-1]
        tail = after_peak(curve, tuning)
        fall = -1.0 if tail is None or self.fall < 0 else max(self.fall, tail)
        return Learned(top, min(self.cpu, cpu) if self.cpu else cpu,
                       upper(self.curve, curve), self.count + 1,
                       max(self.slowest, cpu), second, fall)

    def passed(self, peak: int) -> Learned:
        """With a running sibling that is past its single peak (``policy.released``): its
        peak is known, its CPU time and curve not yet."""
        top, second = sorted((self.peak, self.second, peak))[-1:-3:-1]
        return replace(self, peak=top, second=second, count=self.count + 1)

    def agrees(self, share: float = TUNING.agree) -> bool:
        """The two largest peaks are within ``share`` of each other."""
        return self.count >= 2 and self.peak - self.second <= share * self.peak

    @property
    def agreed(self) -> bool:
        return self.agrees()


def relearn(est: Estimate, known: Mapping[str, Learned], holding: Mapping[str, int],
            tuning: Tuning = TUNING) -> Estimate | None:
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
    return learned(est, peak, got.cpu, got.curve, got.agrees(tuning.agree) and held <= got.peak,
                   got.slowest, via, tuning)


def fall(rec: JobRecord, known: Mapping[str, Learned], est: Estimate | None) -> float:
    """What tells when a job never measured is past its single peak (``run.Run.fall``): what
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


def learned_lines(jobs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per job whose estimate its siblings in this build changed: from what to
    what, and from how many (``JobRecord.siblings``)."""
    return [f"{job.get('file', '?')}: estimate {int(job.get('first_estimate', 0)) / 2**30:.1f} "
            f"GiB → {int(job.get('estimate', 0)) / 2**30:.1f} GiB learned from "
            f"{job.get('siblings')} sibling{'s' if int(job.get('siblings', 0)) > 1 else ''}"
            for job in jobs if int(job.get("siblings", 0)) > 0
            and int(job.get("first_estimate", 0)) != int(job.get("estimate", 0))]
