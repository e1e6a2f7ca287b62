"""``builder build --dist URL``: compile through sccache in distributed mode.

The setting comes from ``--dist URL`` or the host/CI setting ``BUILDER_DIST`` (recipes
stay data).  The scheduler's client token comes from ``BUILDER_DIST_TOKEN``, from a
0600 file named by ``BUILDER_DIST_TOKEN_FILE``, or — for the pool ``builder dist start``
made here — from that pool's token file; never from the command line.  The value is
remembered by the one redactor (:mod:`builder.util.secrets`), so no output shows it.

Before the build, :func:`prepare` asks the scheduler whether it is there and takes the
token.  Unreachable or without servers: one warning, and the build goes on here.  A URL
that is no scheduler, or a refused token: :class:`~builder.errors.DistError` (exit 6).
Otherwise it writes sccache's client configuration (0600) and the pool's description
under ``<state>/dist/client/`` and sets, in this process's environment, the variables
that the build steps take at run time, unkeyed and never written into a plan
(:data:`builder.resolve.stepenv.RUNTIME_PASS`): ``SCCACHE_CONF``, ``SCCACHE_SERVER_PORT``
(an sccache server of this build's own, so that no daemon started with another
configuration serves it) and ``BUILDER_DIST_POOL`` (the memory launcher's admission).
:meth:`Session.finish` reads sccache's counters — how many compiles ran on which server,
how many failed there and were compiled here again — and stops that sccache server.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from builder.errors import DistError
from builder.memory.remote import POOL_ENV, Pool
from builder.pool import config, farm, scheduler
from builder.util import writer

__all__ = ["DIST_ENV", "LOCAL_ENV", "POOL_FILE_ENV", "REWRITE_ENV", "RUNTIME", "TOKEN_ENV",
           "TOKEN_FILE_ENV", "TOOLCHAINS_ENV", "Session", "Stats", "describe", "pool_for",
           "pool_record", "prepare", "read_token", "stats_of"]

DIST_ENV = "BUILDER_DIST"
TOKEN_ENV = "BUILDER_DIST_TOKEN"
TOKEN_FILE_ENV = "BUILDER_DIST_TOKEN_FILE"
#: a JSON pool description (servers, cores, memory) for a pool not started here
POOL_FILE_ENV = "BUILDER_DIST_POOL_FILE"
#: "0": a compile waits for a remote slot rather than run here when the pool is busy
LOCAL_ENV = "BUILDER_DIST_LOCAL"
#: where sccache keeps the toolchain packages it sends to the pool (default: the state's
#: ``dist/client/toolchains``): one folder for every project of a machine packs each
#: compiler once (an nvcc toolchain is hundreds of MB)
TOOLCHAINS_ENV = "BUILDER_DIST_TOOLCHAINS"
#: "0": the client fully preprocesses what it sends.  By default it only inlines the
#: headers (sccache's ``rewrite_includes_only``: gcc's ``-fdirectives-only``) and the
#: build servers expand the macros as they compile — a torch TU's preprocessing, the
#: part of a distributed compile that stays on the client, takes ~0.5 s instead of ~2.5 s
REWRITE_ENV = "BUILDER_DIST_REWRITE_INCLUDES"
#: what a build step takes from this process at run time while --dist is on
RUNTIME = ("SCCACHE_CONF", "SCCACHE_SERVER_PORT", POOL_ENV)


def _local_farm(state: Path, url: str) -> bool:
    try:
        rec = json.loads((farm.farm_dir(state) / "farm.json").read_text())
    except (OSError, ValueError):
        return False
    return str(rec.get("url", "")).rstrip("/") == url


def read_token(state: Path, url: str, environ: Mapping[str, str]) -> str:
    """The client token, from the environment, a 0600 file or the local pool's file."""
    from builder.util.secrets import remember

    if environ.get(TOKEN_ENV):
        return remember("dist-token", environ[TOKEN_ENV])
    path = Path(environ[TOKEN_FILE_ENV]) if environ.get(TOKEN_FILE_ENV) else \
        farm.token_file(state) if _local_farm(state, url) else None
    if path is None:
        raise DistError(f"--dist {url}", "no client token for the scheduler",
                        f"set {TOKEN_ENV}, or {TOKEN_FILE_ENV} to a 0600 file holding it")
    try:
        st = path.stat()
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise DistError(str(path), f"the token file cannot be read ({exc.strerror})",
                        f"point {TOKEN_FILE_ENV} at a readable file") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise DistError(str(path), "the token file can be read by others",
                        f"chmod 600 {path}")
    if not token:
        raise DistError(str(path), "the token file is empty", "write the token into it")
    remember("dist-token", token)
    return token


def pool_for(state: Path, url: str, environ: Mapping[str, str]) -> tuple[Pool | None, str]:
    """The pool's declared servers and budgets, and where they were read (None: none
    declared — jobs are then sent by CPU only, as sccache-dist does)."""
    path = Path(environ[POOL_FILE_ENV]) if environ.get(POOL_FILE_ENV) else \
        farm.farm_dir(state) / "pool.json" if _local_farm(state, url) else None
    if path is None:
        return None, ""
    try:
        return Pool.read(path), str(path)
    except OSError as exc:
        raise DistError(str(path), f"the pool description cannot be read ({exc.strerror})",
                        f"point {POOL_FILE_ENV} at the pool's JSON") from None
    except ValueError as exc:
        raise DistError(str(path), f"not a pool description: {exc}",
                        'write {"scheduler": URL, "servers": [{"name", "addr", "cores", '
                        '"memory"}]} (docs/dist.md)') from None


def describe(pool: Pool | None, url: str) -> str:
    """One line about the pool, for ``builder host`` and ``builder plan``."""
    from builder.workspace.prune import human

    if pool is None:
        return f"{url} (no pool description: jobs are sent by CPU load only)"
    servers = ", ".join(f"{s.name} {s.cores} core(s) {human(s.memory)}" for s in pool.servers)
    return (f"{url}: {len(pool.servers)} server(s), {pool.cores} core(s), "
            f"{human(pool.memory)} — {servers}")


@dataclass
class Stats:
    """What sccache counted for one build."""

    compiles: int = 0  # compilations sccache ran (a cache hit is none)
    distributed: dict[str, int] | None = None  # server → compiles it ran
    remote_failures: int = 0  # failed there, compiled here again
    hits: int = 0
    misses: int = 0
    failed: int = 0  # compiles that failed (errors in the source)

    @property
    def remote(self) -> int:
        return sum((self.distributed or {}).values())


def stats_of(data: Mapping[str, Any]) -> Stats:
    """:class:`Stats` from ``sccache --show-stats --stats-format json``."""
    s = data.get("stats", {})

    def total(key: str) -> int:
        return sum(int(v) for v in (s.get(key, {}).get("counts", {}) or {}).values())

    return Stats(compiles=int(s.get("compilations", 0)),
                 distributed={str(k): int(v) for k, v in (s.get("dist_compiles") or {}).items()},
                 remote_failures=int(s.get("dist_errors", 0)), hits=total("cache_hits"),
                 misses=total("cache_misses"), failed=int(s.get("compile_fails", 0)))


@dataclass
class Session:
    """One build's use of the pool."""

    url: str
    pool: Pool | None
    env: dict[str, str]  # what the steps take at run time (RUNTIME)
    sccache: str

    def stats(self) -> Stats | None:
        res = subprocess.run([self.sccache, "--show-stats", "--stats-format", "json"],
                             capture_output=True, text=True, timeout=60, check=False,
                             env={**os.environ, **self.env})
        try:
            return stats_of(json.loads(res.stdout)) if res.returncode == 0 else None
        except ValueError:
            return None

    def finish(self) -> Stats | None:
        """sccache's counters for this build; its sccache server stopped."""
        got = self.stats()
        subprocess.run([self.sccache, "--stop-server"], capture_output=True, timeout=60,
                       check=False, env={**os.environ, **self.env})
        return got


def pool_record(state: Path, url: str, pool: Pool | None, st: Stats) -> dict[str, Any]:
    """What a build did on the pool, for its record and report: per server the compiles
    sccache ran there and, for the pool ``builder dist start`` made here, its cgroup's
    peak (since it started) and OOM kills; a server not declared appears by address."""
    ran = dict(st.distributed or {})
    local = {s["addr"]: s for s in farm.farm_status(state).get("servers", [])} \
        if _local_farm(state, url) else {}
    servers = []
    for s in pool.servers if pool else ():
        row: dict[str, Any] = {**s.to_json(), "jobs": ran.pop(s.addr, 0)}
        row.update({k: local[s.addr][k] for k in ("peak", "oom_kills")
                    if k in local.get(s.addr, {})})
        servers.append(row)
    servers += [{"name": addr, "addr": addr, "jobs": n} for addr, n in sorted(ran.items())]
    return {"scheduler": url, "compiles": st.compiles, "remote": st.remote,
            "failed_there": st.remote_failures, "servers": servers}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def prepare(state: Path, url: str, environ: MutableMapping[str, str],
            cache_env: Mapping[str, str]) -> Session | None:
    """Check the scheduler and set the steps' run-time variables in ``environ``; None when
    the build goes on here (said once on stderr).  ``cache_env``: sccache's settings for
    the workspace (its cache folder…), with which this build's sccache server is started
    here — not by a compile, which would leave it in the build's memory cgroup."""
    url = scheduler.check_url(url)
    for name in RUNTIME:  # only builder's own --dist setting reaches a step
        environ.pop(name, None)
    try:
        st = scheduler.status(url)
    except scheduler.Unreachable as exc:
        print(f"warning: the distributed-compilation scheduler {url} cannot be reached "
              f"({exc}); compiling here", file=sys.stderr)
        return None
    token = read_token(state, url, environ)
    scheduler.check_token(url, token)
    if st.servers == 0:
        print(f"warning: the distributed-compilation scheduler {url} has no build server; "
              f"compiling here", file=sys.stderr)
        return None
    pool, _ = pool_for(state, url, environ)
    d = state / "dist" / "client"
    conf = d / "sccache.conf"
    shared = environ.get(TOOLCHAINS_ENV, "")
    toolchains = writer.make_dirs(Path(shared).expanduser().absolute(), named=True) \
        if shared else writer.make_dirs(d / "toolchains")
    writer.write_text(conf, config.client_conf(
                          url, token, str(toolchains),
                          rewrite_includes=environ.get(REWRITE_ENV, "1") != "0"),
                      mode=0o600)
    env = {"SCCACHE_CONF": str(conf), "SCCACHE_SERVER_PORT": str(_free_port())}
    if pool is not None:
        pool = replace(pool, overflow=environ.get(LOCAL_ENV, "1") != "0")
        writer.write_text(d / "pool.json", json.dumps(pool.to_json(), indent=1))
        env[POOL_ENV] = str(d / "pool.json")
    session = Session(url, pool, env, farm.find_tool("sccache"))
    res = subprocess.run([session.sccache, "--start-server"], capture_output=True, text=True,
                         timeout=60, check=False, env={**environ, **cache_env, **env})
    if res.returncode != 0:
        raise DistError("sccache --start-server", f"failed: {(res.stderr or res.stdout)[-300:]}",
                        f"read {conf} and sccache's message above")
    environ.update(env)
    return session
