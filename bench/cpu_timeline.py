"""Where a farm's CPU time goes: the CPUs each cgroup kept busy, second by second.

cgroup v2 keeps ``cpu.stat`` (``usage_usec``) in every group whether or not the CPU
controller is enabled, so the groups builder makes — the client's capped group
(``builder-dist-bench-…``) and each build server's (``builder-dist-server-N-…``) — can
be read from outside while a build runs.  A :class:`Timeline` samples them from a
thread; :meth:`Timeline.summary` says, per group, its CPU-seconds, how many CPUs it kept
busy on average and for how many seconds it used all of them (the client saturated:
its own preprocessing or compiling is the bound, not the pool).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path("/sys/fs/cgroup")


def _groups(prefix: str) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for top, dirs, _ in os.walk(ROOT):
        for d in list(dirs):
            if d.startswith(prefix):
                found[d] = Path(top) / d
                dirs.remove(d)  # its own leaves are counted in it
        if len(Path(top).relative_to(ROOT).parts) >= 4:
            dirs.clear()
    return found


def _usage(group: Path) -> float | None:
    try:
        for line in (group / "cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) / 1e6
    except (OSError, ValueError):
        return None
    return None


class Timeline:
    """CPU seconds of every cgroup whose name starts with ``prefix``, every ``step`` s."""

    def __init__(self, prefix: str = "builder-dist-", step: float = 0.5) -> None:
        self.prefix, self.step = prefix, step
        self.samples: dict[str, list[tuple[float, float]]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.t0 = time.monotonic()

    def __enter__(self) -> Timeline:
        self.t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        groups: dict[str, Path] = {}
        looked = -10.0
        while not self._stop.is_set():
            now = time.monotonic() - self.t0
            if now - looked >= 2.0:
                groups.update(_groups(self.prefix))
                looked = now
            for name, path in list(groups.items()):
                u = _usage(path)
                if u is not None:
                    self.samples.setdefault(name, []).append((now, u))
            self._stop.wait(self.step)

    def summary(self, cpus: dict[str, int]) -> dict[str, Any]:
        """Per group (named by the part of its name after the prefix): CPU-seconds, the
        seconds it was seen, the mean CPUs busy, the seconds with at least 90 % of its
        ``cpus`` (by a name's start) busy, and its busy CPUs per second (rounded)."""
        out: dict[str, Any] = {}
        for name, pts in sorted(self.samples.items()):
            if len(pts) < 2:
                continue
            key = name[len(self.prefix):]
            n = next((c for k, c in cpus.items() if key.startswith(k)), 0)
            pairs = list(itertools.pairwise(pts))
            per_s = [(u1 - u0) / (t1 - t0) if t1 > t0 else 0.0
                     for (t0, u0), (t1, u1) in pairs]
            span = pts[-1][0] - pts[0][0]
            used = pts[-1][1] - pts[0][1]
            full = sum(t1 - t0 for ((t0, _), (t1, _)), b in zip(pairs, per_s, strict=True)
                       if n and b >= 0.9 * n)
            # one figure a second: the mean of the samples in it
            secs: dict[int, list[float]] = {}
            for ((_, _), (t, _)), b in zip(pairs, per_s, strict=True):
                secs.setdefault(int(t), []).append(b)
            out[key] = {"cpu_s": round(used, 1), "seen_s": round(span, 1),
                        "mean_busy": round(used / span, 2) if span else 0.0,
                        "saturated_s": round(full, 1),
                        "busy": [round(sum(v) / len(v), 1) for _, v in sorted(secs.items())]}
        return out
