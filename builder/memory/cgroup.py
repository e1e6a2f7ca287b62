"""The safety net: run a command inside a memory cgroup capped at the budget.

``python -m builder.memory.cgroup --limit BYTES --name NAME -- CMD…`` creates
``builder-NAME`` under the cgroup v1 memory hierarchy or the v2 unified one,
caps it, moves itself in, runs CMD with ``$BUILDER_CGROUP`` naming the group (each
compile job then gets a leaf of its own in it: :mod:`.jobgroup`), and reports how many
processes the kernel OOM-killed in it.  On v2 a group whose children have controllers
holds no process itself: the helper and the build's own processes (cmake, ninja, the
launchers) go to the leaf ``<group>/main``.  An overrun then kills one compiler (which
the launcher retries alone), never the machine.  Where no memory controller is writable it says so
and runs CMD with admission control alone.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
from pathlib import Path

from builder.memory.jobgroup import ENV, oom_kills_in, peak_of

__all__ = [
    "V1",
    "V2",
    "CgroupUnavailable",
    "create",
    "home",
    "main",
    "oom_kills",
    "own_cgroup",
    "remove",
    "v2_base",
]

V1 = Path("/sys/fs/cgroup/memory")
V2 = Path("/sys/fs/cgroup")


class CgroupUnavailable(Exception):
    pass


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def own_cgroup() -> tuple[int, Path | None]:
    """(version, folder) of the memory cgroup this process is in."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return 0, None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(",") and V1.is_dir():
            return 1, V1 / path.lstrip("/")
    if (V2 / "cgroup.controllers").is_file():
        for line in lines:
            if line.startswith("0::"):
                return 2, V2 / line[3:].lstrip("/")
    return 0, None


def v2_base(own: Path | None) -> Path:
    """Where a v2 build group goes: below our own cgroup, so that every cap above us still
    applies.  v2 lets a group with processes (other than the root) enable no controller
    for children, so when ours holds processes (we sit in a leaf, like a capped group's
    ``main``) the group goes next to it, below the same parent — never to the root, which
    would leave the caps of every group above us."""
    if own is None or own == V2:
        return V2
    if (own / "cgroup.procs").read_text().strip() and own.parent != own:
        return own.parent
    return own


def create(name: str, limit: int) -> Path:
    """Create and cap a cgroup below this process's own one (so that any cap already
    placed on us still applies); returns its folder."""
    version, own = own_cgroup()
    if version == 2:
        if "memory" not in (V2 / "cgroup.controllers").read_text():
            raise CgroupUnavailable("cgroup v2 without the memory controller")
        base = v2_base(own)
        try:
            if "memory" not in (base / "cgroup.subtree_control").read_text():
                _write(base / "cgroup.subtree_control", "+memory")
            group = base / f"builder-{name}"
            group.mkdir(exist_ok=True)
            _write(group / "memory.max", str(limit))
            if (group / "memory.swap.max").is_file():
                _write(group / "memory.swap.max", "0")
            (group / "main").mkdir(exist_ok=True)
            # per-job leaves measure memory: the controller is enabled for the children
            # (possible while the group itself holds no process)
            with contextlib.suppress(OSError):
                _write(group / "cgroup.subtree_control", "+memory")
        except OSError as exc:
            raise CgroupUnavailable(f"cgroup v2 not writable: {exc.strerror}") from None
        return group
    if version == 1 and own is not None:
        try:
            group = own / f"builder-{name}"
            group.mkdir(exist_ok=True)
            _write(group / "memory.limit_in_bytes", str(limit))
        except OSError as exc:
            raise CgroupUnavailable(f"cgroup v1 memory not writable: {exc.strerror}") from None
        return group
    raise CgroupUnavailable("no memory cgroup hierarchy")


def oom_kills(group: Path) -> int:
    """Processes the kernel OOM-killed in ``group`` and below.  v2's ``memory.events``
    counts its descendants; v1 counts a kill in the victim's own group only, so the job
    leaves are added (a v1 leaf that saw a kill is left for :func:`remove`)."""
    if (group / "memory.events").is_file():
        return oom_kills_in(group)
    leaves = [p for p in group.iterdir() if p.is_dir()] if group.is_dir() else []
    return sum(oom_kills_in(g) for g in [group, *leaves])


def home(group: Path) -> Path:
    """Where the build's own processes go in ``group``: its ``main`` leaf on v2."""
    return group / "main" if (group / "main").is_dir() else group


def remove(group: Path, back: Path | None = None) -> None:
    """Leave ``group`` for ``back`` (the cgroup this process came from; else the group's
    parent, which on v2 takes no process when it sits next to an occupied leaf: see
    :func:`v2_base`) and remove it with its leaves."""
    for where in filter(None, (back, group.parent)):
        try:
            _write(where / "cgroup.procs", str(os.getpid()))
            break
        except OSError:
            continue
    for child in sorted(p for p in group.iterdir() if p.is_dir()) if group.is_dir() else ():
        with contextlib.suppress(OSError):
            child.rmdir()  # the main leaf, and job leaves a killed launcher left
    with contextlib.suppress(OSError):
        group.rmdir()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m builder.memory.cgroup")
    ap.add_argument("--limit", type=int, required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    _, came_from = own_cgroup()
    try:
        group = create(args.name, args.limit)
        _write(home(group) / "cgroup.procs", str(os.getpid()))
    except (CgroupUnavailable, OSError) as exc:
        print(f"builder: no memory cgroup ({exc}); relying on admission control alone",
              flush=True)
        return subprocess.call(cmd)
    print(f"builder: running in memory cgroup {group} capped at {args.limit >> 20} MiB",
          flush=True)
    try:
        rc = subprocess.call(cmd, env={**os.environ, ENV: str(group)})
    finally:
        kills, top = oom_kills(group), peak_of(group)
        print(f"builder: cgroup peak {top >> 20} MiB, OOM kills: {kills}", flush=True)
        remove(group, back=came_from)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
