"""The pure parts of distributed compilation: remote admission by memory, the pool's
description, sccache-dist's rendered configurations, the token's handling and the
variables a build step takes at run time."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.errors import DistError
from builder.memory.estimate import Estimate
from builder.memory.remote import (
    LOCAL_PART,
    POOL_ENV,
    Pool,
    Server,
    Share,
    Slots,
    claim,
    fits,
    on_pool,
    remote_slots,
    share_of,
)
from builder.pool import config
from builder.pool.client import read_token, stats_of
from builder.resolve import stepenv
from builder.util.secrets import redact
from builder.workspace.ownership import claim_state

GiB = 1 << 30
tomllib = pytest.importorskip("tomllib", reason="the TOML reader is in Python 3.11+")


def _pool(*servers: tuple[int, int]) -> Pool:
    return Pool("http://127.0.0.1:10600", tuple(
        Server(f"s{i}", f"127.0.0.1:{10601 + i}", cores, mem)
        for i, (cores, mem) in enumerate(servers)))


def test_a_job_goes_remote_only_when_every_server_s_worst_case_fits() -> None:
    pool = _pool((4, 16 * GiB), (4, 16 * GiB), (4, 16 * GiB))
    # one job out: the least-loaded server gets it, whichever that is
    assert fits([Share(16 * GiB)], pool) and not fits([Share(16 * GiB + 1)], pool)
    assert not fits([Share(1)], _pool())  # no server: nothing goes remote
    # 9 jobs of 5 GiB: at most 3 on a server (15 GiB); a 10th could make it 4 (20 GiB)
    assert fits([Share(5 * GiB)] * 9, pool)
    assert not fits([Share(5 * GiB)] * 10, pool)
    # the heaviest job out bounds every server: one 8 GiB job and 5 small ones fit (2 on a
    # server at most, 16 GiB if both were the heaviest); a 7th job could make it 3
    assert fits([Share(8 * GiB), *[Share(GiB)] * 5], pool)
    assert not fits([Share(8 * GiB), *[Share(GiB)] * 6], pool)
    # a small server bounds the pool by its own cores' share of the jobs
    mixed = _pool((8, 64 * GiB), (2, 4 * GiB))  # 10 cores
    assert fits([Share(3 * GiB)] * 5, mixed)  # the small one gets at most 1 of 5
    assert not fits([Share(3 * GiB)] * 6, mixed)  # 2 of 6 there: 6 GiB > 4 GiB
    assert fits([Share(2 * GiB)] * 10, mixed)  # 2 of 10 there: 4 GiB
    assert not fits([Share(2 * GiB)] * 11, mixed)
    assert (pool.cores, pool.memory) == (12, 48 * GiB)


def test_an_nvcc_job_with_threads_counts_as_that_many_jobs() -> None:
    nvcc = ["/x/sccache", "/usr/local/cuda/bin/nvcc", "-c", "a.cu",
            "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90"]
    assert share_of(6 * GiB, nvcc) == Share(6 * GiB, 1)  # archs one after the other
    assert share_of(6 * GiB, [*nvcc, "--threads", "2"]) == Share(3 * GiB, 2)
    assert share_of(6 * GiB, [*nvcc, "-t=0"]) == Share(3 * GiB, 2)  # 0: every arch
    assert share_of(6 * GiB, [*nvcc, "-t", "8"]) == Share(3 * GiB, 2)  # no more than archs
    assert share_of(6 * GiB, ["/x/sccache", "g++", "-c", "a.cpp", "-t", "4"]) == \
        Share(6 * GiB, 1)


def test_the_broker_holds_only_the_local_part_of_a_job_the_pool_takes(
        tmp_path: Path) -> None:
    claim_state(tmp_path / "state")
    pool_file = tmp_path / "state" / "pool.json"
    pool_file.write_text('{"scheduler": "http://h:1", "servers": [{"name": "a", '
                         '"addr": "h:2", "cores": 2, "memory": 4294967296}]}')
    slots = Slots(tmp_path / "state" / "slots", 2, str(pool_file))
    argv = ("/x/sccache", "g++", "-c", "a.cpp")
    heavy = Estimate(3 * GiB, 10.0, "history", 3 * GiB)
    fd, i = slots.acquire(wait=0)
    est, where = on_pool(heavy, argv, str(pool_file), i)
    assert (where, est.peak) == ("remote", LOCAL_PART)
    # with 3 GiB out, a second job may be on the same server: 2 × 3 GiB > 4 GiB
    fd2, j = slots.acquire(wait=0)
    est, where = on_pool(heavy, argv, str(pool_file), j)
    assert (where, est.peak) == ("", 3 * GiB)
    # once the first launcher is gone (however it ended) its share is free again
    slots.release(fd)
    est, where = on_pool(heavy, argv, str(pool_file), j)
    assert where == "remote"
    assert on_pool(heavy, argv, "", -1)[1] == ""  # not offered
    unknown = Estimate(0, 0.0, "default", 0)
    assert on_pool(unknown, argv, str(pool_file), j)[1] == ""  # nothing known: not sent
    slots.release(fd2)


def test_a_claim_sees_every_job_out_and_a_new_holder_starts_unclaimed(
        tmp_path: Path) -> None:
    claim_state(tmp_path / "state")
    folder = tmp_path / "state" / "slots"
    pool = _pool((2, 4 * GiB))
    slots = Slots(folder, 2, "")
    fd, i = slots.acquire(wait=0)
    assert claim(folder, i, Share(3 * GiB), pool)
    fd2, j = slots.acquire(wait=0)
    assert not claim(folder, j, Share(GiB), pool)  # 2 jobs could share the server: 6 GiB
    slots.release(fd)
    fd3, k = slots.acquire(wait=0)  # the first slot again: its old share is cleared
    assert k == i and claim(folder, j, Share(GiB), pool)
    slots.release(fd2)
    slots.release(fd3)


def test_a_pool_description_round_trips_and_bad_ones_are_refused() -> None:
    pool = _pool((1, GiB), (2, 2 * GiB))
    assert Pool.from_json(pool.to_json()) == pool
    with pytest.raises(ValueError, match="missing or wrong"):
        Pool.from_json({"servers": []})
    with pytest.raises(ValueError, match="positive"):
        Pool.from_json({"scheduler": "x", "servers": [
            {"name": "a", "addr": "h:1", "cores": 0, "memory": 1}]})


def test_slots_hold_at_most_one_job_per_remote_core(tmp_path: Path) -> None:
    claim_state(tmp_path / "state")
    slots = Slots(tmp_path / "state" / "dist" / "slots", 2, "")
    (a, ia), (b, ib) = slots.acquire(wait=0), slots.acquire(wait=0)
    assert a >= 0 and b >= 0 and {ia, ib} == {0, 1}
    assert slots.acquire(wait=0) == (-1, -1)  # both out
    slots.release(a)
    c, ic = slots.acquire(wait=0)
    assert c >= 0 and ic == ia
    slots.release(b)
    slots.release(c)


def test_only_compiles_through_sccache_with_a_pool_get_slots(tmp_path: Path) -> None:
    claim_state(tmp_path / "state")
    pool = tmp_path / "state" / "pool.json"
    pool.write_text('{"scheduler": "http://h:1", "servers": [{"name": "a", "addr": "h:2", '
                    '"cores": 3, "memory": 3221225472}]}')
    env = {POOL_ENV: str(pool)}
    got = remote_slots(["/x/sccache", "g++", "-c", "a.cpp"], "compile", env)
    assert got is not None and (got.count, got.pool_file) == (3, str(pool))
    assert remote_slots(["/x/ccache", "g++", "-c", "a.cpp"], "compile", env) is None
    assert remote_slots(["/x/sccache", "g++", "-o", "a"], "link", env) is None
    assert remote_slots(["/x/sccache", "g++", "-c", "a.cpp"], "compile", {}) is None
    pool.write_text("not json")
    assert remote_slots(["/x/sccache", "g++", "-c", "a.cpp"], "compile", env) is None


def test_rendered_configs_are_toml_whose_values_cannot_add_keys() -> None:
    evil = 'tok"\ninjected = "yes'
    with pytest.raises(ValueError, match="control character"):
        config.client_conf("http://h:1", evil, "/tc", rewrite_includes=False)
    sneaky = 'tok" injected = "yes'
    data = tomllib.loads(config.client_conf("http://h:1", sneaky, "/tc", rewrite_includes=False))
    assert data["dist"]["auth"] == {"type": "token", "token": sneaky}
    assert data["dist"]["rewrite_includes_only"] is False
    rewrite = tomllib.loads(config.client_conf("http://h:1", "t", "/tc", rewrite_includes=True))
    assert rewrite["dist"]["rewrite_includes_only"] is True
    sched = tomllib.loads(config.scheduler_conf("127.0.0.1:10600", "ct", "key"))
    assert sched["client_auth"]["token"] == "ct" and sched["server_auth"]["secret_key"] == "key"
    server = tomllib.loads(config.server_conf(config.ServerConfig(
        addr="127.0.0.1:10601", scheduler="http://127.0.0.1:10600", toolchains="/t",
        build_dir="/b", bwrap="/usr/bin/bwrap", token="jwt")))
    assert server["builder"]["type"] == "overlay"
    assert server["scheduler_auth"] == {"type": "jwt_token", "token": "jwt"}


def test_a_token_file_others_can_read_is_refused_and_a_token_is_masked(tmp_path: Path
                                                                       ) -> None:
    f = tmp_path / "token"
    f.write_text("s3cr3t-dist-token\n")
    f.chmod(0o644)
    env = {"BUILDER_DIST_TOKEN_FILE": str(f)}
    with pytest.raises(DistError, match="can be read by others"):
        read_token(tmp_path, "http://h:1", env)
    f.chmod(0o600)
    assert read_token(tmp_path, "http://h:1", env) == "s3cr3t-dist-token"
    assert "s3cr3t-dist-token" not in redact("the token is s3cr3t-dist-token")
    with pytest.raises(DistError, match="no client token"):
        read_token(tmp_path, "http://h:1", {})


def test_build_steps_take_the_dist_variables_at_run_time_only() -> None:
    host = {"SCCACHE_CONF": "/s/c.conf", POOL_ENV: "/s/pool.json",
            "SCCACHE_SERVER_PORT": "4300", "BUILDER_DIST_TOKEN": "t"}
    build = stepenv.compose((), {}, "build", host)
    assert build == {"SCCACHE_CONF": "/s/c.conf", POOL_ENV: "/s/pool.json",
                     "SCCACHE_SERVER_PORT": "4300"}  # never the token itself
    assert stepenv.compose((), {}, "test", host) == {}


def test_sccache_counters_say_what_ran_where() -> None:
    st = stats_of({"stats": {"compilations": 7, "dist_compiles": {"h:1": 4, "h:2": 2},
                             "dist_errors": 1, "compile_fails": 0,
                             "cache_hits": {"counts": {"C/C++": 3}},
                             "cache_misses": {"counts": {"C/C++": 5, "CUDA": 2}}}})
    assert (st.remote, st.remote_failures, st.hits, st.misses) == (6, 1, 3, 7)


def test_the_dist_error_is_in_the_remote_family() -> None:
    assert DistError("u", "why", "fix").exit_code == 6


def test_the_report_says_which_files_compiled_on_the_pool() -> None:
    from builder.report.page import tu_table

    jobs = [{"file": "a.cpp", "t_start": 0.0, "t_end": 1.0, "where": "remote"},
            {"file": "b.cpp", "t_start": 0.0, "t_end": 2.0, "where": ""}]
    assert {r["file"]: r["where"] for r in tu_table(jobs)} == {"a.cpp": "pool", "b.cpp": ""}


def test_the_forecast_gives_the_pool_the_jobs_it_can_hold() -> None:
    from builder.memory.forecast import simulate

    light = [(f"l{i}.cpp", GiB, 10.0) for i in range(8)]
    heavy = [(f"h{i}.cpp", 5 * GiB, 10.0) for i in range(2)]
    alone = simulate(light + heavy, 6 * GiB, 2)
    pooled = simulate(light + heavy, 6 * GiB, 4, remote=_pool((2, 4 * GiB)))
    assert alone.remote == 0
    # two light jobs at once fit the 4 GiB server; the heavy ones never leave
    assert 0 < pooled.remote <= 8
    assert pooled.wall < alone.wall
    assert pooled.peak <= 6 * GiB  # a remote job is held here at its local part
    all_out = simulate(light, 3 * GiB, 8, remote=_pool((8, 8 * GiB)))
    assert (all_out.remote, all_out.peak, all_out.wall) == (8, 8 * LOCAL_PART, 10.0)


def test_joining_renders_a_server_conf_for_the_pools_scheduler() -> None:
    from builder.pool.joining import TOKEN_PLACEHOLDER, joining

    j = joining("http://10.0.0.1:10600", "/s/scheduler.conf", "10.0.0.5:10501", 8, 16 * GiB)
    conf = tomllib.loads(j.server_conf)
    assert conf["scheduler_url"] == "http://10.0.0.1:10600"
    assert conf["public_addr"] == "10.0.0.5:10501" and conf["bind_address"] == "0.0.0.0:10501"
    assert conf["builder"]["type"] == "overlay"
    assert conf["scheduler_auth"] == {"type": "jwt_token", "token": TOKEN_PLACEHOLDER}
    assert j.token_command[-2:] == ("--server", "10.0.0.5:10501")
    assert "/s/scheduler.conf" in j.token_command
    assert f"MemoryMax={16 * GiB}" in j.start_command and "AllowedCPUs=0-7" in j.start_command
    assert Pool.from_json({"scheduler": "http://10.0.0.1:10600",
                           "servers": [j.server.to_json()]}).servers[0].cores == 8
    with pytest.raises(ValueError, match="HOST:PORT"):
        joining("http://10.0.0.1:10600", "/s/scheduler.conf", "10.0.0.5", 1, GiB)


def test_the_report_has_a_row_per_pool_server() -> None:
    from builder.report.page import pool_section

    data = {"dist": {"scheduler": "http://h:1", "compiles": 9, "remote": 8, "failed_there": 1,
                     "servers": [{"name": "s1", "addr": "h:2", "cores": 1, "memory": GiB,
                                  "jobs": 8, "peak": 300 << 20, "oom_kills": 0},
                                 {"name": "h:3", "addr": "h:3", "jobs": 0}]},
            "compile_jobs": [{"where": "remote"}] * 9}
    page = pool_section(data)
    assert "8 of 9 compile(s) ran on the pool, 1 failed there" in page
    assert "<td>s1</td><td>h:2</td><td>1</td><td>1,024 MiB</td><td>8</td><td>300 MiB</td>" \
        "<td>0</td>" in page
    assert "<td>h:3</td><td>h:3</td><td>—</td>" in page  # undeclared: no cores, no cap
    assert pool_section({"compile_jobs": []}) == ""
