"""The one place that starts subprocesses.

Every command is an argv list (never a shell string).  :class:`SubprocessRunner`
writes one log file per step that begins with the exact command (``shlex.join``)
and the environment *changes*, runs the child in its own process group so that an
interruption stops the whole tree, enforces a timeout, and keeps the last lines
for error messages.  :class:`RecordingRunner` records the same calls without
running anything, for integration tests of the CLI.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from builder.util.writer import open_stream

__all__ = [
    "OWNER_ENV",
    "TAIL_LINES",
    "Call",
    "RecordingRunner",
    "Result",
    "Runner",
    "SubprocessRunner",
    "capture",
    "owned_processes",
    "reap_orphans",
]

TAIL_LINES = 30
#: seconds to wait for the rest of a command's output once it has exited
OUTPUT_GRACE = 5.0


def capture(argv: Sequence[str], timeout: float = 20.0,
            env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """Run a short probe and return (exit code, stdout+stderr); never raises for
    a missing program or a timeout (exit code 127 / 124)."""
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              env=dict(env) if env is not None else None, check=False,
                              stdin=subprocess.DEVNULL, errors="replace")
    except FileNotFoundError:
        return 127, f"{argv[0]}: not found"
    except PermissionError as exc:
        return 126, str(exc)
    except subprocess.TimeoutExpired:
        return 124, f"{shlex.join(argv)}: timed out after {timeout:.0f}s"
    return proc.returncode, (proc.stdout or "") + (proc.stderr or "")


@dataclass
class Result:
    returncode: int
    tail: list[str] = field(default_factory=list)
    seconds: float = 0.0
    timed_out: bool = False
    interrupted: bool = False


class Runner(Protocol):
    def run(self, argv: Sequence[str], *, cwd: Path, env_changes: Mapping[str, str],
            log_path: Path, timeout: float,
            on_line: Callable[[str], None] | None = None,
            base_env: Mapping[str, str] | None = None) -> Result:
        """Run ``argv`` with ``base_env`` plus ``env_changes`` — exactly that environment
        (a build step's, composed by :mod:`builder.resolve.stepenv`); without
        ``base_env``, this process's own plus the changes (builder's own calls of a host
        tool, such as a Conan upload that needs the user's credentials)."""
        ...


#: Every process a build starts carries ``BUILDER_OWNER=<state folder>`` in its
#: environment, so that the next build on that folder can find (and stop) what a
#: builder killed with SIGKILL left running: see :func:`reap_orphans`.
OWNER_ENV = "BUILDER_OWNER"


def _child_env(env_changes: Mapping[str, str], owner: str = "",
               base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    for k, v in env_changes.items():
        env[k] = v
    if owner:
        env[OWNER_ENV] = owner
    return env


def _ancestors() -> set[int]:
    out, pid = {os.getpid()}, os.getpid()
    while pid > 1:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            pid = int(status.split("PPid:", 1)[1].split()[0])
        except (OSError, IndexError, ValueError):
            break
        out.add(pid)
    return out


def owned_processes(owner: str) -> list[int]:
    """Live processes (not this one or its ancestors) started by a build of ``owner``."""
    needle = f"{OWNER_ENV}={owner}".encode()
    mine = _ancestors()
    found = []
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:  # no /proc (macOS): nothing to find
        return []
    for d in entries:
        if not d.name.isdigit() or int(d.name) in mine:
            continue
        try:
            if needle in (d / "environ").read_bytes().split(b"\0"):
                found.append(int(d.name))
        except OSError:  # gone, or another user's
            continue
    return found


def reap_orphans(owner: str, wait: float = 5.0) -> list[int]:
    """Kill what an earlier build of ``owner`` left running (its builder was killed
    with SIGKILL, so it could not stop its children).  Call with the workspace lock
    held: then no live builder owns these processes.  Returns the pids killed."""
    pids = owned_processes(owner)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + wait
    while pids and time.monotonic() < deadline:
        left = [p for p in pids if _alive(p)]
        if not left:
            break
        time.sleep(0.05)
    return pids


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


class SubprocessRunner:
    """Runs commands for real, one log file each.  ``owner`` (the state folder) is put
    in every child's environment, for :func:`reap_orphans`."""

    def __init__(self, owner: str = "") -> None:
        self._current: subprocess.Popen[bytes] | None = None
        self.owner = owner
        #: every child running now (the executor runs independent steps side by side)
        self._running: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    def stop_all(self) -> None:
        """Stop every command running now, each with its process group (an interrupted
        build whose steps run on threads: Ctrl-C reaches the main thread only)."""
        with self._lock:
            procs = list(self._running)
        for proc in procs:
            _kill_group(proc)

    def run(self, argv: Sequence[str], *, cwd: Path, env_changes: Mapping[str, str],
            log_path: Path, timeout: float,
            on_line: Callable[[str], None] | None = None,
            base_env: Mapping[str, str] | None = None) -> Result:
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        start = time.monotonic()
        from builder.util.secrets import in_argv, redact, reveal  # the one redactor

        leaked = in_argv(argv)
        if leaked:  # ps and /proc/PID/cmdline show every argv to every user
            msg = f"refusing to run {argv[0]}: a secret is in its command line ({leaked})"
            with open_stream(log_path) as log:
                log.write(msg + "\n")
            return Result(126, [msg], 0.0)
        # ${secret:NAME} references become values in the child's environment only: the
        # log below shows the references
        child_changes = {k: reveal(v) for k, v in env_changes.items()}
        child_base = None if base_env is None else {k: reveal(v) for k, v in base_env.items()}
        secrets = {**os.environ, **(child_base or {}), **child_changes}
        with open_stream(log_path) as log:  # the one writer: no link followed
            log.write(redact(f"$ {shlex.join(argv)}\n", secrets))
            log.write(f"# cwd: {cwd}\n")
            # a composed environment is logged whole: the log says all the step saw
            shown = env_changes if base_env is None else {**base_env, **env_changes}
            for k, v in sorted(shown.items()):
                log.write(redact(f"# env: {k}={v}\n", secrets))
            log.flush()
            try:
                proc = subprocess.Popen(list(argv), cwd=cwd,
                                        env=_child_env(child_changes, self.owner, child_base),
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as exc:
                msg = f"cannot start {argv[0]}: {exc.strerror or exc}"
                log.write(msg + "\n")
                return Result(127, [msg], 0.0)
            self._current = proc
            with self._lock:
                self._running.add(proc)
            timed_out = False

            def kill_on_timeout() -> None:
                nonlocal timed_out
                timed_out = True
                _kill_group(proc)

            timer = threading.Timer(timeout, kill_on_timeout)
            timer.daemon = True
            timer.start()
            # the output is read on a thread and the command's own end is what counts: a
            # process it left in the background (a compiler-cache server, a test's daemon)
            # may hold the output open for hours
            gate = threading.Lock()
            given_up = threading.Event()  # this call is done with the log

            def pump() -> None:
                assert proc.stdout is not None
                show = on_line
                with contextlib.suppress(OSError, ValueError), proc.stdout:
                    for raw in proc.stdout:
                        line = redact(raw.decode("utf-8", errors="replace").rstrip("\n"),
                                      secrets)
                        with gate:
                            if given_up.is_set():  # drained, not written: no SIGPIPE
                                continue
                            log.write(line + "\n")
                            log.flush()  # so that `tail -f` on a step's log follows it live
                            tail.append(line)
                            if show is not None:
                                try:
                                    show(line)
                                except Exception as exc:  # the display's fault, not the
                                    # step's: the output is still read and logged (a
                                    # closed pipe would kill the command with SIGPIPE)
                                    show = None
                                    log.write(redact(f"# live output stopped: {exc!r}\n",
                                                     secrets))

            def done_reading(note: str = "") -> None:
                with gate:
                    given_up.set()
                    if note:
                        log.write(note)

            reader = threading.Thread(target=pump, daemon=True)
            reader.start()
            try:
                rc = proc.wait()
                reader.join(OUTPUT_GRACE)
                done_reading(f"# exited; a process it left running still holds its output — "
                             f"not waiting for it after {OUTPUT_GRACE:.0f}s\n"
                             if reader.is_alive() else "")
            except KeyboardInterrupt:
                _kill_group(proc)
                proc.wait()
                reader.join(OUTPUT_GRACE)
                done_reading("# interrupted\n")
                return Result(130, list(tail), time.monotonic() - start, interrupted=True)
            finally:
                timer.cancel()
                self._current = None
                with self._lock:
                    self._running.discard(proc)
            if timed_out:
                log.write(f"# timed out after {timeout:.0f}s\n")
            log.write(f"# exit code {rc}\n")
        return Result(rc, list(tail), time.monotonic() - start, timed_out=timed_out)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop the child's whole process group: TERM, then KILL after a grace period."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait or None)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass
class Call:
    argv: list[str]
    cwd: str
    env_changes: dict[str, str]
    base_env: dict[str, str] | None = None


class RecordingRunner:
    """Records argv instead of running; ``fail`` maps a substring of a command to the
    exit code it should "return", to test failure handling."""

    def __init__(self, fail: Mapping[str, int] | None = None) -> None:
        self.calls: list[Call] = []
        self.fail = dict(fail or {})

    def run(self, argv: Sequence[str], *, cwd: Path, env_changes: Mapping[str, str],
            log_path: Path, timeout: float,
            on_line: Callable[[str], None] | None = None,
            base_env: Mapping[str, str] | None = None) -> Result:
        self.calls.append(Call(list(argv), str(cwd), dict(env_changes),
                               None if base_env is None else dict(base_env)))
        joined = shlex.join(argv)
        with open_stream(log_path) as log:
            log.write(f"$ {joined}\n(recorded, not run)\n")
        for needle, rc in self.fail.items():
            if needle in joined:
                return Result(rc, [f"recorded failure for {needle!r}"])
        return Result(0)
