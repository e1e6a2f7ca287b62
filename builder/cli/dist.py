"""``builder dist start|status|stop`` and the command line's side of ``--dist``: the
session a build runs with, its summary, and the pool line ``builder host`` and ``builder
plan`` print."""

from __future__ import annotations

import argparse
import json
import os
import sys

from builder.errors import UsageError
from builder.workspace.paths import Workspace

__all__ = ["begin", "cmd_dist", "end", "host_json", "plan_pool", "pool_line", "scheduler_line"]


def cmd_dist(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.pool import farm
    from builder.pool.client import describe
    from builder.workspace.prune import human

    if args.dist_command == "start":
        if args.servers < 1 or args.cores < 1:
            raise UsageError("--servers and --cores take 1 or more")
        pool = farm.start(ws.state, farm.FarmRequest(
            servers=args.servers, cores=args.cores, memory=args.memory, port=args.port,
            bind=args.bind, timeout=args.timeout))
        d = farm.farm_dir(ws.state)
        print(f"pool ready: {describe(pool, pool.scheduler)}")
        bare = [s["name"] for s in farm.farm_status(ws.state)["servers"] if "cgroup" not in s]
        if bare:
            print(f"warning: {', '.join(bare)} run(s) without a memory cap (no writable "
                  f"memory cgroup: {d}/server-N.log says why); their budgets are declared, "
                  f"not enforced", file=sys.stderr)
        print(f"  build with: builder build --dist {pool.scheduler} …  (the token is read "
              f"from {farm.token_file(ws.state)})")
        print(f"  configs and logs: {d}")
        print("  a server on another host: `builder dist server HOST:PORT` prints its "
              "token command, server.conf, memory cap and pool-file entry (start the "
              "scheduler with --bind on an address that host reaches)")
        return 0
    if args.dist_command == "server":
        return _print_server(args, ws)
    if args.dist_command == "stop":
        stopped = farm.stop(ws.state)
        print(f"stopped: {', '.join(stopped)}" if stopped else "no pool is running here")
        return 0
    st = farm.farm_status(ws.state)
    if args.format == "json":
        print(json.dumps(st, indent=1))
        return 0
    if not st.get("url"):
        print("no pool was started here (`builder dist start`)")
        return 0
    sched = st.get("scheduler", {})
    seen = sched.get("error") or (f"{sched['servers']} server(s), {sched['cpus']} CPU(s), "
                                  f"{sched['in_progress']} job(s) in progress")
    print(f"scheduler: {st['url']} — {'running' if st['running'] else 'stopped'}; {seen}")
    print(f"token:     {st['token_file']}")
    for s in st["servers"]:
        cap = (f"cgroup {s['cgroup']}, peak {human(s['peak'])}, OOM kills {s['oom_kills']}"
               if "cgroup" in s else "no cgroup")
        print(f"  {s['name']:9} {s['addr']:21} {s['cores']} core(s) {human(s['memory'])}  "
              f"{'running' if s['running'] else 'stopped'}; {cap}")
    return 0


def _print_server(args: argparse.Namespace, ws: Workspace) -> int:
    """``builder dist server HOST:PORT``: how that host joins the pool; nothing started."""
    from builder.pool import farm
    from builder.pool.joining import joining
    from builder.pool.scheduler import check_url

    url = args.scheduler or str(farm.farm_status(ws.state).get("url", ""))
    if not url:
        raise UsageError("no pool was started here: name its scheduler with --scheduler URL")
    url = check_url(url)
    conf = farm.farm_dir(ws.state) / "scheduler.conf"
    try:
        j = joining(url, str(conf) if conf.is_file() else "scheduler.conf", args.addr,
                    args.cores, args.memory, args.name)
    except ValueError as exc:
        raise UsageError(f"builder dist server: {exc}; give the new server's HOST:PORT") \
            from None
    if args.format == "json":
        print(json.dumps({"scheduler": url, **j.to_json()}, indent=1))
        return 0
    if url.split("//", 1)[-1].startswith(("127.", "localhost")):
        print(f"warning: the scheduler {url} listens on loopback: another host cannot reach "
              f"it (`builder dist start --bind 0.0.0.0`)", file=sys.stderr)
    sys.stdout.write(j.text(str(conf) if conf.is_file() else "scheduler.conf"))
    return 0


def pool_line(args: argparse.Namespace, ws: Workspace) -> str:
    """``dist: …`` for ``builder host`` and ``builder plan``: the declared pool (read,
    never asked: planning talks to no server); "" without --dist."""
    from builder.pool.client import describe, pool_for
    from builder.pool.scheduler import check_url

    url = getattr(args, "dist", "")
    if not url:
        return ""
    url = check_url(url)
    pool, _ = pool_for(ws.state, url, os.environ)
    return f"dist:     {describe(pool, url)}"


def host_json(args: argparse.Namespace, ws: Workspace) -> dict[str, object] | None:
    """``builder host --format json``'s ``dist``: the declared pool (servers, cores,
    memory) and what the scheduler says of it now; None without --dist."""
    from builder.pool import scheduler
    from builder.pool.client import pool_for

    if not getattr(args, "dist", ""):
        return None
    url = scheduler.check_url(args.dist)
    pool, where = pool_for(ws.state, url, os.environ)
    out: dict[str, object] = {"scheduler": url, "pool_file": where,
                              "pool": {**pool.to_json(), "cores": pool.cores,
                                       "memory": pool.memory} if pool else None}
    try:
        st = scheduler.status(url)
        out["status"] = {"servers": st.servers, "cpus": st.cpus,
                         "in_progress": st.in_progress}
    except scheduler.Unreachable as exc:
        out["status"] = {"error": f"the scheduler cannot be reached ({exc})"}
    return out


def scheduler_line(url: str) -> str:
    """What the scheduler at ``url`` says of its pool now (``builder host``)."""
    from builder.pool import scheduler

    try:
        st = scheduler.status(scheduler.check_url(url))
    except scheduler.Unreachable as exc:
        return f"          the scheduler cannot be reached ({exc})"
    return (f"          the scheduler counts {st.servers} server(s), {st.cpus} CPU(s), "
            f"{st.in_progress} job(s) in progress")


def begin(args: argparse.Namespace, ws: Workspace) -> object | None:
    """The build's pool session (None: compiling here); ``--dist`` implies sccache."""
    from builder.pool.client import RUNTIME, prepare

    if not args.dist:
        for name in RUNTIME:  # a shell's own sccache client setting does not reach steps
            os.environ.pop(name, None)
        return None
    if args.compiler_cache in ("ccache", "none"):
        raise UsageError(f"--dist compiles through sccache; drop --compiler-cache "
                         f"{args.compiler_cache}")
    from builder.resolve.cmakesteps import sccache_env

    args.compiler_cache = "sccache"
    session = prepare(ws.state, args.dist, os.environ, dict(sccache_env(ws, args.cache_remote)))
    # the plan's forecast and -j count the pool's slots (resolve.request.Request.dist)
    args.dist_pool = session.pool if session is not None else None
    return session


def plan_pool(args: argparse.Namespace, ws: Workspace) -> None:
    """``builder plan --dist URL``: the declared pool (read, never asked: planning talks
    to no server) for the plan's forecast and -j, as the build will have it."""
    from builder.pool.client import pool_for
    from builder.pool.scheduler import check_url

    if getattr(args, "dist", ""):
        args.dist_pool, _ = pool_for(ws.state, check_url(args.dist), os.environ)


def end(session: object | None, ws: Workspace) -> dict[str, object] | None:
    """Say how much of the build ran on the pool, and stop its sccache server; what ran
    where, for the build's record (None: nothing to say)."""
    from builder.pool.client import Session, pool_record

    if not isinstance(session, Session):
        return None
    st = session.finish()
    for name in session.env:  # this process as it was (the CLI may run in-process)
        os.environ.pop(name, None)
    if st is None:
        print("dist: sccache's counters could not be read", file=sys.stderr)
        return None
    if not (st.compiles or st.hits or st.misses):
        return None  # nothing was compiled through sccache
    where = ", ".join(f"{k} {v}" for k, v in sorted((st.distributed or {}).items()))
    print(f"dist: {st.remote} of {st.compiles} compile(s) ran on the pool"
          + (f" ({where})" if where else "")
          + f", {st.remote_failures} failed there and were compiled here"
          + f"; cache {st.hits} hit(s), {st.misses} miss(es)")
    return pool_record(ws.state, session.url, session.pool, st)
