"""Broker + launcher with fake compilers: admission by reserved memory, OOM retry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from builder.memory.broker import Broker, BrokerConfig
from tests.conftest import REPO

FAKE_CC = """\
import sys, time
args = sys.argv[1:]
if "--oom-unless-g0" in args and "-g0" not in args:
    sys.stderr.write("g++: fatal error: Killed signal terminated program cc1plus\\n")
    sys.exit(1)
blob = bytearray(40 * 2**20)  # 40 MiB, so that the launcher measures something
time.sleep(0.6)
"""


def _broker(tmp_path: Path, budget: int, glob_size: int) -> Broker:
    b = Broker(tmp_path / "b.sock", BrokerConfig(
        budget=budget, slots=4, source_root=str(tmp_path), build_dir=str(tmp_path / "build"),
        history_path=str(tmp_path / "history.json"), recipe_globs=(("*.cpp", glob_size),),
        lowmem_flags=("-g0", "-O1")))
    b.start()
    return b


def _launch(tmp_path: Path, broker: Broker, name: str, *extra: str) -> subprocess.Popen[bytes]:
    src = tmp_path / name
    src.write_text("int x;\n")
    (tmp_path / "cc.py").write_text(FAKE_CC)
    env = {**os.environ, "BUILDER_BROKER": str(broker.path), "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "builder.memory.launcher", sys.executable,
                             str(tmp_path / "cc.py"), *extra, "-c", str(src)], env=env,
                            stderr=subprocess.PIPE)


def test_reserved_memory_limits_concurrency(tmp_path: Path) -> None:
    broker = _broker(tmp_path, budget=10**9, glob_size=400 * 10**6)  # reserve 460 MB each
    try:
        procs = [_launch(tmp_path, broker, f"t{i}.cpp") for i in range(5)]
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
    finally:
        broker.stop()
    jobs = broker.report()
    assert len(jobs) == 5
    events = sorted([(j["started"], 1) for j in jobs] + [(j["ended"], -1) for j in jobs])
    running = peak = 0
    for _, d in events:
        running += d
        peak = max(peak, running)
    assert peak == 2  # 3 × 460 MB would pass the 1 GB budget
    assert all(j["peak"] > 30 * 2**20 for j in jobs)  # the launcher measured the child
    history = json.loads((tmp_path / "history.json").read_text())["jobs"]
    assert len(history) == 5


def test_oom_kill_is_retried_alone_with_lowmem_flags(tmp_path: Path) -> None:
    broker = _broker(tmp_path, budget=10**9, glob_size=100 * 10**6)
    try:
        p = _launch(tmp_path, broker, "big.cpp", "--oom-unless-g0")
        _, err = p.communicate(timeout=60)
    finally:
        broker.stop()
    assert p.returncode == 0, err
    assert b"retrying alone with the low-memory flags" in err
    first, second = broker.report()
    assert first["oom"] and not first["retry"]
    assert second["retry"] and second["lowmem"] and second["rc"] == 0


def test_without_broker_the_launcher_just_runs_the_compiler(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "builder.memory.launcher", sys.executable,
                          "-c", "print('ran')"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO), "BUILDER_BROKER": ""},
                         check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ran"
