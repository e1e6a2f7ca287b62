"""A build step under the memory broker: the broker serves the compile launchers while
the build runs; its job report (and any compile killed out of memory) is kept."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import tempfile
from dataclasses import replace
from pathlib import Path

from builder.execute.host import StepHost, safe_name
from builder.plan.model import Step
from builder.plan.payloads import CompileJobs
from builder.util.files import atomic_write, remove_orphans
from builder.util.scratch import private_dir

__all__ = ["build", "compiler_cache_stats", "socket_dir"]


def socket_dir() -> Path:
    """The folder for the brokers' sockets: ``builder-<uid>`` in the temporary folder, private
    to this user, without the sockets of builds that were killed (SIGKILL leaves its socket
    behind: one per build step, for ever).  A folder of that name that is not this user's
    own private folder is not used (someone else could watch the sockets there): the
    temporary folder itself then is, as before."""
    root = Path(tempfile.gettempdir())
    folder = root / f"builder-{os.getuid()}"
    if not private_dir(folder):
        return root
    remove_orphans(folder, "builder-", stat.S_ISSOCK)
    return folder


def build(ex: StepHost, step: Step) -> None:
    """A CMake build with its memory broker running for the compile launchers."""
    from builder.memory.broker import Broker
    from builder.memory.jobs import learned_lines, oom_kills, requeues
    from builder.memory.launcher import remove_stale_job_dirs

    if not isinstance(step.payload, CompileJobs):
        ex.commands(step)
        return
    cfg, prediction = step.payload.memory, step.payload.prediction
    env = ex.step_env(step)
    remove_stale_job_dirs()  # those of compiles killed with their launcher
    remove_stale_job_dirs(Path(env["TMPDIR"]))  # the steps' temporary folder
    # A short path (Unix socket names are limited to ~100 bytes), unique per process.
    sock = socket_dir() / f"builder-{os.getpid()}-{safe_name(step.variant)[-40:]}.sock"
    broker = Broker(sock, cfg)
    broker.start()
    ex.broker = broker
    cache_before = compiler_cache_stats(env)
    try:
        ex.commands(replace(step, env=(*step.env, ("BUILDER_BROKER", str(sock)))))
    finally:
        ex.broker = None
        broker.stop()
        report = ex.ws.reports / f"{safe_name(step.id)}.jobs.json"
        cache = _stats_delta(cache_before, compiler_cache_stats(env))
        if cache:
            ex.cache_stats.append(cache)
        jobs = broker.report()
        ex.oom += [f"{step.id}: {line}" for line in oom_kills(jobs)]
        ex.memory_notes += [f"{step.id}: {line}" for line in requeues(jobs)]
        ex.memory_notes += [f"{step.id}: {line}" for line in learned_lines(jobs)]
        if broker.failure:  # a bug of ours: it cost time, and it must be seen
            ex.memory_notes.append(f"{step.id}: the memory scheduler failed ({broker.failure}); "
                               "the compiles after it ran one at a time — please report it")
        atomic_write(report, json.dumps({"step": step.id, "budget": cfg.budget,
                                          "wall0": broker.wall0, "compiler_cache": cache,
                                          "slots": cfg.slots,
                                          "most_used": broker.most_used,
                                          "scheduler_failure": broker.failure,
                                          "prediction": dataclasses.asdict(prediction),
                                          "jobs": jobs}, indent=1))


def compiler_cache_stats(env: dict[str, str]) -> dict[str, int] | None:
    """ccache's counters for the cache a build step uses (None without ccache); ``env``:
    the step's whole environment, so that ccache reads the configuration the step's
    compiles read."""
    if "CCACHE_DIR" not in env:
        return None
    from builder.host.probe import find_executable
    from builder.util.runner import capture

    rc, out = capture([find_executable("ccache") or "ccache", "--print-stats"],
                      env=env)
    if rc != 0:
        return None
    stats: dict[str, int] = {}
    for line in out.splitlines():
        key, _, value = line.partition("\t")
        if value.strip().isdigit():
            stats[key] = int(value)
    return stats


def _stats_delta(before: dict[str, int] | None, after: dict[str, int] | None
                 ) -> dict[str, int]:
    if before is None or after is None:
        return {}
    d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    hits = d.get("direct_cache_hit", 0) + d.get("preprocessed_cache_hit", 0)
    return {"hits": hits, "misses": d.get("cache_miss", 0),
            "remote_hits": d.get("remote_storage_hit", 0)}
