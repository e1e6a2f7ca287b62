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
and its memory is measured as part of the outer job's process tree.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CHILDREN_FILES",
    "CURVE_POINTS",
    "LAUNCHED",
    "OOM_MARKERS",
    "PAGE",
    "SOURCE_SUFFIXES",
    "TICKS",
    "Channel",
    "Measured",
    "curve_of",
    "descendants",
    "is_oom",
    "main",
    "run_measured",
    "signal_tree",
    "source_of",
    "tree_sample",
]

#: set in a launched compiler's environment: launchers below it do not ask again
LAUNCHED = "BUILDER_LAUNCHED"

SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".cu", ".hip", ".m", ".mm")
OOM_MARKERS = (b"Killed signal terminated program", b"virtual memory exhausted",
               b"out of memory allocating", b"std::bad_alloc", b"Cannot allocate memory",
               b"out of memory")


def source_of(argv: list[str]) -> str | None:
    """The file a compile command compiles; None for commands that are no compile job:
    links, and preprocessing only (``-E``: a compiler cache's first pass, ~0.1 GB),
    which would otherwise teach the history a tiny peak for the file."""
    if "-E" in argv[1:]:
        return None
    for i, a in enumerate(argv[:-1]):
        if a == "-c" and argv[i + 1].endswith(SOURCE_SUFFIXES):
            return argv[i + 1]
    cands = [a for a in argv[1:] if a.endswith(SOURCE_SUFFIXES) and not a.startswith("-")]
    return cands[-1] if cands else None


TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
CURVE_POINTS = 20


def _table() -> dict[int, tuple[int, int]]:
    """pid → (parent pid, CPU clock ticks used by it and its reaped children)."""
    procs: dict[int, tuple[int, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
            fields = stat[stat.rindex(b")") + 2:].split()
            # after the name: state ppid … utime(11) stime cutime cstime
            procs[int(entry.name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
        except (OSError, ValueError, IndexError):
            continue
    return procs


def _tree(root: int, procs: dict[int, tuple[int, int]]) -> list[int]:
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(kids.get(pid, ()))
    return out


#: the kernel lists each task's children (CONFIG_PROC_CHILDREN, Linux ≥ 3.5): walking the
#: tree through them reads a few files per sample instead of every process's ``stat`` —
#: about 0.3 ms instead of 1.5–2.5 ms with 80 processes here, and it does not grow with the
#: machine's process count (a sample every 0.1 s per running compile)
CHILDREN_FILES = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _kids(pid: int) -> list[int]:
    """Children of every thread of ``pid`` (a child belongs to the thread that forked it)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out  # gone
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
    return out


def descendants(root: int) -> list[int]:
    """``root`` and its descendants, parents first."""
    if not CHILDREN_FILES:
        return _tree(root, _table())
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(_kids(pid))
    return out


def _ticks(pid: int) -> int:
    """CPU clock ticks used by ``pid`` and its reaped children (0: gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return sum(int(x) for x in stat[stat.rindex(b")") + 2:].split()[11:15])
    except (OSError, ValueError, IndexError):
        return 0


def _rss(pid: int) -> int:
    """Anonymous resident memory of ``pid``: resident less file-backed and shared pages
    (``statm`` fields 2 and 3).  That is what a memory cgroup cannot reclaim and what
    runs it out of memory; the compiler's own binary and libraries are file pages,
    shared by every job and reclaimable, which the budget's reserve covers once."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            fields = f.read().split()
        return max(0, int(fields[1]) - int(fields[2])) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def tree_sample(root: int) -> tuple[int, float, int]:
    """(anonymous resident bytes, CPU seconds so far, processes) of ``root`` and its
    descendants."""
    pids = descendants(root)
    return sum(_rss(p) for p in pids), sum(_ticks(p) for p in pids) / TICKS, len(pids)


def curve_of(samples: list[tuple[float, int]], cpu: float, points: int = CURVE_POINTS
             ) -> tuple[float, ...]:
    """A compile's memory curve from its ``(CPU seconds, bytes)`` samples: ``points``
    shares of its peak, the k-th the most it held up to progress (k + 1) / points —
    counting the first sample at or past that point, since memory may have grown
    between samples.  () when there are too few samples to say (a short compile)."""
    peak = max((b for _, b in samples), default=0)
    total = max([cpu, *(c for c, _ in samples)])
    if len(samples) < 2 * points or peak <= 0 or total <= 0:
        return ()
    out: list[float] = []
    top, i = 0, 0
    for k in range(points):
        edge = (k + 1) / points * total
        while i < len(samples):
            top = max(top, samples[i][1])
            i += 1
            if samples[i - 1][0] >= edge:
                break
        out.append(min(1.0, math.ceil(top / peak * 1000) / 1000))
    out[-1] = 1.0
    return tuple(out)


def signal_tree(root: int, sig: int) -> None:
    """Send ``sig`` to ``root`` and its descendants, parents first; for SIGSTOP again
    until no new process appears (one may have been forked meanwhile)."""
    done: set[int] = set()
    while True:
        todo = [p for p in descendants(root) if p not in done]
        if not todo:
            return
        for pid in todo:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
            done.add(pid)
        if sig != signal.SIGSTOP:
            return


class Channel:
    """The launcher's side of its broker connection: JSON lines both ways; ``poll``
    waits up to a timeout for the broker's commands."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.inbox: list[dict[str, object]] = []
        self.closed = False

    def send(self, msg: dict[str, object]) -> None:
        try:
            self.sock.sendall((json.dumps(msg) + "\n").encode())
        except OSError:
            self.closed = True

    def _receive(self, timeout: float | None) -> None:
        """Wait up to ``timeout`` (None: for ever) for data; queue the complete lines."""
        try:
            if timeout is not None and not select.select([self.sock], [], [], timeout)[0]:
                return
            data = self.sock.recv(65536)
        except (OSError, ValueError):
            data = b""
        if not data:
            self.closed = True
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            with contextlib.suppress(ValueError):
                self.inbox.append(json.loads(line))

    def poll(self, timeout: float) -> list[dict[str, object]]:
        """Commands received within ``timeout`` seconds (none once the broker is gone)."""
        if self.closed:
            time.sleep(timeout)
        elif not self.inbox:
            self._receive(timeout)
        out, self.inbox = self.inbox, []
        return out

    def read(self) -> dict[str, object]:
        """The next message, waiting for it ({} when the broker is gone)."""
        while not self.inbox and not self.closed:
            self._receive(None)
        return self.inbox.pop(0) if self.inbox else {}

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


@dataclass
class Measured:
    rc: int
    peak: int  # bytes, the tree's largest sampled anonymous RSS
    seconds: float  # wall
    cpu: float  # CPU seconds of the whole tree
    err: bytes  # the end of stderr
    paused: float = 0.0  # seconds spent stopped by the broker
    procs: int = 1  # most processes seen in the tree (1 for a compiler-cache hit)
    curve: tuple[float, ...] = ()  # its memory curve (:func:`curve_of`)


def run_measured(argv: list[str], interval: float = 0.1, channel: Channel | None = None,
                 report: float = 0.5) -> Measured:
    """Run ``argv``, passing its output through as it comes, sampling its process tree
    every ``interval``; with a ``channel``, report progress every ``report`` seconds and
    obey pause/resume."""
    start = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, env={**os.environ, LAUNCHED: "1"})
    peak = 0
    err = bytearray()

    def pump() -> None:
        # stderr=PIPE with the default buffering is always a BufferedReader
        stream = proc.stderr
        assert isinstance(stream, io.BufferedReader)
        for chunk in iter(lambda: stream.read1(65536), b""):
            sys.stderr.buffer.write(chunk)
            sys.stderr.buffer.flush()
            err.extend(chunk)
            del err[:-8192]

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    paused_at, paused_total, reported, procs = 0.0, 0.0, 0.0, 1
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
                channel.send({"op": "progress", "cpu": cpu, "rss": rss,
                              "paused": bool(paused_at)})
                reported = now
            for msg in channel.poll(interval):
                if msg.get("op") == "pause" and not paused_at:
                    signal_tree(proc.pid, signal.SIGSTOP)
                    paused_at = time.monotonic()
                    # the exact CPU time it stopped at
                    channel.send({"op": "progress", "cpu": tree_sample(proc.pid)[1],
                                  "rss": rss, "paused": True})
                elif msg.get("op") == "resume" and paused_at:
                    signal_tree(proc.pid, signal.SIGCONT)
                    paused_total += time.monotonic() - paused_at
                    paused_at = 0.0
            if channel.closed and paused_at:  # the broker went away: never stay stopped
                signal_tree(proc.pid, signal.SIGCONT)
                paused_total += time.monotonic() - paused_at
                paused_at = 0.0
    finally:
        if paused_at and proc.poll() is None:
            signal_tree(proc.pid, signal.SIGCONT)
    proc.wait()
    t.join()
    if proc.stderr is not None:
        proc.stderr.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Measured(proc.returncode, peak, time.monotonic() - start, cpu, bytes(err),
                    paused_total, procs, curve_of(samples, cpu))


def is_oom(rc: int, err: bytes) -> bool:
    return rc in (-9, 137) or any(m in err for m in OOM_MARKERS)


def _ask(path: str, msg: dict[str, object]) -> tuple[Channel, dict[str, object]]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    ch = Channel(s)
    ch.send(msg)
    if ch.closed:
        raise OSError("the broker went away")
    return ch, ch.read()


def _done(ch: Channel, msg: dict[str, object]) -> None:
    ch.send(msg)
    ch.close()


def _exit_on(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m builder.memory.launcher COMPILER ARGS…", file=sys.stderr)
        return 2
    broker = os.environ.get("BUILDER_BROKER", "")
    src = source_of(argv)
    if not broker or not Path(broker).exists() or src is None or os.environ.get(LAUNCHED):
        os.execvp(argv[0], argv)
    file = os.path.abspath(src)
    retry = False
    # a stop request while the broker has the compiler paused: resume it on the way out
    # (run_measured's finally), or it would stay stopped, holding its memory
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on)
    while True:
        try:
            conn, grant = _ask(broker, {"op": "acquire", "file": file, "argv": argv,
                                        "cwd": os.getcwd(), "retry": retry})
        except OSError:
            os.execvp(argv[0], argv)  # the broker went away: behave like no launcher
        cmd = list(argv)
        if grant.get("lowmem"):
            # appended last so that they override (-O1 after -O2, -g0 after -g)
            cmd += [str(x) for x in grant.get("flags", [])]  # type: ignore[attr-defined]
        m = run_measured(cmd, channel=conn)
        rc, peak = m.rc, m.peak
        oom = rc != 0 and is_oom(rc, m.err)
        _done(conn, {"op": "done", "rc": rc, "peak": peak, "seconds": m.seconds, "cpu": m.cpu,
                     "paused": m.paused, "procs": m.procs, "oom": oom,
                     "curve": list(m.curve)})
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
