"""Compiler launcher: ``CMAKE_<LANG>_COMPILER_LAUNCHER=python;-m;builder.memory.launcher``.

Before exec'ing the compiler it asks the build's broker (``$BUILDER_BROKER``) for
memory, then runs the compiler, measuring the peak RSS of its whole process tree
(nvcc and g++ spawn cicc/cc1plus: ``ru_maxrss`` of the driver sees none of it).
An out-of-memory kill — signal 9, or g++'s "Killed signal terminated program
cc1plus" with exit status 1 — is retried once, alone, with the recipe's
low-memory flags.  Without a broker (e.g. ``ninja`` run by hand) it just runs
the compiler.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".cu", ".hip", ".m", ".mm")
OOM_MARKERS = (b"Killed signal terminated program", b"virtual memory exhausted",
               b"out of memory allocating", b"std::bad_alloc")


def source_of(argv: list[str]) -> str | None:
    for i, a in enumerate(argv[:-1]):
        if a == "-c" and argv[i + 1].endswith(SOURCE_SUFFIXES):
            return argv[i + 1]
    cands = [a for a in argv[1:] if a.endswith(SOURCE_SUFFIXES) and not a.startswith("-")]
    return cands[-1] if cands else None


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def tree_rss(root: int) -> int:
    """Resident memory of ``root`` and all its descendants, now."""
    kids = _children()
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += _rss(pid)
        stack.extend(kids.get(pid, ()))
    return total


def run_measured(argv: list[str], interval: float = 0.1) -> tuple[int, int, float, bytes]:
    """Run ``argv``; return (exit code, peak tree RSS, seconds, stderr tail).  Output
    is passed through as it comes."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE)
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
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(interval)
    t.join()
    if proc.stderr is not None:
        proc.stderr.close()
    return proc.returncode, peak, time.monotonic() - start, bytes(err)


def is_oom(rc: int, err: bytes) -> bool:
    return rc in (-9, 137) or any(m in err for m in OOM_MARKERS)


def _ask(path: str, msg: dict[str, object]) -> tuple[socket.socket, dict[str, object]]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    f = s.makefile("rwb")
    f.write((json.dumps(msg) + "\n").encode())
    f.flush()
    reply = json.loads(f.readline() or b"{}")
    return s, reply


def _done(s: socket.socket, msg: dict[str, object]) -> None:
    try:
        s.sendall((json.dumps(msg) + "\n").encode())
    except OSError:
        pass
    finally:
        s.close()


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m builder.memory.launcher COMPILER ARGS…", file=sys.stderr)
        return 2
    broker = os.environ.get("BUILDER_BROKER", "")
    src = source_of(argv)
    if not broker or not Path(broker).exists() or src is None:
        os.execvp(argv[0], argv)
    file = os.path.abspath(src)
    retry = False
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
        rc, peak, secs, err = run_measured(cmd)
        oom = rc != 0 and is_oom(rc, err)
        _done(conn, {"op": "done", "rc": rc, "peak": peak, "seconds": secs, "oom": oom})
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
