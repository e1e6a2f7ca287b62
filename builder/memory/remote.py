"""Remote admission: which compile jobs a distributed pool may take, by memory.

A **pool** is a set of sccache-dist build servers, each declaring the CPUs it offers and
the memory it may use (its cgroup cap: its **budget**).  sccache-dist's scheduler places a
job on the server with the fewest assigned jobs per core and knows nothing of memory; a
server's cgroup would OOM-kill a compiler that does not fit.  builder adds memory, decided
on the client before a job leaves, from two facts:

* **where the scheduler can put a job** — on the least-loaded server (jobs per core), so
  with *U* jobs out a server of *c* cores out of the pool's *C* holds at most
  ``(U - 1) * c // C + 1`` of them (it received each while it was the least loaded, and the
  server marks a job complete before the client hears of it);
* **what a job can use there** — its predicted peak (the same estimate local admission
  uses).  An nvcc job with ``--threads k`` (k ≤ its archs) becomes k device compiles that
  sccache sends at once, each its own scheduler job that may land anywhere: it counts as
  k jobs of ``peak / k`` (its threads' peaks add up to its peak).

A job goes remote only when, with it and every job already out, every server's worst case
— that count times the heaviest job out — fits its budget (:func:`fits`); otherwise it
is compiled here, admitted by the local budget as always.  The jobs out are shared by
every launcher of every build step through the pool's slot files (:class:`Slots`: one
lock file per remote core, so at most ``C`` compiles are out at once); the broker that
admits a job records its share in the slot its launcher holds, under one lock
(:func:`claim`), so that two decisions never miss each other.

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

from builder.errors import OwnershipError
from builder.memory.estimate import Estimate

__all__ = ["LOCAL_PART", "POOL_ENV", "Pool", "Server", "Share", "Slots", "claim",
           "fits", "on_pool", "remote_slots", "share_of"]

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


@dataclass(frozen=True)
class Share:
    """What a job out on the pool counts for: ``jobs`` scheduler jobs at once, each
    predicted to peak at ``peak`` bytes."""

    peak: int
    jobs: int = 1


def _threads(argv: tuple[str, ...] | list[str]) -> int:
    """How many device compiles an nvcc command runs at once (``--threads``/``-t``, 0:
    as many as it has archs), capped by its archs; 1 for any other compiler."""
    if not any(Path(a).name == "nvcc" for a in argv[:3]):
        return 1
    n, archs = 1, 0
    for i, a in enumerate(argv):
        v = None
        if a in ("-t", "--threads") and i + 1 < len(argv):
            v = argv[i + 1]
        elif a.startswith(("-t=", "--threads=")):
            v = a.split("=", 1)[1]
        if v is not None:
            n = int(v) if v.isdigit() else 1
        if a in ("-gencode", "--generate-code", "-arch") or a.startswith(
                ("-gencode=", "--generate-code=", "-arch=", "--gpu-architecture=")):
            archs += 1
    archs = max(archs, 1)
    return archs if n == 0 else max(1, min(n, archs))


def share_of(peak: int, argv: tuple[str, ...] | list[str]) -> Share:
    """A job's share of the pool (:class:`Share`) from its predicted peak and command."""
    k = _threads(argv)
    return Share(-(-peak // k), k)


def fits(out: list[Share], pool: Pool) -> bool:
    """Whether the jobs ``out`` may all be on ``pool`` at once: on each server, the most
    jobs the least-loaded placement can give it times the heaviest job fits its budget."""
    if not pool.servers or not out:
        return bool(pool.servers)
    total = sum(s.jobs for s in out)
    heaviest = max(s.peak for s in out)
    cores = pool.cores
    return all(((total - 1) * s.cores // cores + 1) * heaviest <= s.memory
               for s in pool.servers)


def on_pool(est: Estimate, argv: tuple[str, ...], pool_file: str, index: int
            ) -> tuple[Estimate, str]:
    """The broker's hook: a job whose launcher holds remote slot ``index`` of the pool
    described by ``pool_file`` (:attr:`wire.Acquire.dist_pool`) goes there when the pool
    takes it (:func:`claim`), and is held here at its local part (``"remote"``); any other
    job is held as estimated (``""``)."""
    if not pool_file or index < 0 or est.peak <= 0:
        return est, ""
    try:
        pool = Pool.read(Path(pool_file))
    except (OSError, ValueError):
        return est, ""
    if not claim(Path(pool_file).parent / "slots", index, share_of(est.peak, argv), pool):
        return est, ""
    local = LOCAL_PART
    return replace(est, peak=local, reserve=local, cpu=0.0, curve=()), "remote"


def _held_share(path: Path) -> Share | None:
    """The share recorded in a slot file while its launcher holds it; None when the slot
    is free or not claimed (its job is not out)."""
    from builder.util.writer import open_lock

    try:
        fd = open_lock(path)
    except (OSError, OwnershipError):
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            text = os.pread(fd, 64, 0).decode("ascii", "replace").split()
            try:
                return Share(int(text[0]), int(text[1])) if len(text) == 2 else None
            except ValueError:
                return None
        fcntl.flock(fd, fcntl.LOCK_UN)  # free: its last job is over
        return None
    finally:
        os.close(fd)


def claim(folder: Path, index: int, share: Share, pool: Pool) -> bool:
    """Under the pool's admission lock: whether ``share`` fits with every job already out
    (:func:`fits`) and, when it does, its record in slot ``index`` (which the caller's
    launcher holds).  A slot whose launcher ended is free whatever its file says."""
    from builder.util.writer import open_lock

    try:
        lock = open_lock(folder / "admit.lock")
    except (OSError, OwnershipError):
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = [s for j in range(pool.cores) if j != index
               and (s := _held_share(folder / f"slot-{j}.lock")) is not None]
        if not fits([*out, share], pool):
            return False
        try:
            fd = open_lock(folder / f"slot-{index}.lock")
        except (OSError, OwnershipError):
            return False
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{share.peak} {share.jobs}\n".encode(), 0)
        finally:
            os.close(fd)
        return True
    finally:
        os.close(lock)  # closing releases the lock


class Slots:
    """The pool's remote slots, one lock file per remote core in ``folder``: a launcher
    holding one (``fcntl.flock``) may have a job out — the broker that admits the job
    records its share there (:func:`claim`); the kernel frees the slot when the launcher
    ends however it ends, so a killed build leaves no slot taken.  ``pool_file``: the
    pool's description, which the broker reads to admit (:func:`on_pool`)."""

    def __init__(self, folder: Path, count: int, pool_file: str,
                 overflow: bool = False) -> None:
        self.folder, self.count, self.pool_file = folder, count, pool_file
        #: when every slot is taken, compile here at once rather than wait (Pool.overflow)
        self.overflow = overflow

    def acquire(self, wait: float = POLL) -> tuple[int, int]:
        """(the descriptor holding a slot, its index): the first free one, looked for
        every ``wait`` seconds until one is (0: once); (-1, -1) when none is free or the
        folder is unusable.  What a slot's file says of an earlier job is cleared.  The
        pool is used first; whether a compile then waits for a remote slot or runs here
        is :attr:`overflow`'s (docs/dist.md)."""
        from builder.util.writer import make_dirs, open_lock

        try:
            make_dirs(self.folder)
            fds = [open_lock(self.folder / f"slot-{i}.lock") for i in range(self.count)]
        except (OSError, OwnershipError):
            return -1, -1  # the folder is not usable: no remote slot
        free = list(enumerate(fds))
        try:
            while True:
                for i, fd in free:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except OSError:
                        continue
                    free.remove((i, fd))
                    os.ftruncate(fd, 0)  # not claimed until its broker admits it
                    return fd, i
                if wait <= 0:
                    return -1, -1
                time.sleep(wait)
        finally:
            for _, fd in free:
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
    return Slots(Path(where).parent / "slots", pool.cores, where, pool.overflow)
