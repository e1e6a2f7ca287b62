"""The memory launcher and broker with a distributed pool (``builder build --dist``): a
compile that fits the pool with the jobs already out goes through sccache to the pool and
holds only its local part here; one that does not runs here without sccache; no more jobs
are out than the pool has cores.  sccache is a recording stand-in (a script named
``sccache``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from builder.memory.broker import Broker
from builder.memory.remote import LOCAL_PART, POOL_ENV
from builder.plan.payloads import MemoryConfig
from tests.conftest import REPO

FAKE_SCCACHE = """\
import os, subprocess, sys, time
with open(os.environ["SCCACHE_RECORD"], "a") as f:
    f.write(f"start {time.monotonic()}\\n")
rc = subprocess.call(sys.argv[1:])
with open(os.environ["SCCACHE_RECORD"], "a") as f:
    f.write(f"end {time.monotonic()}\\n")
sys.exit(rc)
"""
FAKE_CC = "import os, time\ntime.sleep(float(os.environ.get('CC_SLEEP', '0.4')))\n"


@pytest.fixture(autouse=True)
def _owned(tmp_path: Path) -> None:
    (tmp_path / ".builder-state").write_text("")


def _setup(tmp_path: Path, cores: int, memory: int, overflow: bool = True
           ) -> tuple[Path, Path]:
    sccache = tmp_path / "bin" / "sccache"
    sccache.parent.mkdir()
    sccache.write_text(f"#!{sys.executable}\n{FAKE_SCCACHE}")
    sccache.chmod(0o755)
    (tmp_path / "cc.py").write_text(FAKE_CC)
    pool = tmp_path / "dist" / "pool.json"
    pool.parent.mkdir()
    pool.write_text(json.dumps({"scheduler": "http://127.0.0.1:1", "servers": [
        {"name": "s1", "addr": "127.0.0.1:2", "cores": cores, "memory": memory}],
        "overflow": overflow}))
    return sccache, pool


def _run(tmp_path: Path, sccache: Path, pool: Path, peak: int, files: list[str],
         sleep: float = 0.4) -> tuple[list[dict[str, object]], list[str]]:
    broker = Broker(tmp_path / "b.sock", MemoryConfig(
        budget=8 << 30, slots=4, source_root=str(tmp_path), build_dir=str(tmp_path / "build"),
        history_path=str(tmp_path / "history.json"), recipe_globs=(("*.cpp", peak),),
        lowmem_flags=("-g0",), recipe_default=0))
    broker.start()
    record = tmp_path / "sccache.log"
    env = {**os.environ, "BUILDER_BROKER": str(broker.path), "PYTHONPATH": str(REPO),
           POOL_ENV: str(pool), "SCCACHE_RECORD": str(record), "CC_SLEEP": str(sleep)}
    try:
        procs = []
        for name in files:
            (tmp_path / name).write_text("int x;\n")
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "builder.memory.launcher", str(sccache), sys.executable,
                 str(tmp_path / "cc.py"), "-c", str(tmp_path / name)], env=env,
                stderr=subprocess.PIPE))
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
    finally:
        broker.stop()
    lines = record.read_text().splitlines() if record.exists() else []
    return broker.report(), lines


def test_a_job_that_fits_the_pool_goes_there_holding_its_local_part(tmp_path: Path
                                                                     ) -> None:
    sccache, pool = _setup(tmp_path, cores=2, memory=4 << 30)
    jobs, record = _run(tmp_path, sccache, pool, 1 << 30, ["a.cpp"])
    [job] = jobs
    assert job["where"] == "remote" and job["reserve"] == LOCAL_PART
    assert sum(1 for ln in record if ln.startswith("start")) == 1


def test_a_job_too_heavy_for_the_pool_runs_here_without_sccache(tmp_path: Path) -> None:
    sccache, pool = _setup(tmp_path, cores=2, memory=1 << 30)
    jobs, record = _run(tmp_path, sccache, pool, 1536 << 20, ["a.cpp"])
    [job] = jobs
    assert job["where"] == "" and int(str(job["reserve"])) >= 1536 << 20
    assert record == []  # sccache would have sent it to the pool all the same


def test_jobs_that_fit_alone_but_not_together_split_between_pool_and_here(
        tmp_path: Path) -> None:
    """Two 3 GiB jobs on a 2-core 4 GiB server: the scheduler would put both there."""
    sccache, pool = _setup(tmp_path, cores=2, memory=4 << 30)
    jobs, record = _run(tmp_path, sccache, pool, 3 << 30, ["a.cpp", "b.cpp"], sleep=3.0)
    assert sorted(str(j["where"]) for j in jobs) == ["", "remote"]
    assert sum(1 for ln in record if ln.startswith("start")) == 1


def test_no_more_jobs_are_out_than_the_pool_has_cores(tmp_path: Path) -> None:
    # BUILDER_DIST_LOCAL=0: a compile waits for a remote slot
    sccache, pool = _setup(tmp_path, cores=1, memory=4 << 30, overflow=False)
    jobs, record = _run(tmp_path, sccache, pool, 256 << 20, ["a.cpp", "b.cpp", "c.cpp"])
    assert [j["where"] for j in jobs] == ["remote"] * 3
    out = most = 0
    for ln in sorted(record, key=lambda x: float(x.split()[1])):
        out += 1 if ln.startswith("start") else -1
        most = max(most, out)
    assert most == 1, record


def test_with_every_remote_slot_taken_a_compile_runs_here(tmp_path: Path) -> None:
    """The default: the client's own CPUs compile too, never more than the pool's cores
    out at once."""
    sccache, pool = _setup(tmp_path, cores=1, memory=4 << 30)
    jobs, record = _run(tmp_path, sccache, pool, 256 << 20, ["a.cpp", "b.cpp", "c.cpp"])
    where = [j["where"] for j in jobs]
    assert "remote" in where and "" in where, where
    out = most = 0
    for ln in sorted(record, key=lambda x: float(x.split()[1])):
        out += 1 if ln.startswith("start") else -1
        most = max(most, out)
    assert most == 1, record
