"""Remote admission: which compile jobs a distributed pool may take, by memory.

A **pool** is a set of sccache-dist build servers, each declaring the CPUs it offers and
the memory it may use (its cgroup cap: its **budget**).  sccache-dist's scheduler places a
job on the server with the fewest running jobs per core and knows nothing of memory; a
server's cgroup would OOM-kill a compiler that does not fit.  builder adds memory with two
rules, both decided on the client before a job leaves:

* **a slot's budget** — a server runs at most one job per core, so each of its jobs may
  use ``budget / cores`` (:func:`slot_budget`).  A job goes remote only when its predicted
  peak fits the smallest slot budget of the pool (any server may receive it: the
  scheduler cannot be told which one); a heavier job runs here, admitted by the local
  budget as always (:func:`admits`).
* **one job per remote core** — at most ``sum(cores)`` jobs are out at once
  (:class:`Slots`, shared by every launcher of every build step through lock files).
  With no more jobs than cores, a least-loaded placement never gives a server more jobs
  than it has cores, so no server holds more than ``cores × slot budget ≤ budget``.

A remote job costs the client only its local part (the preprocessor run and sccache's
packaging: :data:`LOCAL_PART`), which is what the local broker reserves for it.  The
guarantee holds while this client is the pool's only user: a server shared with other
clients gets jobs builder does not count (docs/dist.md says so).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from builder.memory.estimate import Estimate

__all__ = ["LOCAL_PART", "POOL_ENV", "Pool", "Server", "Slots", "admits", "local_estimate",
           "on_pool", "remote_slots", "slot_budget"]

#: names the pool file (``pool.json``) in a build step's environment: set by
#: ``builder build --dist``, read by the memory launcher
POOL_ENV = "BUILDER_DIST_POOL"
#: what the client holds for a job compiled remotely: the preprocessor (a torch TU
#: preprocesses in ~0.1–0.2 GB) and sccache packaging its inputs
LOCAL_PART = 256 << 20
#: seconds between looks for a free remote slot
POLL = 0.05


@dataclass(frozen=True)
class Server:
    """One build server: where it listens, the CPUs it offers and its memory budget."""

    name: str
    addr: str  # host:port
    cores: int
    memory: int  # bytes: its cgroup cap

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "addr": self.addr, "cores": self.cores,
                "memory": self.memory}


@dataclass(frozen=True)
class Pool:
    """A scheduler and the build servers that work for it."""

    scheduler: str  # its URL, http://host:port
    servers: tuple[Server, ...]
    #: a compile that finds every remote slot taken runs here (under local admission)
    #: rather than wait for one: the client's own CPUs work too.  ``BUILDER_DIST_LOCAL=0``
    #: keeps every compile that fits the pool on the pool (a client whose CPUs are busy
    #: preprocessing for it)
    overflow: bool = True

    @property
    def cores(self) -> int:
        return sum(s.cores for s in self.servers)

    @property
    def memory(self) -> int:
        return sum(s.memory for s in self.servers)

    def to_json(self) -> dict[str, Any]:
        return {"scheduler": self.scheduler, "servers": [s.to_json() for s in self.servers],
                "overflow": self.overflow}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Pool:
        """A pool from its JSON form; ValueError names what is wrong."""
        try:
            servers = tuple(Server(str(s["name"]), str(s["addr"]), int(s["cores"]),
                                   int(s["memory"])) for s in data["servers"])
            pool = Pool(str(data["scheduler"]), servers, bool(data.get("overflow", True)))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a pool description (missing or wrong {exc})") from None
        bad = [s.name for s in servers if s.cores < 1 or s.memory < 1]
        if bad:
            raise ValueError(f"server(s) {', '.join(bad)}: cores and memory must be positive")
        return pool

    @staticmethod
    def read(path: Path) -> Pool:
        return Pool.from_json(json.loads(path.read_text(encoding="utf-8")))


def slot_budget(server: Server) -> int:
    """What one job on ``server`` may use: its budget shared by its cores."""
    return server.memory // server.cores


def admits(peak: int, pool: Pool) -> bool:
    """Whether a job predicted to peak at ``peak`` bytes may be compiled by ``pool``:
    it must fit a slot of every server, since the scheduler chooses the server."""
    return bool(pool.servers) and peak <= min(slot_budget(s) for s in pool.servers)


def local_estimate(peak: int, slot: int) -> int | None:
    """What the local broker reserves for a job offered to the pool (``slot``: the bytes a
    job may use there, 0 when not offered): its local part when it goes remote, None when
    it must run here (not offered, or too heavy for the pool's smallest slot)."""
    return LOCAL_PART if 0 < peak <= slot else None


def on_pool(est: Estimate, slot: int) -> tuple[Estimate, str]:
    """The broker's hook: a job offered to the pool (``slot`` > 0, :attr:`wire.Acquire.
    dist_slot`) that fits goes there, and is held here at its local part (``"remote"``);
    any other job is held as estimated (``""``)."""
    local = local_estimate(est.peak, slot)
    if local is None:
        return est, ""
    return replace(est, peak=local, reserve=local, cpu=0.0, curve=()), "remote"


class Slots:
    """The pool's remote slots, one lock file per remote core in ``folder``: a launcher
    holding one (``fcntl.flock``) has a job out; the kernel frees it when the launcher
    ends however it ends, so a killed build leaves no slot taken.  ``slot``: the bytes a
    job may use on the pool (:func:`admits`)."""

    def __init__(self, folder: Path, count: int, slot: int, overflow: bool = False) -> None:
        self.folder, self.count, self.slot = folder, count, slot
        #: when every slot is taken, compile here at once rather than wait (Pool.overflow)
        self.overflow = overflow

    def acquire(self, wait: float = POLL) -> int:
        """The descriptor holding a slot: the first free one, looked for every ``wait``
        seconds until one is (0: once); -1 when none is free or the folder is unusable.
        The pool is used first; whether a compile then waits for a remote slot or runs
        here is :attr:`overflow`'s (docs/dist.md)."""
        from builder.util.writer import make_dirs, open_lock

        try:
            make_dirs(self.folder)
            fds = [open_lock(self.folder / f"slot-{i}.lock") for i in range(self.count)]
        except OSError:
            return -1  # the folder is not usable: no remote slot
        try:
            while True:
                for fd in fds:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except OSError:
                        continue
                    fds.remove(fd)
                    return fd
                if wait <= 0:
                    return -1
                time.sleep(wait)
        finally:
            for fd in fds:
                os.close(fd)

    @staticmethod
    def release(fd: int) -> None:
        if fd >= 0:
            os.close(fd)  # closing the descriptor releases its lock


def remote_slots(argv: list[str], kind: str,
                 environ: Mapping[str, str] = os.environ) -> Slots | None:
    """The pool's slots for a compile run through sccache while ``builder build --dist``
    names a pool (:data:`POOL_ENV`); None for anything else (a link, ccache, no pool, a
    pool file that cannot be read: the job then runs as without a pool)."""
    where = environ.get(POOL_ENV, "")
    if kind != "compile" or not where or not argv or Path(argv[0]).name != "sccache":
        return None
    try:
        pool = Pool.read(Path(where))
    except (OSError, ValueError):
        return None
    if not pool.servers:
        return None
    return Slots(Path(where).parent / "slots", pool.cores,
                 min(slot_budget(s) for s in pool.servers), pool.overflow)
