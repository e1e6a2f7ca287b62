"""The pure parts of distributed compilation: remote admission by memory, the pool's
description, sccache-dist's rendered configurations, the token's handling and the
variables a build step takes at run time."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.errors import DistError
from builder.memory.remote import (
    LOCAL_PART,
    POOL_ENV,
    Pool,
    Server,
    Slots,
    admits,
    local_estimate,
    remote_slots,
    slot_budget,
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


def test_a_job_goes_remote_only_when_it_fits_the_smallest_slot() -> None:
    pool = _pool((4, 8 * GiB), (2, 3 * GiB))  # slots: 2 GiB and 1.5 GiB
    assert [slot_budget(s) for s in pool.servers] == [2 * GiB, 3 * GiB // 2]
    assert admits(3 * GiB // 2, pool)
    assert not admits(3 * GiB // 2 + 1, pool)  # the scheduler might pick the small server
    assert not admits(1, _pool())  # no server: nothing goes remote
    assert (pool.cores, pool.memory) == (6, 11 * GiB)


def test_the_broker_holds_only_the_local_part_of_a_remote_job() -> None:
    assert local_estimate(GiB, 2 * GiB) == LOCAL_PART
    assert local_estimate(3 * GiB, 2 * GiB) is None
    assert local_estimate(0, 2 * GiB) is None  # nothing known: not sent away
    assert local_estimate(GiB, 0) is None


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
    slots = Slots(tmp_path / "state" / "dist" / "slots", 2, GiB)
    a, b = slots.acquire(wait=0), slots.acquire(wait=0)
    assert a >= 0 and b >= 0
    assert slots.acquire(wait=0) == -1  # both out
    slots.release(a)
    c = slots.acquire(wait=0)
    assert c >= 0
    slots.release(b)
    slots.release(c)


def test_only_compiles_through_sccache_with_a_pool_get_slots(tmp_path: Path) -> None:
    claim_state(tmp_path / "state")
    pool = tmp_path / "state" / "pool.json"
    pool.write_text('{"scheduler": "http://h:1", "servers": [{"name": "a", "addr": "h:2", '
                    '"cores": 3, "memory": 3221225472}]}')
    env = {POOL_ENV: str(pool)}
    got = remote_slots(["/x/sccache", "g++", "-c", "a.cpp"], "compile", env)
    assert got is not None and (got.count, got.slot) == (3, GiB)
    assert remote_slots(["/x/ccache", "g++", "-c", "a.cpp"], "compile", env) is None
    assert remote_slots(["/x/sccache", "g++", "-o", "a"], "link", env) is None
    assert remote_slots(["/x/sccache", "g++", "-c", "a.cpp"], "compile", {}) is None
    pool.write_text("not json")
    assert remote_slots(["/x/sccache", "g++", "-c", "a.cpp"], "compile", env) is None


def test_rendered_configs_are_toml_whose_values_cannot_add_keys() -> None:
    evil = 'tok"\ninjected = "yes'
    with pytest.raises(ValueError, match="control character"):
        config.client_conf("http://h:1", evil, "/tc")
    sneaky = 'tok" injected = "yes'
    data = tomllib.loads(config.client_conf("http://h:1", sneaky, "/tc"))
    assert data["dist"]["auth"] == {"type": "token", "token": sneaky}
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
