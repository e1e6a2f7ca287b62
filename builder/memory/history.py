"""Measured compile peaks, kept between builds in ``<state>/memory-history.json``.

Keyed by (source file, flags hash, compiler); a second index by file alone lets a
flag change still start from the file's last measurement.  Each record holds the
peak (anonymous RSS of the process tree), its memory curve (``launcher.curve_of``),
wall and CPU seconds (CPU time is the time model's clock,
see ``policy.py``: a loaded machine stretches wall time, not work) and how many
successive measurements there were, with the previous peak.  The CPU times of the last
:attr:`Tuning.keep_cpus` successive measurements are kept too (``cpus``): the time model plans
with their mean (:func:`typical_cpu`).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from builder.memory.tuning import TUNING

__all__ = ["History", "flags_hash", "job_key", "typical_cpu"]

#: successive CPU times a record keeps (``cpus``).  One build's CPU time of a TU is noise
#: (alike TUs vary by about ±15 % from one build to the next), so a job planned on its last
#: time runs ahead of its curve (held at its peak) or past its end (overdue); the mean of
#: the last three is steadier, and more adds nothing (``bench/noisy_replay.py
#: --history-builds``; figures in bench/RESULTS.md).


def typical_cpu(rec: dict[str, Any]) -> float:
    """CPU seconds to plan ``rec``'s job with: the mean of its last successive measured
    CPU times; 0.0: none measured."""
    times = _cpu_times(rec)
    return sum(times) / len(times) if times else 0.0


def _cpu_times(rec: dict[str, Any]) -> list[float]:
    """A record's successive measured CPU times: its ``cpus``, or the one ``cpu`` that an
    older builder kept."""
    return [float(c) for c in rec.get("cpus") or [rec.get("cpu", 0.0)] if float(c) > 0]


def job_key(file: str, flags_hash: str, compiler: str) -> str:
    return hashlib.sha256(f"{file}\0{flags_hash}\0{compiler}".encode()).hexdigest()[:24]


def flags_hash(argv: list[str], build_dir: str) -> str:
    """Hash of the compile command without what changes per build folder or output."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        out.append(a.replace(build_dir, "<build>") if build_dir else a)
    return hashlib.sha256("\0".join(out).encode()).hexdigest()[:16]


class History:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.jobs: dict[str, dict[str, Any]] = {}
        self.by_file: dict[str, dict[str, Any]] = {}
        from builder.util.history_records import read_history

        self.jobs = read_history(path)  # checked; a damaged one is set aside
        for rec in sorted(self.jobs.values(), key=lambda r: r.get("when", 0)):
            self.by_file[rec.get("file", "")] = rec

    def get(self, key: str) -> dict[str, Any] | None:
        return self.jobs.get(key)

    def for_file(self, file: str) -> dict[str, Any] | None:
        return self.by_file.get(file)

    def record(self, key: str, file: str, peak: int, seconds: float, oom: bool = False,
               cpu: float = 0.0, curve: tuple[float, ...] = ()) -> None:
        """One compile's measurement: its peak, wall and CPU seconds and memory curve.
        ``runs`` counts successive measurements of the same job and ``prev_peak`` and
        ``prev_curve`` keep the one before, so that a peak seen twice alike can get a
        smaller margin and the curve used is the higher of the two (``estimate.py``);
        ``cpus`` keeps the last :attr:`Tuning.keep_cpus` successive CPU times."""
        prev = self.jobs.get(key) or {}
        runs = 1
        if prev and not prev.get("oom") and not oom and prev.get("peak"):
            runs = int(prev.get("runs", 1)) + 1
        rec: dict[str, Any] = {"file": file, "peak": int(peak), "seconds": round(seconds, 3),
                               "oom": oom, "when": time.time(), "runs": runs}
        if cpu > 0:
            rec["cpu"] = round(cpu, 3)
            before = _cpu_times(prev) if runs > 1 else []
            rec["cpus"] = [*before, round(cpu, 3)][-TUNING.keep_cpus:]
        if curve:
            rec["curve"] = list(curve)
        if runs > 1:
            rec["prev_peak"] = int(prev["peak"])
            if prev.get("curve"):
                rec["prev_curve"] = list(prev["curve"])
        self.jobs[key] = rec
        self.by_file[file] = rec

    def save(self) -> None:
        from builder.util.records import write_json

        write_json(self.path, {"version": 1, "jobs": self.jobs})
