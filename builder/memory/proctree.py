"""The process tree of a running compile: its processes, their anonymous memory and CPU
time, and signals to all of them.  nvcc and g++ spawn cicc/cc1plus, so the driver's own
``ru_maxrss`` sees none of it; where a job has no cgroup of its own
(:mod:`.jobgroup`) this is how it is measured, stopped and continued.
"""

from __future__ import annotations

import contextlib
import os
import signal

__all__ = ["CHILDREN_FILES", "PAGE", "TICKS", "descendants", "process_table", "signal_tree",
           "subtree", "tree_sample"]

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def process_table() -> dict[int, tuple[int, int]]:
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


def subtree(root: int, procs: dict[int, tuple[int, int]]) -> list[int]:
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
        return subtree(root, process_table())
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


