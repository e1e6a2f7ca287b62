"""The build report and live progress, from recorded build data."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from builder.execute.record import step_key
from builder.report import page as report
from builder.workspace.paths import Workspace


def _record(ws: Workspace) -> None:
    t0 = 1_000_000.0
    jobs = [
        {"file": "src/a.cpp", "t_start": t0 + 1, "t_end": t0 + 11, "peak": 1_300_000_000,
         "estimate": 1_400_000_000, "source": "history"},
        {"file": "src/b.cpp", "t_start": t0 + 2, "t_end": t0 + 8, "peak": 900_000_000,
         "estimate": 1_000_000_000, "source": "recipe"},
        {"file": "src/c.cpp", "t_start": t0 + 9, "t_end": t0 + 12, "peak": 2_100_000_000,
         "estimate": 1_500_000_000, "source": "prior:torch/torch.h", "oom": True},
        {"file": "src/c.cpp", "t_start": t0 + 12, "t_end": t0 + 20, "peak": 1_600_000_000,
         "estimate": 3_000_000_000, "source": "history-file", "retry": True, "lowmem": True},
    ]
    data = {"version": 1, "started": t0, "ended": t0 + 21, "host": "test host",
            "budget": 2_500_000_000, "jobs_slots": 2, "counts": {},
            "variants": [{"id": "lib/cpu-release-x", "status": "build", "reason": ""}],
            "summary": {"done": 6, "cached": 2, "skipped": 0, "failed": 0, "aborted": 0,
                        "failures": []},
            "steps": [{"id": "lib/cpu-release-x/build", "kind": "build", "status": "done",
                       "start": t0 + 0.5, "end": t0 + 20.5, "seconds": 20.0}],
            "compile_jobs": jobs}
    ws.state.mkdir(parents=True)
    (ws.state / "last-build.json").write_text(json.dumps(data))


def test_report_draws_every_job_and_the_budget(tmp_path: Path) -> None:
    (tmp_path / ".builder-state").write_text("")  # a folder builder owns (the writer)
    ws = Workspace.at(tmp_path)
    _record(ws)
    page = report.write(ws, None).read_text()
    assert len(re.findall(r'<rect class="job', page)) == 4
    assert len(re.findall(r'<rect class="job oom', page)) == 1
    assert 'class="job lowmem"' in page
    assert page.count('<line class="budget"') == 1 and "OOM → retry" in page
    assert "cache hit rate 25%" in page and "http" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")  # self-contained: nothing to fetch
    rows = report.load(ws)["tu_table"]
    assert [r["file"] for r in rows] == ["src/c.cpp", "src/a.cpp", "src/b.cpp"]
    c = rows[0]
    assert (c["count"], c["total_s"], c["oom"], c["lowmem"]) == (2, 11.0, True, True)
    assert round(sum(r["percent"] for r in rows)) == 100


def test_lanes_never_overlap() -> None:
    jobs = [{"t_start": 0, "t_end": 5}, {"t_start": 1, "t_end": 3}, {"t_start": 3, "t_end": 4},
            {"t_start": 5, "t_end": 6}]
    assert report._lanes(jobs) == [0, 1, 1, 0]


def test_step_keys_survive_input_changes() -> None:
    assert step_key("libamm/cpu-release-py3.11-88afa4c2ee08/build") == \
        "libamm/cpu-release-py3.11/build"
    assert step_key("app/cpu-release-9b3584ee2664/test:run") == "app/cpu-release/test:run"


def test_live_progress_shows_memory_and_eta() -> None:
    from rich.console import Console

    from builder.cli.progress import LiveProgress
    from builder.plan.model import BuildPlan, Step

    plan = BuildPlan(variants=(), steps=(Step(id="lib/cpu-release-aaaaaaaaaaaa/build",
                                              kind="build", variant="lib/x"),),
                     host="h", cpus=2, memory_budget=4 * 2**30, jobs=2)

    class FakeBroker:
        def snapshot(self) -> dict[str, object]:
            return {"budget": 4 * 2**30, "reserved": 3 * 2**30, "waiting": 2, "done": 5,
                    "running": [{"file": "src/heavy.cpp", "reserve": 3 * 2**30,
                                 "source": "history", "seconds": 7.0}]}

    class Ex:
        broker = FakeBroker()

    live = LiveProgress(plan, Ex(), {"lib/cpu-release/build": 120.0})
    out = io.StringIO()
    Console(file=out, width=120, force_terminal=False).print(live.__rich__())
    text = out.getvalue()
    assert "0/1 steps" in text and "ETA ~120s" in text
    assert "memory reserved 3.0 GiB of 4.0 GiB budget" in text
    assert "src/heavy.cpp" in text and "2 waiting" in text


def test_a_large_budget_scales_the_memory_chart_to_what_was_used(tmp_path: Path) -> None:
    """With a budget far above the use, the chart is scaled to the use (not a flat line at
    0) and the budget is named above it; absolute paths are shown below their common
    folder (the full path is the cell's title) and numbers never wrap."""
    (tmp_path / ".builder-state").write_text("")  # a folder builder owns (the writer)
    ws = Workspace.at(tmp_path)
    _record(ws)
    rec = json.loads((ws.state / "last-build.json").read_text())
    rec["budget"] = 120 * 2**30
    for j in rec["compile_jobs"]:
        j["file"] = "/home/u/a/very/long/project/path/" + j["file"]
    (ws.state / "last-build.json").write_text(json.dumps(rec))
    page = report.write(ws, None).read_text()
    assert '<line class="budget"' not in page and "budget 122,880 MiB ↑" in page
    pts = re.search(r'<polyline class="mem" points="([^"]+)"', page)
    assert pts is not None
    ys = [float(p.split(",")[1]) for p in pts.group(1).split()]
    assert min(ys) < 60, "the highest use reaches the upper part of the 200 px chart"
    assert '<td title="/home/u/a/very/long/project/path/src/c.cpp">c.cpp</td>' in page
    assert "white-space:nowrap" in page
    assert report.memory_scale(2.5e9, 2.2e9) == (2.75e9, True)
