"""Compiler launcher: ``CMAKE_<LANG>_COMPILER_LAUNCHER=python;-m;builder.memory.launcher``.

Before exec'ing the compiler it asks the build's broker (``$BUILDER_BROKER``) for
memory, then runs the compiler, measuring the peak anonymous RSS, the memory curve
and the CPU time of its whole process tree (nvcc and g++ spawn cicc/cc1plus:
``ru_maxrss`` of the driver sees none of it).  While the compiler runs it reports
its CPU seconds and RSS to the broker (the time model's progress signal,
``policy.py``) and obeys the broker's ``pause`` and ``resume`` (SIGSTOP/SIGCONT to
the whole tree: a stopped compiler keeps its memory but stops growing); whatever
happens, it never leaves the tree stopped.  An out-of-memory kill — signal 9, or
g++'s "Killed signal terminated program cc1plus" with exit status 1 — is retried
once, alone, with the recipe's low-memory flags.  Without a broker (e.g. ``ninja``
run by hand) it just runs the compiler.

A launcher started inside a launched compile (``$BUILDER_LAUNCHED``: a compiler wrapper
that nvcc runs as its host compiler, or CMake run with both ``CXX`` naming a wrapper and
``CMAKE_CXX_COMPILER_LAUNCHER``) runs its compiler directly: the job was admitted once,
and its memory is measured as part of the outer job's process tree.  It leaves out its
compiler cache too: the outer job went through one (or was kept off the pool on purpose).

A compile that writes to something other than a regular file — ``-o /dev/null`` (xmake's
nvcc flag checks), a FIFO, a link to one — runs without its compiler cache: on a cache hit
sccache writes its outputs to a temporary file beside them and renames it over them, which
as root replaces ``/dev/null`` itself with a regular file (:func:`special_output`).
"""

from __future__ import annotations

import bisect
import io
import math
import os
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from builder.memory import depfiles, jobgroup, wire, wrappers
from builder.memory.commands import job_of, output_of, source_of, special_output
from builder.memory.jobgroup import JobGroup
from builder.memory.proctree import signal_tree, tree_sample
from builder.memory.remote import POLL, remote_slots
from builder.memory.suffixes import SOURCE_SUFFIXES
from builder.memory.tuning import TUNING
from builder.memory.wire import BrokerSilent, Channel, ask
from builder.util.scratch import private_tmp, remove_orphans

__all__ = [
    "CACHES",
    "JOB_TMP",
    "LAUNCHED",
    "OOM_MARKERS",
    "SOURCE_SUFFIXES",
    "Channel",
    "Measured",
    "curve_of",
    "is_oom",
    "main",
    "output_of",
    "remove_stale_job_dirs",
    "run_measured",
    "source_of",
    "special_output",
]

#: set in a launched compiler's environment: launchers below it do not ask again
LAUNCHED = "BUILDER_LAUNCHED"
#: the compiler caches a launcher chain may hold (``pysteps.launcher_chain``)
CACHES = ("sccache", "ccache")

OOM_MARKERS = (b"Killed signal terminated program", b"virtual memory exhausted",
               b"out of memory allocating", b"std::bad_alloc", b"Cannot allocate memory",
               b"out of memory")


def curve_of(samples: list[tuple[float, int]], cpu: float, points: int = TUNING.curve_points
             ) -> tuple[float, ...]:
    """A compile's memory profile from its ``(CPU seconds, bytes)`` samples: ``points``
    shares of its peak, the k-th the most it held while its progress was within the k-th
    of ``points`` equal parts of its CPU time — counting the samples on both sides of that
    part, since memory may have changed between samples.  Not a running maximum: nvcc's
    memory falls after its cicc runs (5.8 GB for two archs, then 1.3 GB in the host
    compile that takes its last fifth), which lets admission count a job past its peak
    at what it still holds (``policy.released``).  () when there are too few samples to
    say (a short compile)."""
    peak = max((b for _, b in samples), default=0)
    total = max([cpu, *(c for c, _ in samples)])
    if len(samples) < 2 * points or peak <= 0 or total <= 0:
        return ()
    ordered = sorted(samples)
    cpus = [c for c, _ in ordered]
    out: list[float] = []
    for k in range(points):
        first = max(0, bisect.bisect_right(cpus, k / points * total) - 1)
        last = min(len(ordered) - 1, bisect.bisect_left(cpus, (k + 1) / points * total))
        top = max(b for _, b in ordered[first:last + 1])
        out.append(min(1.0, math.ceil(top / peak * 1000) / 1000))
    return tuple(out)


@dataclass
class Measured:
    rc: int
    peak: int  # bytes: its cgroup's kernel peak, else the largest tree sample (or ru_maxrss)
    seconds: float  # wall
    cpu: float  # CPU seconds of the whole tree
    err: bytes  # the end of stderr
    paused: float = 0.0  # seconds spent stopped by the broker
    procs: int = 1  # most processes seen in the tree (1 for a compiler-cache hit)
    curve: tuple[float, ...] = ()  # its memory curve (:func:`curve_at`)
    requeued: bool = False  # the broker had it killed to make room: run it again
    oom_kills: int = 0  # processes of its cgroup the kernel killed out of memory


class _Control:
    """Stops, continues and kills one compile: its cgroup where it has one that can
    freeze (every process at once), else signals to its process tree."""

    def __init__(self, proc: subprocess.Popen[bytes], group: JobGroup | None) -> None:
        self.proc, self.group = proc, group
        self.paused_at, self.paused_total, self.requeued = 0.0, 0.0, False

    def pause(self) -> None:
        if self.paused_at:
            return
        if not (self.group is not None and self.group.can_freeze and self.group.freeze(True)):
            signal_tree(self.proc.pid, signal.SIGSTOP)
        self.paused_at = time.monotonic()

    def resume(self) -> None:
        if not self.paused_at:
            return
        if self.group is not None and self.group.can_freeze:
            self.group.freeze(False)
        signal_tree(self.proc.pid, signal.SIGCONT)  # harmless after a thaw
        self.paused_total += time.monotonic() - self.paused_at
        self.paused_at = 0.0

    def kill(self) -> None:
        """The broker's last resort: this job's work is lost, nothing else."""
        self.requeued = True
        if self.group is not None:
            self.group.kill()
        signal_tree(self.proc.pid, signal.SIGKILL)
        signal_tree(self.proc.pid, signal.SIGCONT)
        self.paused_at = 0.0


def _spawn(argv: list[str], group: JobGroup | None, tmp: str | None
           ) -> subprocess.Popen[bytes]:
    env = {**os.environ, LAUNCHED: "1", **({"TMPDIR": tmp} if tmp else {})}
    if group is not None:
        try:
            # no other thread runs yet in the launcher (the stderr pump starts after)
            return subprocess.Popen(argv, stderr=subprocess.PIPE, env=env,
                                    preexec_fn=group.enter)  # noqa: PLW1509
        except subprocess.SubprocessError:
            pass  # the leaf could not be joined: run it outside, measured by sampling
    return subprocess.Popen(argv, stderr=subprocess.PIPE, env=env)


def run_measured(argv: list[str], interval: float = TUNING.sample_period,
                 channel: Channel | None = None, report: float = TUNING.report_period,
                 group: JobGroup | None = None) -> Measured:
    """Run ``argv``, passing its output through as it comes, sampling its process tree
    every ``interval``; with a ``channel``, report progress every ``report`` seconds and
    obey pause/resume/requeue; in ``group`` (its own cgroup) where one was made."""
    # the compiler's temporary files (gcc's .s, nvcc's tmpxft_*, clang's offload bundles)
    # go to a folder of this job's own, removed when it ends: a compile killed for memory,
    # paused and requeued, or failing left them in /tmp for ever.  Not through sccache: the
    # server its first client starts would keep that TMPDIR after the folder is gone.
    with private_tmp(f"{JOB_TMP}{os.getpid()}-", Path(argv[0]).name != "sccache") as tmp:
        return _measure(argv, interval, channel, report, group, tmp)


#: a job's temporary folder is ``<tmp>/builder-job-<launcher pid>-XXXXXXXX``
JOB_TMP = "builder-job-"


def remove_stale_job_dirs(root: Path | None = None) -> None:
    """Remove the temporary folders of jobs whose launcher is gone (killed with SIGKILL, it
    could not remove its own)."""
    remove_orphans(root or Path(tempfile.gettempdir()), JOB_TMP, stat.S_ISDIR)


def _measure(argv: list[str], interval: float, channel: Channel | None, report: float,
             group: JobGroup | None, tmp: str | None) -> Measured:
    start = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = _spawn(argv, group, tmp)
    ctl = _Control(proc, group)
    peak = 0
    err = bytearray()

    def pump() -> None:
        # stderr=PIPE with the default buffering is always a BufferedReader
        stream = proc.stderr
        assert isinstance(stream, io.BufferedReader)
        passing = True  # until our own stderr fails (ninja gone): then only drained
        for chunk in iter(lambda: stream.read1(65536), b""):
            if passing:
                try:
                    sys.stderr.buffer.write(chunk)
                    sys.stderr.buffer.flush()
                except OSError:
                    passing = False
            err.extend(chunk)
            del err[:-8192]

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    reported, procs = 0.0, 1
    samples: list[tuple[float, int]] = []
    try:
        while proc.poll() is None:
            rss, cpu, n = tree_sample(proc.pid)
            peak, procs = max(peak, rss), max(procs, n)
            samples.append((cpu, rss))
            if channel is None:
                time.sleep(interval)
                continue
            now = time.monotonic()
            if now - reported >= report:
                channel.send(wire.Report(cpu, rss, bool(ctl.paused_at)))
                reported = now
            for msg in channel.poll(interval):
                if isinstance(msg, wire.Pause) and not ctl.paused_at:
                    ctl.pause()
                    # the exact CPU time it stopped at
                    channel.send(wire.Report(tree_sample(proc.pid)[1], rss, True))
                elif isinstance(msg, wire.Resume):
                    ctl.resume()
                elif isinstance(msg, wire.Requeue):
                    ctl.kill()
            if channel.closed and ctl.paused_at:  # the broker went away: never stay stopped
                ctl.resume()
    finally:
        if ctl.paused_at and proc.poll() is None:
            ctl.resume()
    proc.wait()
    t.join()
    if proc.stderr is not None:
        proc.stderr.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    kills = 0
    if group is not None:
        peak, kills = max(peak, group.peak()), group.oom_kills()
    elif len(samples) < 3:
        # over before sampling saw it (a sample can land between fork and exec): the
        # largest waited-for descendant's RSS (KiB) is the better measure
        peak = max(peak, after.ru_maxrss << 10)
    return Measured(proc.returncode, peak, time.monotonic() - start, cpu, bytes(err),
                    ctl.paused_total, procs, curve_of(samples, cpu), ctl.requeued, kills)


def is_oom(rc: int, err: bytes) -> bool:
    return rc in (-9, 137) or any(m in err for m in OOM_MARKERS)


def _done(ch: Channel, msg: wire.Done) -> None:
    ch.send(msg)
    ch.close()


def _exit_on(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _direct(argv: list[str], wait: bool) -> int:
    """The command without admission: exec'd (it becomes this process), or run and waited
    for when the launcher still has work after it."""
    if not wait:  # a launcher below this compile runs its compiler directly
        os.execvpe(argv[0], argv, {**os.environ, LAUNCHED: "1"})
    try:
        rc = subprocess.call(argv, env={**os.environ, LAUNCHED: "1"})
    except OSError as exc:
        print(f"builder: cannot run {argv[0]}: {exc}", file=sys.stderr)
        return 127
    return 128 - rc if rc < 0 else rc


def main(argv: list[str]) -> int:
    if not argv or argv == ["--link"]:
        print("usage: python -m builder.memory.launcher [--link] COMPILER ARGS…",
              file=sys.stderr)
        return 2
    argv, src, kind = job_of(argv)
    if len(argv) > 1 and Path(argv[0]).name in CACHES:
        if os.environ.get(LAUNCHED):
            # the outer job chose its compiler cache and its place (here or the pool): a
            # second sccache inside it would take the wrapper for an unknown compiler, or
            # send a job admitted here to the pool
            argv = argv[1:]
        elif special_output(argv) is not None:
            # the compiler writes into it; the cache's hit would rename a file over it
            argv = [wrappers.real_compiler(argv[1]) or argv[1], *argv[2:]]
        else:  # the cache gets the compiler a wrapper of builder's stands for
            argv = [argv[0], wrappers.real_compiler(argv[1]) or argv[1], *argv[2:]]
    # the compile's reads are in its depfile; the launcher's own are builder's
    os.environ.pop(depfiles.READS_DIR, None)
    dep, folder, cwd = None, os.environ.get(depfiles.DEPFILE_DIR, ""), os.getcwd()
    if folder and kind == "compile" and not os.environ.get(LAUNCHED):
        dep = depfiles.with_depfile(argv, folder, cwd)
        if dep is not None:
            depfiles.start(dep, folder, cwd)
            argv = list(dep.argv)
    rc = _admitted(argv, src, kind, dep is not None and bool(dep.own))
    if dep is not None:
        depfiles.finish(dep, folder, cwd, rc)
    return rc


def _admitted(argv: list[str], src: str | None, kind: str, wait: bool) -> int:
    """Run the job under the broker's admission (without one: exec'd, or — ``wait``: the
    launcher has work left after it — run and waited for)."""
    broker = os.environ.get("BUILDER_BROKER", "")
    if not broker or not Path(broker).exists() or src is None or os.environ.get(LAUNCHED):
        return _direct(argv, wait)
    file = os.path.abspath(src)
    retry = requeued = False
    # a stop request while the broker has the compiler paused: resume it on the way out
    # (run_measured's finally), or it would stay stopped, holding its memory
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on)
    slots, held, index = remote_slots(argv, kind), -1, -1
    while True:
        if slots is not None:
            # a compile through sccache goes to the distributed pool, once a remote slot is
            # free, when the broker finds its predicted peak fits the pool (remote.py); the
            # slot is this process's until the next attempt or its exit (the kernel frees it)
            slots.release(held)
            held, index = (-1, -1) if retry else \
                slots.acquire(0 if slots.overflow else POLL)
        group = jobgroup.make()
        try:
            conn, granted = ask(broker, wire.Acquire(
                file, tuple(argv), os.getcwd(), retry, requeued, kind,
                str(group.path) if group else "", os.environ.get(jobgroup.ENV, ""),
                *((slots.pool_file, index) if slots is not None and held >= 0 else ())))
        except OSError as exc:
            if group is not None:
                group.remove()
            if isinstance(exc, BrokerSilent):  # a wait with a bound, said
                print(f"builder: the memory broker at {broker} is silent ({exc}); running "
                      f"{src} without admission control (BUILDER_BROKER_TIMEOUT sets the "
                      f"wait)", file=sys.stderr, flush=True)
            return _direct(argv, wait)  # the broker went away: behave like no launcher
        grant = granted or wire.Grant()  # the broker went away: as without one
        # not admitted to the pool: the compiler itself, without sccache (which would send
        # it there all the same)
        cmd = list(argv if slots is None or grant.remote else argv[1:])
        if slots is not None and not grant.remote:
            slots.release(held)  # too heavy for the pool: its slot is another job's
            held = -1
        elif slots is not None:
            # sccache sends the client's environment with a remote job: the build server's
            # sandbox has no such temporary folder, and ptxas fails there without one
            os.environ.pop("TMPDIR", None)
        if grant.lowmem:
            # appended last so that they override (-O1 after -O2, -g0 after -g)
            cmd += grant.flags
        try:
            m = run_measured(cmd, channel=conn, group=group)
        finally:
            if group is not None:
                group.remove()
        rc, peak = m.rc, m.peak
        oom = not m.requeued and rc != 0 and (m.oom_kills > 0 or is_oom(rc, m.err))
        _done(conn, wire.Done(rc, peak, m.seconds, m.cpu, m.paused, m.procs, oom, m.curve,
                              m.requeued, "cgroup" if group else "tree"))
        if m.requeued:
            print(f"builder: {src} was stopped to keep the build within its memory budget; "
                  "running it again", file=sys.stderr)
            requeued = True
            continue
        if oom and not retry:
            print(f"builder: {src} was killed, most likely out of memory (peak {peak >> 20} "
                  f"MiB); retrying alone with the low-memory flags", file=sys.stderr)
            retry = True
            continue
        if oom:
            print(f"builder: {src} was killed again while running alone with the low-memory "
                  f"flags (peak {peak >> 20} MiB): it needs more memory than the budget "
                  f"allows; raise --memory-budget, add swap, or enable unity/PCH off for it",
                  file=sys.stderr)
        return 1 if rc < 0 else rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
