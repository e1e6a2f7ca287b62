"""The per-build memory broker: compile launchers ask it before they start.

A thread in the ``builder build`` process listens on a Unix socket.  Each launcher
connection is one job: ``acquire`` (the broker estimates the job and queues it),
a ``grant`` when :func:`policy.admit` says so, then ``done`` with the measured
peak.  A dropped connection releases the job, so a killed compiler never leaks
its reservation.  Every job is recorded (times, estimate, measured peak, OOM,
low-memory tier) for the build report, and measured peaks go to the history.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .estimate import estimate, scan_includes
from .history import History, flags_hash, job_key
from .policy import Job, admit


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


@dataclass
class BrokerConfig:
    budget: int
    slots: int
    source_root: str
    build_dir: str
    history_path: str
    recipe_default: int = 0
    recipe_globs: tuple[tuple[str, int], ...] = ()
    lowmem_flags: tuple[str, ...] = ()
    include_roots: tuple[str, ...] = field(default_factory=tuple)


class Broker:
    def __init__(self, socket_path: Path, config: BrokerConfig) -> None:
        self.path = socket_path
        self.cfg = config
        self.history = History(Path(config.history_path))
        self.cond = threading.Condition()
        self.waiting: list[Job] = []
        self.running: dict[str, int] = {}
        self.exclusive: set[str] = set()
        self.grants: dict[str, tuple[bool, bool]] = {}
        self.records: list[JobRecord] = []
        self.t0 = time.monotonic()
        self.wall0 = time.time()  # to place the jobs on the build's timeline
        self._n = 0
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(self.path))
        s.listen(128)
        self._sock = s
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self.path.unlink(missing_ok=True)
        self.history.save()

    def _accept(self) -> None:
        assert self._sock is not None
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    # -- one job --------------------------------------------------------------------

    def _estimate(self, msg: dict[str, Any]) -> tuple[JobRecord, str, str]:
        file = str(msg.get("file", ""))
        argv = [str(a) for a in msg.get("argv", [])]
        root = Path(self.cfg.source_root)
        try:
            rel = str(Path(file).resolve().relative_to(root.resolve()))
        except ValueError:
            rel = file
        includes = scan_includes(Path(file), (root, *map(Path, self.cfg.include_roots)))
        fh = flags_hash(argv, self.cfg.build_dir)
        key = job_key(file, fh, argv[0] if argv else "")
        threads = 1
        for i, a in enumerate(argv):
            if a in ("--threads", "-t") and i + 1 < len(argv) and argv[i + 1].isdigit():
                threads = int(argv[i + 1])
        est = estimate(rel, includes, recipe_default=self.cfg.recipe_default,
                       recipe_globs=self.cfg.recipe_globs, history=self.history.get(key),
                       history_file=self.history.for_file(file), nvcc_threads=threads)
        with self.cond:
            self._n += 1
            n = self._n
        rec = JobRecord(f"{n}:{rel}", rel, est.peak, est.reserve, est.source,
                        time.monotonic() - self.t0, retry=bool(msg.get("retry")))
        return rec, key, file

    def _schedule(self) -> None:
        """Called with the condition held: start whatever the policy admits."""
        for g in admit(self.waiting, self.running, self.cfg.budget, self.cfg.slots,
                       frozenset(self.exclusive)):
            self.waiting.remove(g.job)
            self.running[g.job.id] = g.job.estimate
            self.grants[g.job.id] = (g.alone, g.lowmem)
        self.cond.notify_all()

    def _serve(self, conn: socket.socket) -> None:
        rec: JobRecord | None = None
        with conn, conn.makefile("rwb") as f:
            try:
                line = f.readline()
                msg = json.loads(line) if line else {}
                if msg.get("op") != "acquire":
                    return
                rec, key, file = self._estimate(msg)
                job = Job(rec.id, rec.reserve, self._n)
                with self.cond:
                    self.records.append(rec)
                    if rec.retry:
                        self.exclusive.add(rec.id)
                    self.waiting.append(job)
                    self._schedule()
                    while rec.id not in self.grants:
                        self.cond.wait()
                    rec.alone, rec.lowmem = self.grants[rec.id]
                rec.started = time.monotonic() - self.t0
                reply = {"op": "grant", "lowmem": rec.lowmem or rec.retry, "alone": rec.alone,
                         "flags": list(self.cfg.lowmem_flags), "estimate": rec.estimate,
                         "source": rec.source}
                f.write((json.dumps(reply) + "\n").encode())
                f.flush()
                done = f.readline()
                result = json.loads(done) if done else {}
                rec.peak = int(result.get("peak", 0))
                rec.rc = result.get("rc")
                rec.oom = bool(result.get("oom"))
                if rec.peak and rec.rc == 0:
                    with self.cond:
                        self.history.record(key, file, rec.peak,
                                            float(result.get("seconds", 0.0)))
                elif rec.oom and rec.peak:
                    with self.cond:  # at least this much: raise the estimate for next time
                        self.history.record(key, file, max(rec.peak, rec.estimate * 2), 0.0,
                                            oom=True)
            except (OSError, ValueError):
                pass
            finally:
                if rec is not None:
                    rec.ended = time.monotonic() - self.t0
                    with self.cond:
                        self.running.pop(rec.id, None)
                        self.grants.pop(rec.id, None)
                        self.exclusive.discard(rec.id)
                        self._schedule()

    def snapshot(self) -> dict[str, Any]:
        """What runs now, for live progress: jobs with their reserved memory."""
        with self.cond:
            running = [r for r in self.records if r.started and not r.ended and
                       r.id in self.running]
            return {"budget": self.cfg.budget, "waiting": len(self.waiting),
                    "reserved": sum(self.running.values()),
                    "running": [{"file": r.file, "reserve": r.reserve, "source": r.source,
                                 "seconds": time.monotonic() - self.t0 - r.started}
                                for r in running],
                    "done": sum(1 for r in self.records if r.ended)}

    def report(self) -> list[dict[str, Any]]:
        with self.cond:
            return [asdict(r) for r in self.records]

