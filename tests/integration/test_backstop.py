"""The memory backstop with real cgroups: compiles whose estimates are far too low, in a
build cgroup capped below what they need together.  Without the backstop the kernel
OOM-kills one of them; with it, none is killed by the kernel — they are frozen, thawed
and (as a last resort) run again — and every one succeeds.  Each job runs in a cgroup
of its own, which measures its peak."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from builder.memory import cgroup
from builder.memory.broker import Broker
from builder.memory.core import Switches
from builder.memory.tuning import TUNING
from builder.plan.payloads import MemoryConfig
from tests.conftest import REPO


@pytest.fixture(autouse=True)
def _owned(tmp_path: Path) -> None:
    """The broker saves its history through builder's writer, which writes only into
    folders builder owns: here, the test's folder."""
    (tmp_path / ".builder-state").write_text("")

MiB = 2**20

GROW = """\
import sys, time
arg, secs = sys.argv[1], float(sys.argv[2])
mib = int(arg) if arg.isdigit() else int(open(arg).read())  # a file: one command line
held, step = [], 5
for _ in range(mib // step):
    held.append(b"\\x01" * (step * 2**20))  # written, so resident
    time.sleep(secs * step / mib)
time.sleep(0.3)
"""

DRIVER = """\
import os, subprocess, sys
n, grow, mib, secs, root = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
procs = []
for i in range(n):
    src = os.path.join(root, f"tu{i}.cpp")
    open(src, "w").write("int x;\\n")
    procs.append(subprocess.Popen([sys.executable, "-m", "builder.memory.launcher",
                                   sys.executable, grow, mib, secs, "-c", src]))
sys.exit(max(p.wait() for p in procs))
"""


def _cgroup_or_skip() -> None:
    try:
        g = cgroup.create(f"probe{os.getpid()}", 1 << 30)
        cgroup.remove(g)
    except (cgroup.CgroupUnavailable, OSError) as exc:
        pytest.skip(f"no writable memory cgroup here ({exc})")


def _build(tmp_path: Path, backstop: bool, cap: int, jobs: int, mib: int | Path,
           name: str = "") -> tuple[subprocess.CompletedProcess[str], Broker]:
    (tmp_path / "grow.py").write_text(GROW)
    (tmp_path / "driver.py").write_text(DRIVER)
    broker = Broker(tmp_path / "b.sock", MemoryConfig(
        budget=cap, slots=jobs, source_root=str(tmp_path), build_dir=str(tmp_path / "build"),
        history_path=str(tmp_path / "history.json"), recipe_globs=(("*.cpp", 10 * MiB),),
        recipe_default=0, lowmem_flags=()),
        Switches(backstop=backstop), replace(TUNING, settle=0.5))
    broker.start()
    env = {**os.environ, "BUILDER_BROKER": str(broker.path), "PYTHONPATH": str(REPO)}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "builder.memory.cgroup", "--limit", str(cap), "--name",
             f"test-backstop-{os.getpid()}-{int(backstop)}{name}", "--", sys.executable,
             str(tmp_path / "driver.py"), str(jobs), str(tmp_path / "grow.py"), str(mib),
             "2.0", str(tmp_path)], env=env, capture_output=True, text=True, timeout=240,
            check=False)
    finally:
        broker.stop()
    return proc, broker


def _kills(out: str) -> int:
    return sum(int(k) for k in re.findall(r"OOM kills: (\d+)", out))


def test_the_backstop_keeps_the_kernel_from_killing(tmp_path: Path) -> None:
    _cgroup_or_skip()
    proc, broker = _build(tmp_path, backstop=True, cap=420 * MiB, jobs=4, mib=150)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert _kills(out) == 0, out
    jobs = broker.report()
    assert not any(j["oom"] for j in jobs)
    assert sum(j["held"] for j in jobs) + sum(j["requeued"] for j in jobs) >= 1
    done = [j for j in jobs if j["rc"] == 0]
    assert len(done) == 4
    # each job in a cgroup of its own: the kernel's peak, not a sample
    assert all(j["measured_by"] == "cgroup" for j in done)
    assert all(140 * MiB <= j["peak"] <= 200 * MiB for j in done), [j["peak"] for j in done]
    assert broker.most_used <= 420 * MiB


def test_the_backstop_watches_jobs_whose_history_is_wrong(tmp_path: Path) -> None:
    """Every job has a history, measured when they needed little; now (other headers, say)
    each needs 150 MiB and all four, admitted on their history, pass the cap together.
    The backstop watches measured jobs too: the kernel kills none."""
    _cgroup_or_skip()
    size = tmp_path / "mib.txt"  # the same command lines, so the same history keys
    size.write_text("5")
    first, _ = _build(tmp_path, backstop=True, cap=1 << 30, jobs=4, mib=size, name="a")
    assert first.returncode == 0, first.stdout + first.stderr
    size.write_text("150")
    proc, broker = _build(tmp_path, backstop=True, cap=420 * MiB, jobs=4, mib=size, name="b")
    out = proc.stdout + proc.stderr
    jobs = broker.report()
    assert all(j["source"] == "history" for j in jobs), [j["source"] for j in jobs]
    assert broker.build_cgroup is not None and broker.most_used > 0
    assert proc.returncode == 0, out
    assert _kills(out) == 0, out
    assert len([j for j in jobs if j["rc"] == 0]) == 4
    assert broker.most_used <= 420 * MiB


def test_without_the_backstop_the_kernel_kills(tmp_path: Path) -> None:
    """The same build with the backstop off: the estimates let all four start, their
    memory passes the cap, and the kernel kills (the launcher then retries alone)."""
    _cgroup_or_skip()
    proc, broker = _build(tmp_path, backstop=False, cap=420 * MiB, jobs=4, mib=150)
    out = proc.stdout + proc.stderr
    assert _kills(out) >= 1, out
    assert any(j["oom"] for j in broker.report())


def test_a_job_cgroup_freezes_thaws_and_kills_its_whole_tree(tmp_path: Path) -> None:
    """A compile's processes — a child forked after it started included — are frozen at
    once (no CPU time used), thawed, and killed through its leaf."""
    _cgroup_or_skip()
    from builder.memory import jobgroup
    from builder.memory.proctree import tree_sample

    build = cgroup.create(f"test-job-{os.getpid()}", 1 << 30)
    try:
        group = jobgroup.make({jobgroup.ENV: str(build)})
        assert group is not None and group.can_freeze
        spin = ("import subprocess, sys, time\n"
                "subprocess.Popen([sys.executable, '-c', 'while True: pass'])\n"
                "while True: pass\n")
        proc = subprocess.Popen([sys.executable, "-c", spin],
                                preexec_fn=group.enter)  # noqa: PLW1509 (no threads here)
        deadline = time.monotonic() + 20
        while len(group.pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(group.pids()) == 2  # the child was born inside
        assert group.freeze(True)
        time.sleep(0.3)
        cpu = tree_sample(proc.pid)[1]
        time.sleep(0.6)
        assert tree_sample(proc.pid)[1] - cpu < 0.05  # frozen: no CPU time
        assert group.freeze(False)
        deadline = time.monotonic() + 20  # thawed: they spin again (on a busy machine too)
        while tree_sample(proc.pid)[1] - cpu < 0.2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert tree_sample(proc.pid)[1] - cpu >= 0.2
        group.kill()
        assert proc.wait(timeout=20) == -9
        deadline = time.monotonic() + 20
        while group.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert group.pids() == []
        group.remove()
        assert not group.path.exists()
    finally:
        cgroup.remove(build)
