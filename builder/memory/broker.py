"""The per-build memory broker: the thin layer between compile launchers and the
scheduler core.

A thread in the ``builder build`` process listens on a Unix socket; each launcher
connection is one job (:mod:`.wire`: ``Acquire``, ``Grant``, ``Report``, ``Done``).  The
broker estimates the job (:mod:`.intake`: files and history are read here), and turns
what happens into events for :class:`.core.Scheduler` on the real clock — a job arrived,
reported, finished; a tick every ``Tuning.tick``; the build cgroup's measured memory
every ``Tuning.backstop_period`` — then carries out its decisions: a grant written to the
waiting launcher, ``pause``/``resume``/``requeue`` sent to a running one.  A dropped
connection finishes the job, so a killed compiler never leaks its memory.  Measurements
go to the build history; the core's records go to the build report.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from builder.memory import wire
from builder.memory.core import (
    ALL_ON,
    Admit,
    Arrived,
    Decision,
    Event,
    Fault,
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
from builder.memory.history import History
from builder.memory.intake import CACHES, Intake, MemorySettings, intake
from builder.memory.jobgroup import anon_bytes
from builder.memory.jobs import JobRecord
from builder.memory.remote import on_pool
from builder.memory.tuning import TUNING, Tuning
from builder.util.scratch import private_dir, remove_socket

__all__ = ["CACHES", "Broker", "Switches"]


#: what the launcher is told for each decision on a running job
_COMMANDS: dict[type[Decision], wire.Message] = {Pause: wire.Pause(), Resume: wire.Resume(),
                                                 Requeue: wire.Requeue()}


class _Link:
    """The broker's side of one granted job's connection: commands go out only after its
    grant was written (one decided before is sent right after the grant)."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn, self.lock, self.granted = conn, threading.Lock(), False
        self.pending: list[wire.Message] = []

    def send(self, msg: wire.Message) -> None:
        with self.lock:
            if not self.granted:
                self.pending.append(msg)
                return
            with contextlib.suppress(OSError):  # its end: the job's own thread sees it
                self.conn.sendall(wire.encode(msg))

    def grant(self, msg: wire.Grant) -> None:
        with self.lock:
            self.conn.sendall(wire.encode(msg))
            self.granted = True
            for m in self.pending:
                with contextlib.suppress(OSError):
                    self.conn.sendall(wire.encode(m))
            self.pending = []


class Broker:
    def __init__(self, socket_path: Path, config: MemorySettings,
                 switches: Switches = ALL_ON, tuning: Tuning = TUNING,
                 include_roots: tuple[str, ...] = ()) -> None:
        self.path = socket_path
        self.cfg = config
        self.switches, self.tuning, self.include_roots = switches, tuning, include_roots
        self.core = Scheduler(config.budget, config.slots, tuning, switches)
        self.history = History(Path(config.history_path))
        self.cond = threading.Condition()
        self.grants: dict[str, Admit] = {}
        self.links: dict[str, _Link] = {}
        self.t0 = time.monotonic()
        self.wall0 = time.time()  # to place the jobs on the build's timeline
        self._n = 0
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False
        #: the build's memory cgroup, as its launchers name it (None: none, not watched)
        self.build_cgroup: Path | None = None

    def now(self) -> float:
        return time.monotonic() - self.t0

    @property
    def failure(self) -> str:
        """The first error of the scheduling policy or around it ("": none)."""
        return self.core.failure

    @property
    def most_used(self) -> int:
        """The most the build's cgroup held, as the backstop saw it."""
        return self.core.most_used

    # -- events in, decisions out -----------------------------------------------------

    def _step(self, event: Event) -> None:
        """Called with the condition held."""
        self._carry_out(self.core.step(event, self.now()))

    def _carry_out(self, decisions: list[Decision]) -> None:
        for d in decisions:
            if isinstance(d, Admit):
                self.grants[d.id] = d
            elif d.id in self.links:
                self.links[d.id].send(_COMMANDS[type(d)])
        self.cond.notify_all()

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        private_dir(self.path.parent)
        remove_socket(self.path)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(self.path))
        s.listen(128)
        self._sock = s
        # the thread gets the socket itself: it may first run after stop() has closed it
        self._thread = threading.Thread(target=self._accept, args=(s,), daemon=True)
        self._thread.start()
        threading.Thread(target=self._tick, daemon=True).start()
        if self.switches.backstop:
            threading.Thread(target=self._watch, daemon=True).start()

    def stop(self) -> None:
        with self.cond:
            self._stopped = True
            for i, run in self.core.running.items():
                if run.paused and i in self.links:  # never leave a compiler stopped
                    self.links[i].send(wire.Resume())
            self.cond.notify_all()
        sock, self._sock = self._sock, None
        if sock is not None:
            # shutdown wakes the accept() blocked in the thread (close alone does not)
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            if self._thread is not None:
                self._thread.join(timeout=5.0)
            sock.close()
        remove_socket(self.path)
        self.history.save()

    def _accept(self, sock: socket.socket) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:  # shut down or closed: the build is over
                return
            with self.cond:
                if self._stopped:
                    conn.close()  # a late launcher goes on without us
                    return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _tick(self) -> None:
        with self.cond:
            while not self._stopped:
                self._step(Tick())
                self.cond.wait(self.tuning.tick)

    def _watch(self) -> None:
        """The backstop's eyes: the build cgroup's memory every ``backstop_period``."""
        while True:
            with self.cond:
                if self._stopped:
                    return
                group = self.build_cgroup
            if group is not None:
                try:
                    used = anon_bytes(group)
                except Exception as exc:  # never leave a job frozen
                    with self.cond:
                        self._step(Fault(f"{type(exc).__name__}: {exc}"))
                    return
                with self.cond:
                    self._step(Memory(used))
            time.sleep(self.tuning.backstop_period)

    def _watched(self, msg: wire.Acquire) -> bool:
        """Whether the backstop watches this job's build cgroup, learnt from the first
        launcher that names one — whatever its estimate: a history can be wrong too, and
        only the watch stops the kernel's OOM killer."""
        if not self.switches.backstop:
            return False
        group = msg.build_cgroup
        with self.cond:
            if self.build_cgroup is None and group and anon_bytes(Path(group)) > 0:
                self.build_cgroup = Path(group)
            return self.build_cgroup is not None and str(self.build_cgroup) == group

    # -- one job --------------------------------------------------------------------

    def _serve(self, conn: socket.socket) -> None:
        job: str | None = None
        result: wire.Done | None = None
        seen: Intake | None = None
        with conn, conn.makefile("rb") as f:
            try:
                line = f.readline()
                msg = wire.decode(line) if line else None
                if not isinstance(msg, wire.Acquire):
                    return
                wire.tell(conn, wire.Queued())  # the launcher bounds its wait for this
                seen = intake(msg, self.cfg, self.history, self.tuning, self.include_roots)
                # a remote job: its local part
                est, where = on_pool(seen.est, msg.argv, msg.dist_pool, msg.dist_index)
                watched = self._watched(msg)
                with self.cond:
                    self._n += 1
                    job = f"{self._n}:{seen.rel}"
                    self.links[job] = link = _Link(conn)
                    self._step(Arrived(job, seen.rel, est, seen.threads, seen.link,
                                       msg.retry, msg.requeued, watched, where))
                    waited = 0
                    while job not in self.grants and not self._stopped:
                        self.cond.wait(1.0)
                        waited += 1
                        if waited % wire.HEARTBEAT == 0:  # still queued: not a silent peer
                            wire.tell(conn, wire.Queued())
                    if job not in self.grants:
                        return  # the build is over: the launcher goes on without us
                    grant = self.grants[job]
                    rec = self._record(job)
                link.grant(wire.Grant(grant.lowmem, grant.alone, self.cfg.lowmem_flags,
                                      rec.estimate, rec.source, rec.where == "remote"))
                for line in f:
                    got = wire.decode(line)
                    if isinstance(got, wire.Report):
                        with self.cond:
                            self._step(Progress(job, got.cpu, got.rss))
                    elif isinstance(got, wire.Done):
                        result = got
                        break
            except (OSError, ValueError):
                pass  # the launcher went away or sent what is not a message: job over
            except Exception as exc:  # a thread's error must cost time, never stall
                with self.cond:
                    self._step(Fault(f"{type(exc).__name__}: {exc}"))
            finally:
                if job is not None:
                    self._finish(job, result, seen)

    def _record(self, job: str) -> JobRecord:
        return next(r for r in reversed(self.core.records) if r.id == job)

    def _finish(self, job: str, result: wire.Done | None, seen: Intake | None) -> None:
        """The job is over: tell the core, and the history what it measured."""
        r = result or wire.Done()
        # a cache hit (no compiler process under the cache) measured nothing
        hit = seen is not None and seen.cached and r.procs <= 1
        with self.cond:
            self.links.pop(job, None)
            self.grants.pop(job, None)
            self._step(Finished(job, r.rc, r.peak, r.cpu, r.seconds, r.paused, r.curve,
                                r.oom, r.requeued, r.measured_by, not hit))
            if seen is None or result is None:
                return
            if r.peak and r.rc == 0 and not hit:
                self.history.record(seen.key, seen.file, r.peak, r.seconds, cpu=r.cpu,
                                    curve=r.curve)
            elif r.oom and r.peak:  # at least this much: raise the estimate for next time
                estimate = self._record(job).estimate
                self.history.record(seen.key, seen.file,
                                    max(r.peak, int(estimate * self.tuning.oom_raise)), 0.0,
                                    oom=True)

    # -- what the build shows ---------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """What runs now, for live progress: jobs with their reserved memory (under the
        time model, the bound the policy allows each now)."""
        with self.cond:
            now = self.now()
            bounds = self.core.bounds(now)
            running = [(r, self.core.running[r.id]) for r in self.core.records
                       if r.id in self.core.running]
            return {"budget": self.cfg.budget, "waiting": len(self.core.waiting),
                    "reserved": sum(bounds.values()),
                    "running": [{"file": r.file, "reserve": r.reserve, "source": r.source,
                                 "bound": bounds[r.id], "paused": run.paused,
                                 "seconds": now - r.started} for r, run in running],
                    "done": sum(1 for r in self.core.records if r.ended)}

    def report(self) -> list[dict[str, Any]]:
        with self.cond:
            return [asdict(r) for r in self.core.records]
