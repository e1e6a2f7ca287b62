"""Ctrl-C and SIGKILL of `builder build` while compilers run, and two builds at once."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.reliability.conftest import (
    processes_mentioning,
    run_build,
    start_build,
    verify_installs,
    wait_no_processes,
)

pytestmark = pytest.mark.functional


def slow_down_greet(project: Path) -> None:
    """Make greet's one translation unit take a second or two to compile, so that a
    signal sent once the compiler shows up lands during the build step."""
    src = project / "sources" / "greet" / "src" / "greet.cpp"
    src.write_text("#include <regex>\n#include <iostream>\n#include <sstream>\n"
                   "static std::regex pattern(\"h.*\");\n" + src.read_text(encoding="utf-8"),
                   encoding="utf-8")


def wait_for_compiler(project: Path, proc: subprocess.Popen[str], timeout: float = 60
                      ) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        found = [p for p in processes_mentioning(str(project)) if "cc1plus" in p[1]]
        if found:
            return found
        time.sleep(0.01)
    pytest.fail("the compiler never showed up: " + (proc.communicate()[0] or ""))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_stops_the_whole_tree_and_the_next_build_resumes(
        project: Path, tmp_path: Path, real_tools: None, sig: signal.Signals) -> None:
    """SIGINT is what Ctrl-C delivers to builder; SIGTERM (a cancelled CI job) acts alike
    and says so, with 128 + its number as the exit status."""
    state = tmp_path / "state"
    slow_down_greet(project)
    proc = start_build(project, state, "app")
    wait_for_compiler(project, proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    said = "interrupted" if sig == signal.SIGINT else "terminated (SIGTERM)"
    assert proc.returncode == 128 + sig, out + err
    assert f"{said} during greet/" in err and "/build" in err, err
    # no process of the build tree survives builder (cmake, ninja, launcher, g++, cc1plus)
    assert wait_no_processes(str(project), timeout=2) == []
    record = json.loads((state / "last-build.json").read_text())
    assert record["interrupted"] is True
    running = [s["id"] for s in record["steps"] if s["status"] == "running"]
    assert len(running) == 1 and running[0].startswith("greet/") and \
        running[0].endswith("/build"), record["steps"]
    assert list((state / "install").glob("*/*/manifest.json")) == []  # nothing published

    again = run_build(project, state, "app")
    assert again.returncode == 0, again.stdout + again.stderr
    assert verify_installs(state) == 2


def test_sigkill_orphans_are_stopped_by_the_next_build(
        project: Path, tmp_path: Path, real_tools: None) -> None:
    """builder killed with SIGKILL cannot stop its children; they keep running as orphans
    (here the compiler of greet).  The next build on the same state folder stops them
    before it starts, instead of racing them in the same build folder."""
    state = tmp_path / "state"
    slow_down_greet(project)
    proc = start_build(project, state, "app")
    wait_for_compiler(project, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    orphans = [p for p in processes_mentioning(str(project)) if "cc1plus" in p[1]]
    assert orphans, "the compiler should outlive builder killed with SIGKILL"
    nxt = start_build(project, state, "app")
    out, err = nxt.communicate(timeout=300)
    assert nxt.returncode == 0, out + err
    assert "that an earlier build killed with SIGKILL had left running" in err
    assert processes_mentioning(str(project)) == []
    assert verify_installs(state) == 2


def test_two_builds_at_once(project: Path, tmp_path: Path, real_tools: None) -> None:
    state = tmp_path / "state"
    first = start_build(project, state, "app")
    time.sleep(0.3)
    second = start_build(project, state, "app")
    out1, err1 = first.communicate(timeout=300)
    out2, err2 = second.communicate(timeout=300)
    assert first.returncode == 0, out1 + err1
    assert second.returncode == 0, out2 + err2
    # one of them built; the other waited for the lock, then found everything cached
    waited = [e for e in (err1, err2) if "waiting for another builder" in e]
    assert len(waited) == 1, (err1, err2)
    assert "nothing to do" in (out2 if waited[0] is err2 else out1)
    assert verify_installs(state) == 2
    exe = next((state / "install" / "app").glob("*/bin/app"))
    assert subprocess.run([exe, "x"], capture_output=True, text=True,
                          check=True).stdout == "hello, x\n"
