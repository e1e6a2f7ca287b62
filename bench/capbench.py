"""Helpers of ``bench/memory_cap.py``: capped runs and the results file (its table is
:mod:`devkit.captable`).

Every run appends one row to ``<work>/results.json`` (a JSON list), so that a bench too
long for one command can run in pieces (``--only``) and still end in one table
(``--summary``): rows of one workload and cap make one table.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.memory import cgroup  # noqa: E402
from devkit.captable import COLD_TARGET, HISTORY_TARGET, summarize  # noqa: E402

__all__ = [
    "COLD_TARGET",
    "HISTORY_TARGET",
    "append_row",
    "can_cgroup",
    "capped",
    "cgroup_peak",
    "host_info",
    "load_rows",
    "most_at_once",
    "summarize",
]

PY = sys.executable
Row = dict[str, Any]


def can_cgroup() -> str:
    try:
        g = cgroup.create(f"probe{os.getpid()}", 1 << 30)
    except (cgroup.CgroupUnavailable, OSError) as exc:
        return str(exc)
    cgroup.remove(g)
    return ""


def capped(cap: int, name: str, argv: list[str], log: Path) -> tuple[int, int, float, str]:
    """Run argv in a capped cgroup; (exit code, OOM kills, seconds, output).  The
    output ends with the cgroup's peak usage (page cache included) — :func:`cgroup_peak`."""
    t = time.perf_counter()
    proc = subprocess.run([PY, "-m", "builder.memory.cgroup", "--limit", str(cap), "--name",
                           name, "--", *argv], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))},
                          check=False)
    secs = time.perf_counter() - t
    out = proc.stdout + proc.stderr
    log.write_text(out)
    kills = sum(int(k) for k in re.findall(r"OOM kills: (\d+)", out))
    return proc.returncode, kills, secs, out


def cgroup_peak(out: str) -> int:
    """MiB: the last cgroup peak usage the helper reported in ``out``.  (builder's own
    cgroup for the build goes below the bench's capped one, or next to the leaf the bench
    runs it in, under the same cap: see :func:`builder.memory.cgroup.v2_base`.)"""
    found = re.findall(r"cgroup peak (\d+) MiB", out)
    return int(found[-1]) if found else 0


def most_at_once(jobs: list[dict[str, object]]) -> int:
    """Most compile jobs running at the same moment."""
    events = sorted([(float(str(j["started"])), 1) for j in jobs if j.get("started")] +
                    [(float(str(j["ended"])), -1) for j in jobs if j.get("started")])
    most = now = 0
    for _, d in events:
        now += d
        most = max(most, now)
    return most


def host_info(cores: int) -> dict[str, object]:
    model = platform.processor()
    try:
        found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
        model = found.group(1).strip() if found else model
    except OSError:
        pass
    try:  # tells two machines of one name and CPU model apart (a fresh GPU machine)
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    return {"name": platform.node(), "cores": cores, "cpu": model, "boot": boot}


def load_rows(work: Path) -> list[Row]:
    path = work / "results.json"
    rows: list[Row] = json.loads(path.read_text()) if path.is_file() else []
    return rows


def append_row(work: Path, row: Row) -> None:
    rows = load_rows(work)
    rows.append({"date": time.strftime("%Y-%m-%d %H:%M:%S"), **row})
    tmp = work / "results.json.tmp"
    tmp.write_text(json.dumps(rows, indent=1) + "\n")
    tmp.replace(work / "results.json")


