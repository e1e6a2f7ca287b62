"""What happened in a build, kept for ``builder report`` and for ETAs.

:class:`BuildRecorder` consumes executor events (wall-clock start/end per step).
At the end it writes ``<state>/last-build.json`` — steps, the compile jobs the
memory brokers recorded (``reports/*.jobs.json`` of this build), plan counts —
and updates ``<state>/step-times.json``, the durations later builds use for ETAs.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from builder.execute.executor import Event, Summary
from builder.plan.model import BuildPlan
from builder.workspace.paths import Workspace

__all__ = ["BuildRecorder", "load_times", "step_key"]


def step_key(step_id: str) -> str:
    """``lib/cpu-release-abc123/build`` → ``lib/cpu-release/build``: stable across input
    changes, so that history predicts the next build of the same variant."""
    recipe, vdir, name = [*step_id.split("/", 2), "", ""][:3]
    parts = vdir.split("-")
    if len(parts) > 1 and len(parts[-1]) == 12:
        parts = parts[:-1]
    return f"{recipe}/{'-'.join(parts)}/{name}"


def load_times(ws: Workspace) -> dict[str, float]:
    from builder.util.records import read_step_times

    return read_step_times(ws.step_times)


class BuildRecorder:
    def __init__(self, plan: BuildPlan, ws: Workspace) -> None:
        self.plan = plan
        self.ws = ws
        self.started = time.time()
        self.steps: dict[str, dict[str, Any]] = {}

    def event(self, e: Event) -> None:
        if e.kind == "progress":  # a line while a step waits: not a state of the step
            return
        now = time.time()
        rec = self.steps.setdefault(e.step, {"id": e.step, "status": "pending"})
        if e.kind == "start":
            rec.update(start=now, status="running")
        elif e.kind in ("done", "failed"):
            rec.update(end=now, status=e.kind, seconds=round(e.seconds, 3))
            rec.setdefault("start", now - e.seconds)
        elif rec["status"] not in ("done", "failed"):  # run by an earlier round: stays
            rec.update(status=e.kind, message=e.message)

    def save(self, summary: Summary, interrupted: bool = False) -> Path:
        """Write the record; ``interrupted``: the build was stopped (Ctrl-C) and the
        step that was running is left as ``running``, its later steps as ``pending``."""
        kinds = {s.id: s.kind for s in self.plan.steps}
        steps = [{**r, "kind": kinds.get(r["id"], "")} for r in self.steps.values()]
        jobs: list[dict[str, Any]] = []
        reports = self.ws.reports
        if reports.is_dir():
            from builder.util.records import read_jobs_report

            for p in sorted(reports.glob("*.jobs.json")):
                data = read_jobs_report(p)
                if data is None:
                    continue
                wall0 = float(data.get("wall0", 0))
                if wall0 < self.started - 1:
                    continue  # from an earlier build
                for j in data.get("jobs", []):
                    jobs.append({**j, "step": data.get("step", ""), "budget": data.get("budget"),
                                 "t_start": wall0 + float(j.get("started") or j["queued"]),
                                 "t_end": wall0 + float(j.get("ended") or j["queued"])})
        counts = self.plan.counts()
        record = {"version": 1, "started": self.started, "ended": time.time(),
                  "interrupted": interrupted,
                  "host": self.plan.host, "budget": self.plan.memory_budget,
                  "jobs_slots": self.plan.jobs, "counts": counts,
                  "variants": [{"id": v.id, "status": v.status, "reason": v.reason}
                               for v in self.plan.variants],
                  "summary": {"done": len(summary.done), "cached": len(summary.cached),
                              "skipped": len(summary.skipped), "failed": len(summary.failed),
                              "aborted": len(summary.aborted),
                              "failures": [f.step_id for f in summary.failed],
                              "oom": list(summary.oom)},
                  "steps": steps, "compile_jobs": jobs}
        path = self.ws.last_build
        _write(path, record)
        times = load_times(self.ws)
        for r in steps:
            if r.get("status") == "done" and "seconds" in r:
                times[step_key(r["id"])] = r["seconds"]
        _write(self.ws.step_times, times)
        return path


def attach(ws: Workspace, key: str, value: object) -> None:
    """Add ``key`` to the last build's record, once what it says is known (the pool's
    counters are read after the record is saved)."""
    from builder.util.records import read_last_build

    data = read_last_build(ws.last_build)
    if data is not None:
        data[key] = value
        _write(ws.last_build, data)


def _write(path: Path, data: object) -> None:
    from builder.util.writer import write_text

    write_text(path, json.dumps(data, indent=1, sort_keys=True))
