"""The per-build memory broker: compile launchers ask it before they start.

A thread in the ``builder build`` process listens on a Unix socket.  Each launcher
connection is one job: ``acquire`` (the broker estimates the job and queues it),
a ``grant`` when :func:`admission.admit` says so, ``progress`` reports (CPU seconds and
RSS of the compiler's tree) while it runs, ``pause``/``resume`` commands from the
broker when :func:`guard.guard` says so, then ``done`` with the measured peak and
CPU time.  A scheduler thread re-runs guard and admission every ``tick`` while jobs
run, since under the time model a job can become admissible just because time
passed.  A dropped connection releases the job, so a killed compiler never leaks
its memory.  Every job is recorded (times, estimate, measured peak and CPU, OOM,
low-memory tier, pauses) for the build report, and measurements go to the history.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from builder.memory import backstop
from builder.memory.admission import admit
from builder.memory.estimate import DEVICE_SUFFIXES, Estimate, ramp_model
from builder.memory.guard import guard
from builder.memory.history import History
from builder.memory.intake import CACHES, BrokerConfig, Intake, intake
from builder.memory.jobgroup import anon_bytes
from builder.memory.jobs import LAUNCHER_BYTES, JobRecord, Learned, Live, fall, relearn
from builder.memory.policy import Job, Model, build_speed, envelope, released, sped_up
from builder.memory.remote import on_pool
from builder.memory.wire import HEARTBEAT, QUEUED, message, tell
from builder.util.scratch import private_dir, remove_socket

__all__ = ["CACHES", "Broker", "BrokerConfig"]


class Broker:
    def __init__(self, socket_path: Path, config: BrokerConfig) -> None:
        self.path = socket_path
        self.cfg = config
        self.model = config.model or ramp_model()
        self.history = History(Path(config.history_path))
        self.cond = threading.Condition()
        self.waiting: list[Job] = []
        self.running: dict[str, Live] = {}
        self.exclusive: set[str] = set()
        self.grants: dict[str, tuple[bool, bool]] = {}
        self.records: list[JobRecord] = []
        self.t0 = time.monotonic()
        self.wall0 = time.time()  # to place the jobs on the build's timeline
        self._n = 0
        self._shares: list[tuple[float, float]] = []  # (CPU, active seconds) of recent jobs
        #: estimate group → what its jobs measured in this build (:class:`Learned`)
        self.learned: dict[str, Learned] = {}
        self._estimates: dict[str, Estimate] = {}  # waiting job id → its first estimate
        #: the most the running jobs went faster than their curves in this build
        #: (policy.build_speed)
        self.speed = 1.0
        self._burst = 0.0  # when the first job arrived on an idle broker
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._ticker: threading.Thread | None = None
        self._stopped = False
        #: the build's memory cgroup, as its launchers name it (None: none, not watched)
        self.build_cgroup: Path | None = None
        self._used: list[tuple[float, int]] = []  # (time, bytes) of the last samples
        self.most_used = 0  # the most the build's cgroup held, as the backstop saw it
        #: the first error of the scheduling policy or the backstop ("": none); from then
        #: on the compiles go one at a time
        self.failure = ""
        self._watcher: threading.Thread | None = None

    def now(self) -> float:
        return time.monotonic() - self.t0

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
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._ticker.start()
        if self.cfg.backstop:
            self._watcher = threading.Thread(target=self._watch, daemon=True)
            self._watcher.start()

    def stop(self) -> None:
        with self.cond:
            self._stopped = True
            for live in self.running.values():
                if live.paused:  # never leave a compiler stopped
                    live.command("resume")
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
        """Re-run guard and admission every ``tick`` while jobs run: under the time model
        memory frees up with time, not only when a job ends."""
        with self.cond:
            while not self._stopped:
                if self.running or self.waiting:
                    self._schedule()
                self.cond.wait(self.model.tick)

    # -- one job --------------------------------------------------------------------

    def _estimate(self, msg: dict[str, Any]
                  ) -> tuple[JobRecord, Intake, float, tuple[float, ...]]:
        """The job's record, what its message says of it, and the CPU time and memory
        curve the time model uses for it (0 and (): none)."""
        job = intake(msg, self.cfg, self.history)
        est, where = on_pool(job.est, msg.get("dist"))  # a remote job: its local part
        # only this very compile's measured CPU time drives the time model: other flags,
        # recipe values and priors say nothing reliable about its speed — unless the
        # backstop watches the build's memory, which makes a wrong guess cost time only
        cpu = est.cpu if est.source == "history" and self.cfg.time_model else 0.0
        curve = est.curve if cpu else ()
        # every job tells the backstop which cgroup to watch, measured or not; speculation
        # (admitting a never-measured job on its expected memory) needs that watch too
        watched = self._watched(msg) and not cpu and self.cfg.speculate
        # nvcc's memory comes in one cicc peak per arch, early: the ramp does not bound it
        spec = watched and est.seconds > 0 and not job.rel.endswith(DEVICE_SUFFIXES)
        if watched:
            cpu, est = (est.seconds if spec else 0.0), replace(est, reserve=est.peak)
        with self.cond:
            self._n += 1
            n = self._n
        rec = JobRecord(f"{n}:{job.rel}", job.rel, est.peak, est.reserve, est.source,
                        self.now(), retry=bool(msg.get("retry")), model_cpu=cpu,
                        model_curve=bool(curve), family=est.family,
                        group="" if est.source.startswith("history") else est.group,
                        speculative=spec, kind="link" if job.link else "compile",
                        rerun=bool(msg.get("requeued")), where=where)
        if rec.group:
            self._estimates[rec.id] = est
        return rec, job, cpu, curve

    def _model(self) -> Model:
        """The time model now: thinner allowances while the backstop watches, tightened
        for jobs seen running ahead of their curves (:func:`policy.sped_up`)."""
        model = self.model
        if self.build_cgroup is not None:
            model = replace(model, fast=max(model.fast, model.watched_fast))
        return sped_up(model, self.speed)

    def _watched(self, msg: dict[str, Any]) -> bool:
        """Whether the backstop watches this job's build cgroup, learnt from the first
        launcher that names one — whatever its estimate: a history can be wrong too (other
        headers, another compiler), and only the watch stops the kernel's OOM killer."""
        if not self.cfg.backstop:
            return False
        group = str(msg.get("build_cgroup", ""))
        with self.cond:
            if self.build_cgroup is None and group and anon_bytes(Path(group)) > 0:
                self.build_cgroup = Path(group)
            return self.build_cgroup is not None and str(self.build_cgroup) == group

    def _share(self) -> float:
        """CPU share per thread of the jobs that ended last: a new job's expected speed
        (its memory bound assumes full speed anyway)."""
        cpu = sum(c for c, _ in self._shares)
        active = sum(a for _, a in self._shares)
        return min(1.0, max(0.05, cpu / active)) if cpu > 1.0 and active > 0 else 1.0

    def _overhead(self) -> int:
        return LAUNCHER_BYTES * (len(self.waiting) + len(self.running))

    def _schedule(self) -> None:
        """Called with the condition held: pause/resume what the guard says, then start
        whatever the policy admits — or, should the policy ever fail, one job at a time,
        so that a bug in it costs time and never stalls the build."""
        if not self.failure:
            try:
                self._by_policy()
                return
            except Exception as exc:  # any failure: the build must go on
                self._failed(exc)
        if not self.running and self.waiting:
            job = min(self.waiting, key=lambda j: j.order)
            self.waiting.remove(job)
            rec = next(r for r in reversed(self.records) if r.id == job.id)
            self.running[job.id] = Live(rec, 0.0, job.threads, self.now())
            self.grants[job.id] = (True, False)
        self.cond.notify_all()

    def _failed(self, exc: Exception) -> None:
        """Called with the condition held: keep the first error, resume every stopped job
        (nothing stays stopped by a scheduler that failed); one at a time from now on."""
        self.failure = self.failure or f"{type(exc).__name__}: {exc}"
        for live in self.running.values():
            live.go(self.now())

    def _by_policy(self) -> None:
        now = self.now()
        view = {i: live.view(now) for i, live in self.running.items()}
        self.speed = max(self.speed, build_speed(view.values()))
        model = self._model()
        for i, live in self.running.items():  # why jobs count at their peaks, for the report
            live.account(envelope(view[i], now, model), now)
        if self.cfg.pause and view:
            paused = guard(view, self.cfg.budget, now, model, self._overhead())
            for i, live in self.running.items():
                if i in paused:
                    live.stop(now)
                elif not live.held:  # the backstop's pauses are the backstop's to end
                    live.go(now)
            view = {i: live.view(now) for i, live in self.running.items()}
        if self.cfg.learn:
            self._learn()
        if not self.running and len(self.waiting) < self.cfg.slots and \
                now - self._burst < self.cfg.settle:
            return  # the rest of ninja's burst is on its way
        for g in admit(self.waiting, view, self.cfg.budget, self.cfg.slots,
                       frozenset(self.exclusive), now, model, self._overhead()):
            self.waiting.remove(g.job)
            rec = next(r for r in reversed(self.records) if r.id == g.job.id)
            self.running[g.job.id] = Live(rec, g.job.seconds, g.job.threads, now,
                                          g.job.curve, g.job.span)
            self.grants[g.job.id] = (g.alone, g.lowmem)
        self.cond.notify_all()

    def _watch(self) -> None:
        """The backstop's loop: the build cgroup's memory every ``backstop_period``."""
        while True:
            with self.cond:
                if self._stopped:
                    return
                group = self.build_cgroup
            if group is not None:
                try:
                    self._react(anon_bytes(group))
                except Exception as exc:  # never leave a job frozen
                    with self.cond:
                        self._failed(exc)
                    return
            time.sleep(self.cfg.backstop_period)

    def _react(self, used: int) -> None:
        """Freeze, thaw or requeue as :func:`backstop.react` says for ``used`` bytes."""
        now = self.now()
        self._used = [*((t, u) for t, u in self._used if now - t <= 0.3), (now, used)]
        t0, u0 = self._used[0]
        rate = (used - u0) / (now - t0) if now - t0 > 0.02 else 0.0
        with self.cond:
            self.most_used = max(self.most_used, used)
            dying = any(live.rec.requeued for live in self.running.values())
            views = [backstop.JobView(i, live.started, self._expected(live, now), live.rss,
                                      live.paused, live.held)
                     for i, live in self.running.items()
                     if live.granted and not live.rec.requeued]
            act = backstop.react(views, used, rate, self.cfg.budget)
            for i in act.freeze:
                self.running[i].stop(now, held=True)
            if act.freeze:  # what grew before the freeze says nothing of what grows now
                self._used = [(now, used)]
            for i in act.thaw:
                self.running[i].go(now)
            for i in act.requeue if not dying else ():  # one at a time: wait for its memory
                live = self.running[i]
                live.rec.requeued = True
                live.command("requeue")
            if act.thaw:
                self._schedule()

    def _expected(self, live: Live, now: float) -> int:
        """The peak a running job is expected to reach: its reservation, or what its
        siblings reached, or — once it holds more than either — a quarter more than now;
        for a job past its single peak, what its curve holds after it (``released``)."""
        after = released(live.view(now))
        if after is not None:
            return int(after)
        top = max([live.rec.reserve, *(self.learned[g].peak for g in live.rec.groups
                                       if g in self.learned)])
        return top if live.rss < top else live.rss * 5 // 4

    def _learn(self) -> None:
        """Re-estimate waiting jobs from what their group measured in this build
        (:func:`relearn`: a cold build's first TU of a glob tells what its siblings will
        need); tell running jobs never measured what their siblings held after their
        peaks or, until one ended, what their prior says (``jobs.fall``, for
        ``policy.released``)."""
        holding: dict[str, int] = {}
        for live in self.running.values():
            for g in live.rec.groups:
                holding[g] = max(holding.get(g, 0), live.rss)
            if not live.rec.source.startswith("history"):  # not measured itself
                live.fall = fall(live.rec, self.learned, self._estimates.get(live.rec.id))
        for i, job in enumerate(self.waiting):
            est = self._estimates.get(job.id)
            new = relearn(est, self.learned, holding) if est is not None else None
            if new is None:
                continue
            rec = next(r for r in reversed(self.records) if r.id == job.id)
            cpu = new.cpu if self.cfg.time_model else 0.0
            curve, span = (new.curve, new.span) if cpu else ((), 0.0)
            again = replace(job, estimate=new.reserve, seconds=cpu, curve=curve, span=span)
            if rec.retry or again == job:
                continue
            rec.estimate, rec.reserve, rec.source = new.peak, new.reserve, new.source
            rec.model_cpu, rec.model_curve = cpu, bool(curve)
            self.waiting[i] = again

    def _serve(self, conn: socket.socket) -> None:
        rec: JobRecord | None = None
        with conn, conn.makefile("rb") as f:
            try:
                line = f.readline()
                msg = message(line) if line else {}
                if msg.get("op") != "acquire":
                    return
                tell(conn, QUEUED)  # the launcher bounds its wait for this answer
                rec, seen, cpu, curve = self._estimate(msg)
                with self.cond:
                    job = Job(rec.id, rec.reserve, self._n, cpu, seen.threads, self._share(),
                              curve, link=seen.link, speculative=rec.speculative)
                    self.records.append(rec)
                    if rec.retry:
                        self.exclusive.add(rec.id)
                    if not self.running and not self.waiting:
                        self._burst = self.now()
                    self.waiting.append(job)
                    self._schedule()
                    waited = 0
                    while rec.id not in self.grants and not self._stopped:
                        self.cond.wait(1.0)
                        waited += 1
                        if waited % HEARTBEAT == 0:  # still queued: not a silent peer
                            tell(conn, QUEUED)
                    if rec.id not in self.grants:
                        return  # the build is over: the launcher goes on without us
                    rec.alone, rec.lowmem = self.grants[rec.id]
                    live = self.running[rec.id]
                rec.started = self.now()
                reply = {"op": "grant", "lowmem": rec.lowmem or rec.retry, "alone": rec.alone,
                         "flags": list(self.cfg.lowmem_flags), "estimate": rec.estimate,
                         "source": rec.source, "remote": rec.where == "remote"}
                with live.lock:
                    conn.sendall((json.dumps(reply) + "\n").encode())
                    live.conn, live.granted = conn, True
                    if live.paused:  # paused before the grant went out
                        conn.sendall(b'{"op": "pause"}\n')
                result: dict[str, Any] = {}
                for line in f:
                    msg = message(line)
                    if msg.get("op") == "progress":
                        with self.cond:
                            live.cpu = float(msg.get("cpu", 0.0))
                            live.cpu_active = live.active(self.now())
                            live.rss = int(msg.get("rss", 0))
                            live.top = max(live.top, live.rss)
                    elif msg.get("op") == "done":
                        result = msg
                        break
                rec.requeued = rec.requeued or bool(result.get("requeued"))
                rec.measured_by = str(result.get("measured_by", ""))
                rec.peak = int(result.get("peak", 0))
                rec.rc = result.get("rc")
                rec.oom = bool(result.get("oom"))
                rec.cpu = float(result.get("cpu", 0.0))
                rec.paused = float(result.get("paused", 0.0))
                measured = tuple(float(x) for x in result.get("curve", ()))
                # a cache hit (no compiler process under the cache) measured nothing
                hit = seen.cached and int(result.get("procs", 2)) <= 1
                if rec.peak and rec.rc == 0 and not hit:
                    with self.cond:
                        if not (rec.lowmem or rec.alone or rec.retry):
                            for g in rec.groups:
                                got = self.learned.get(g, Learned())
                                self.learned[g] = got.add(rec.peak, rec.cpu, measured)
                        self.history.record(seen.key, seen.file, rec.peak,
                                            float(result.get("seconds", 0.0)), cpu=rec.cpu,
                                            curve=measured)
                        active = float(result.get("seconds", 0.0)) - rec.paused
                        if rec.cpu > 0.5 and active > 0:
                            self._shares = [*self._shares[-7:], (rec.cpu / seen.threads, active)]
                elif rec.oom and rec.peak:
                    with self.cond:  # at least this much: raise the estimate for next time
                        self.history.record(seen.key, seen.file,
                                            max(rec.peak, rec.estimate * 2), 0.0, oom=True)
            except (OSError, ValueError):
                pass  # the launcher went away or sent what is not a message: job over
            except Exception as exc:  # a thread's error must cost time, never stall
                with self.cond:
                    self._failed(exc)
            finally:
                if rec is not None:
                    rec.ended = self.now()
                    with self.cond:
                        self.running.pop(rec.id, None)
                        self.grants.pop(rec.id, None)
                        self.exclusive.discard(rec.id)
                        self._estimates.pop(rec.id, None)
                        self._schedule()

    def snapshot(self) -> dict[str, Any]:
        """What runs now, for live progress: jobs with their reserved memory (under the
        time model, the bound the policy allows each now)."""
        with self.cond:
            now = self.now()
            model = self._model()
            bounds = {i: int(envelope(live.view(now), now, model).ahead(now))
                      for i, live in self.running.items()}
            running = [(r, self.running[r.id]) for r in self.records
                       if r.started and not r.ended and r.id in self.running]
            return {"budget": self.cfg.budget, "waiting": len(self.waiting),
                    "reserved": sum(bounds.values()),
                    "running": [{"file": r.file, "reserve": r.reserve, "source": r.source,
                                 "bound": bounds[r.id], "paused": live.paused,
                                 "seconds": now - r.started} for r, live in running],
                    "done": sum(1 for r in self.records if r.ended)}

    def report(self) -> list[dict[str, Any]]:
        with self.cond:
            return [asdict(r) for r in self.records]
