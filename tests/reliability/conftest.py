"""Helpers for the reliability suite: run `builder` as a real process on a private copy
of the fixture project, verify published manifests, find leftover processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from builder.util.files import file_sha256

REPO = Path(__file__).resolve().parents[2]


def need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} on PATH (CI installs it)")


def builder_argv(project: Path, state: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "builder", "-C", str(project), "--state-dir", str(state),
            *args]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["CI"] = "1"  # one line per step, no live display
    env.pop("BUILDER_STATE_DIR", None)
    return env


def start_build(project: Path, state: Path, *args: str) -> subprocess.Popen[str]:
    """builder in the background, with SIGINT as a terminal's Ctrl-C delivers it: a
    process started with SIGINT ignored keeps it ignored (POSIX; Python then installs no
    handler), and something earlier in the session can leave this process ignoring it."""
    before = signal.getsignal(signal.SIGINT)
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # reset to default at exec
    try:
        return subprocess.Popen(builder_argv(project, state, "build", *args), cwd=project,
                                env=child_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, before)


def run_build(project: Path, state: Path, *args: str, timeout: float = 300
              ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(builder_argv(project, state, "build", *args), cwd=project,
                          env=child_env(), capture_output=True, text=True, timeout=timeout,
                          check=False)


sha256 = file_sha256  # the same hash builder's manifests record


def verify_installs(state: Path) -> int:
    """Every manifest under ``<state>/install`` describes exactly the files next to it
    (same set of paths, each with its size and sha256).  Returns the number checked."""
    n = 0
    for mf in sorted((state / "install").glob("*/*/manifest.json")):
        data = json.loads(mf.read_text(encoding="utf-8"))
        root = mf.parent
        listed = {f["path"]: f for f in data["files"]}
        on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*")
                   if p.is_file() and not p.is_symlink() and p.name != "manifest.json"}
        assert set(listed) == on_disk, f"{root}: manifest and disk differ"
        for rel, f in listed.items():
            p = root / rel
            assert p.stat().st_size == f["size"], f"{p}: size differs from the manifest"
            assert sha256(p) == f["sha256"], f"{p}: sha256 differs from the manifest"
        n += 1
    return n


def _live_processes() -> Iterator[tuple[int, str, str]]:
    """(pid, command line, working folder) of each live (non-zombie) process but this
    one that can be read (not gone, not another user's)."""
    me = os.getpid()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (d / "stat").read_text()
            cwd = os.readlink(d / "cwd")
        except OSError:
            continue
        if stat.rpartition(")")[2].split()[0] != "Z":
            yield int(d.name), cmd.strip(), cwd


def processes_mentioning(needle: str) -> list[tuple[int, str]]:
    """Live (non-zombie) processes whose command line contains ``needle``."""
    return [(pid, cmd) for pid, cmd, _ in _live_processes() if needle in cmd]


def processes_in(folder: Path) -> list[tuple[int, str]]:
    """Live (non-zombie) processes, not this one, whose working folder is ``folder`` or
    below it, or whose command line names it."""
    where = str(folder)
    return [(pid, f"{cmd} (in {cwd})") for pid, cmd, cwd in _live_processes()
            if where in cmd or cwd == where or cwd.startswith(where + "/")]


def wait_no_processes(needle: str, timeout: float = 10.0) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout
    left = processes_mentioning(needle)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = processes_mentioning(needle)
    return left


@pytest.fixture
def real_tools() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the reliability suite reads /proc (Linux)")
    need("conan", "cmake", "ninja", "g++")
