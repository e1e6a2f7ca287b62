"""One compile job in a cgroup of its own, below the build's memory cgroup.

The build's cgroup (:mod:`.cgroup`, capped at the budget) is named to every process of
the build by ``$BUILDER_CGROUP``.  Each launcher makes a leaf ``job-<pid>-<n>`` in it and
starts its compiler there (the child joins before it execs, so that no process of the
compile is ever outside it).  The leaf gives what sampling the process tree cannot:

* the kernel's exact peak of the job's memory (``memory.peak`` on v2,
  ``memory.max_usage_in_bytes`` on v1), less the page cache it still holds (headers read
  first by this job, its object file: reclaimable, not what runs a machine out of memory);
* the job's own OOM kills (``memory.events`` / ``memory.oom_control``: the victim's
  group counts them), so a kill is told from a compiler's own error by the kernel's word;
* freezing: ``cgroup.freeze`` (v2) or a leaf of the v1 freezer hierarchy, which stops
  every process of the job at once — a process forked meanwhile included — where
  SIGSTOP has to chase the tree;
* killing: ``cgroup.kill`` (v2) or SIGKILL to every process of the leaf.

The v2 rule that a cgroup with controllers enabled for its children holds no process
itself is why the build's own processes live in ``<build>/main`` there (:mod:`.cgroup`).
Where no leaf can be made (no ``$BUILDER_CGROUP``, not writable), :func:`make` returns
None and the launcher measures and signals the process tree as before.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENV", "FREEZER_V1", "JobGroup", "anon_bytes", "make", "oom_kills_in", "peak_of",
           "read_stat"]

#: the build's memory cgroup, set by ``python -m builder.memory.cgroup`` for its command
ENV = "BUILDER_CGROUP"
FREEZER_V1 = Path("/sys/fs/cgroup/freezer")

_counter = itertools.count()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, text: str) -> bool:
    try:
        with open(path, "w") as f:
            f.write(text)
        return True
    except OSError:
        return False


def peak_of(group: Path) -> int:
    """The kernel's peak of ``group``'s memory, page cache included (v2 ``memory.peak``,
    v1 ``memory.max_usage_in_bytes``); 0 where neither can be read."""
    for name in ("memory.peak", "memory.max_usage_in_bytes"):
        text = _read(group / name).strip()
        if text.isdigit():
            return int(text)
    return 0


def oom_kills_in(group: Path) -> int:
    """The ``oom_kill`` count of ``group`` (v2 ``memory.events``: the group and below; v1
    ``memory.oom_control``: the group's own victims only)."""
    for name in ("memory.events", "memory.oom_control"):
        for line in _read(group / name).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return 0


def read_stat(group: Path) -> dict[str, int]:
    """``memory.stat`` of ``group`` as numbers."""
    out: dict[str, int] = {}
    for line in _read(group / "memory.stat").splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[key] = int(value)
    return out


def anon_bytes(group: Path) -> int:
    """Memory of ``group`` (its descendants included) that reclaim cannot free: anonymous
    and shared-memory pages — what an OOM kill is about (0: unreadable).  Page cache is
    left out: the kernel drops it before it kills."""
    stat = read_stat(group)
    if "anon" in stat:  # v2
        return stat["anon"] + stat.get("shmem", 0)
    return stat.get("total_rss", stat.get("rss", 0)) + stat.get("total_shmem",
                                                               stat.get("shmem", 0))


def _freezer_base() -> Path | None:
    """This process's folder in the v1 freezer hierarchy (None: not mounted/writable)."""
    if not FREEZER_V1.is_dir():
        return None
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, controllers, path = line.split(":", 2)
        if "freezer" in controllers.split(","):
            base = FREEZER_V1 / path.lstrip("/")
            return base if os.access(base, os.W_OK) else None
    return None


@dataclass
class JobGroup:
    """A compile job's leaf cgroup (and, on v1, its freezer leaf)."""

    path: Path
    version: int
    freezer: Path | None = None  # v1 only

    @property
    def can_freeze(self) -> bool:
        return self.version == 2 or self.freezer is not None

    def enter(self) -> None:
        """Move the calling process in (a ``preexec_fn``: runs in the child before exec;
        writes only, no allocation worth the name)."""
        for group in (self.path, self.freezer):
            if group is not None:
                fd = os.open(group / "cgroup.procs", os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)

    def pids(self) -> list[int]:
        return [int(x) for x in _read(self.path / "cgroup.procs").split() if x.isdigit()]

    def peak(self) -> int:
        """The kernel's peak of the job's memory less the page cache it still holds."""
        top = peak_of(self.path)
        if not top:
            return 0
        stat = read_stat(self.path)
        return max(0, top - stat.get("file", stat.get("total_cache", stat.get("cache", 0))))

    def oom_kills(self) -> int:
        return oom_kills_in(self.path)

    def freeze(self, on: bool) -> bool:
        """Freeze (``on``) or thaw every process of the job; False where not possible."""
        if self.version == 2:
            return _write(self.path / "cgroup.freeze", "1" if on else "0")
        if self.freezer is not None:
            return _write(self.freezer / "freezer.state", "FROZEN" if on else "THAWED")
        return False

    def kill(self) -> None:
        """SIGKILL every process of the job (thawed, so that v1's freezer lets them die)."""
        if self.version == 2 and _write(self.path / "cgroup.kill", "1"):
            return
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self.freeze(False)

    def remove(self) -> None:
        """Remove the leaves once their processes are gone (a killed job's may take a
        moment to leave).  A v1 leaf that saw an OOM kill stays until the build's group
        is removed, which counts it (v1 counts kills only in the victim's group)."""
        keep = self.version == 1 and self.oom_kills() > 0
        for group in (self.freezer,) if keep else (self.path, self.freezer):
            if group is None:
                continue
            for _ in range(50):
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def make(env: dict[str, str] | os._Environ[str] | None = None) -> JobGroup | None:
    """A new leaf for one job in the build's cgroup (``$BUILDER_CGROUP``); None where
    there is none or it cannot be written (the caller measures the process tree)."""
    build = (env if env is not None else os.environ).get(ENV, "")
    if not build or not Path(build).is_dir():
        return None
    name = f"job-{os.getpid()}-{next(_counter)}"
    version = 2 if (Path(build) / "cgroup.controllers").is_file() else 1
    path = Path(build) / name
    try:
        path.mkdir()
    except OSError:
        return None
    freezer = None
    if version == 1 and (base := _freezer_base()) is not None:
        with contextlib.suppress(OSError):
            (base / f"builder-{name}").mkdir()
            freezer = base / f"builder-{name}"
    return JobGroup(path, version, freezer)
