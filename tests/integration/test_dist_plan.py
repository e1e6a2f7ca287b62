"""``builder plan`` and ``builder host`` with a distributed pool (``--dist URL``, its
servers declared in a pool file): the plan shows the pool, its forecast gives the jobs
that it can hold to it and counts the pool's cores in -j; planning asks no server."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from builder.plan.model import BuildPlan
from builder.plan.payloads import CompileJobs
from tests.conftest import FIXTURES

GiB = 1 << 30


@pytest.fixture
def pool_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A pool of two 4-core servers whose scheduler nothing answers for."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"  # closed once the test runs
    f = tmp_path / "pool.json"
    f.write_text(json.dumps({"scheduler": url, "servers": [
        {"name": "big-1", "addr": "10.0.0.2:10501", "cores": 4, "memory": 8 * GiB},
        {"name": "big-2", "addr": "10.0.0.3:10501", "cores": 4, "memory": 16 * GiB}]}))
    monkeypatch.setenv("BUILDER_DIST_POOL_FILE", str(f))
    monkeypatch.delenv("BUILDER_DIST", raising=False)
    return url


def _compiles(plan: BuildPlan) -> list[CompileJobs]:
    return [s.payload for s in plan.steps if isinstance(s.payload, CompileJobs)
            and s.payload.prediction.jobs]


def test_the_plan_shows_the_pool_and_its_forecast_uses_it(project: Path, cli,  # type: ignore[no-untyped-def]
                                                          pool_file: str) -> None:
    facts = str(FIXTURES / "hosts" / "linux-cuda13.json")
    here = cli("plan", "app", "--host-facts", facts, "--format", "json", cwd=project)
    there = cli("plan", "app", "--host-facts", facts, "--format", "json", "--dist", pool_file,
                cwd=project)
    assert here.code == 0 and there.code == 0, here.err + there.err
    alone, pooled = BuildPlan.from_json(json.loads(here.out)), \
        BuildPlan.from_json(json.loads(there.out))
    assert alone.dist is None and "dist" not in json.loads(here.out)
    assert pooled.dist is not None
    assert (pooled.dist.scheduler, pooled.dist.cores, pooled.dist.memory) \
        == (pool_file, 8, 24 * GiB)
    assert [s.name for s in pooled.dist.servers] == ["big-1", "big-2"]
    assert pooled.jobs == alone.jobs + 8  # the pool's cores join the host's
    before, after = _compiles(alone), _compiles(pooled)
    assert before and all(c.prediction.remote == 0 for c in before)
    assert all(0 < c.prediction.remote <= c.prediction.jobs for c in after)
    assert all(c.memory.slots == pooled.jobs for c in after)  # the broker's slots, as -j
    text = cli("plan", "app", "--host-facts", facts, "--dist", pool_file, cwd=project)
    assert f"dist:     {pool_file}: 2 server(s), 8 core(s), 24.0 GiB" in text.out
    assert "of them on the distributed pool" in text.out


def test_host_shows_the_declared_pool_and_that_its_scheduler_is_down(project: Path, cli,  # type: ignore[no-untyped-def]
                                                                     pool_file: str) -> None:
    r = cli("host", "--format", "json", "--dist", pool_file, cwd=project)
    assert r.code == 0, r.err
    dist = json.loads(r.out)["dist"]
    assert dist["scheduler"] == pool_file
    assert (dist["pool"]["cores"], dist["pool"]["memory"]) == (8, 24 * GiB)
    assert [s["name"] for s in dist["pool"]["servers"]] == ["big-1", "big-2"]
    assert "cannot be reached" in dist["status"]["error"]
    t = cli("host", "--dist", pool_file, cwd=project)
    assert "2 server(s), 8 core(s), 24.0 GiB — big-1 4 core(s) 8.0 GiB" in t.out
    assert "the scheduler cannot be reached" in t.out
    assert "dist" not in json.loads(cli("host", "--format", "json", cwd=project).out)
