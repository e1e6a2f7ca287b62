"""``builder report``: the last build as one self-contained HTML page (no network).

Drawn with inline SVG: a timeline of every compile job per slot (OOM retries and
low-memory runs marked), memory in use over time against the budget line, the
steps of the build; then a table of translation units by peak memory and time
(count, min/max/avg/total, share of the total — like DashInfer's profiling table),
the plan summary and cache hit rates.  ``--format json`` gives the same data.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from builder.errors import UsageError
from builder.workspace.paths import Workspace

__all__ = ["CSS", "load", "render_html", "svg_memory", "svg_timeline", "tu_table", "write"]

W, LANE, PAD = 1150, 22, 240


def load(ws: Workspace) -> dict[str, Any]:
    from builder.util.records import read_last_build

    data = read_last_build(ws.last_build)  # checked; damaged: set aside
    if data is None:
        raise UsageError(f"no build recorded in {ws.state} yet: run `builder build` first")
    data["tu_table"] = tu_table(data.get("compile_jobs", []))
    done, cached = data["summary"]["done"], data["summary"]["cached"]
    data["cache_hit_rate"] = round(cached / (done + cached), 3) if done + cached else 0.0
    return data


def tu_table(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_file: dict[str, list[dict[str, Any]]] = {}
    for j in jobs:
        by_file.setdefault(j["file"], []).append(j)
    total = sum(max(0.0, j["t_end"] - j["t_start"]) for j in jobs) or 1.0
    rows = []
    for f, js in by_file.items():
        secs = [max(0.0, j["t_end"] - j["t_start"]) for j in js]
        rows.append({"file": f, "count": len(js), "min_s": round(min(secs), 2),
                     "max_s": round(max(secs), 2), "avg_s": round(sum(secs) / len(secs), 2),
                     "total_s": round(sum(secs), 2),
                     "percent": round(100 * sum(secs) / total, 1),
                     "peak": max(int(j.get("peak") or 0) for j in js),
                     "estimate": max(int(j.get("estimate") or 0) for j in js),
                     "source": js[-1].get("source", ""),
                     "oom": any(j.get("oom") for j in js),
                     "lowmem": any(j.get("lowmem") for j in js)})
    return sorted(rows, key=lambda r: (-r["peak"], -r["total_s"]))


def _lanes(jobs: list[dict[str, Any]]) -> list[int]:
    """Greedy interval partitioning: the slot each job ran in."""
    ends: list[float] = []
    lanes = []
    for j in jobs:
        for i, e in enumerate(ends):
            if e <= j["t_start"] + 1e-6:
                ends[i] = j["t_end"]
                lanes.append(i)
                break
        else:
            ends.append(j["t_end"])
            lanes.append(len(ends) - 1)
    return lanes


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def svg_timeline(data: dict[str, Any]) -> str:
    jobs = sorted(data.get("compile_jobs", []), key=lambda j: j["t_start"])
    steps = [s for s in data.get("steps", []) if "start" in s and "end" in s]
    t0 = float(data["started"])
    t1 = max([float(data["ended"]), *(float(j["t_end"]) for j in jobs)])
    span = max(t1 - t0, 1e-3)
    def x(t: float) -> float:
        return PAD + (W - PAD - 10) * (t - t0) / span

    lanes = _lanes(jobs)
    n_lanes = max(lanes, default=-1) + 1
    h = 30 + LANE * (n_lanes + len(steps)) + 20
    out = [f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}">']
    for i in range(n_lanes):
        out.append(f'<text x="4" y="{30 + LANE * i + 15}" class="lbl">slot {i + 1}</text>')
    for j, lane in zip(jobs, lanes, strict=True):
        cls = "job" + (" oom" if j.get("oom") else "") + (" lowmem" if j.get("lowmem") else "")
        y = 30 + LANE * lane
        wid = max(x(j["t_end"]) - x(j["t_start"]), 1.5)
        tip = (f"{j['file']}: {j['t_end'] - j['t_start']:.1f} s, peak {_mib(j.get('peak') or 0)}"
               f", estimate {_mib(j.get('estimate') or 0)} ({j.get('source', '')})")
        out.append(f'<rect class="{cls}" x="{x(j["t_start"]):.1f}" y="{y}" width="{wid:.1f}" '
                   f'height="{LANE - 4}"><title>{html.escape(tip)}</title></rect>')
        if j.get("oom"):
            out.append(f'<text class="oom-mark" x="{x(j["t_end"]) + 2:.1f}" y="{y + 14}">'
                       f'OOM → retry</text>')
    base = 30 + LANE * n_lanes + 10
    for i, s in enumerate(steps):
        y = base + LANE * i
        recipe, _, rest = s["id"].partition("/")
        label = f"{recipe}/{rest.partition('/')[2]}"[-34:]
        out.append(f'<text x="4" y="{y + 15}" class="lbl">{html.escape(label)}</text>')
        out.append(f'<rect class="step {s.get("status", "")}" x="{x(s["start"]):.1f}" y="{y}" '
                   f'width="{max(x(s["end"]) - x(s["start"]), 1.5):.1f}" height="{LANE - 6}">'
                   f'<title>{html.escape(s["id"])}: {s.get("seconds", 0):.1f} s</title></rect>')
    out.append("</svg>")
    return "\n".join(out)


def svg_memory(data: dict[str, Any]) -> str:
    jobs = data.get("compile_jobs", [])
    budget = float(data.get("budget") or 1)
    t0 = float(data["started"])
    t1 = max([float(data["ended"]), *(float(j["t_end"]) for j in jobs)])
    span = max(t1 - t0, 1e-3)
    edges = sorted({t0, t1, *(j["t_start"] for j in jobs), *(j["t_end"] for j in jobs)})
    used = [sum(int(j.get("peak") or j.get("estimate") or 0) for j in jobs
                if j["t_start"] <= t < j["t_end"]) for t in edges]
    top = max([budget * 1.1, *used]) or 1.0
    h = 220
    def x(t: float) -> float:
        return PAD + (W - PAD - 10) * (t - t0) / span

    def y(m: float) -> float:
        return h - 20 - (h - 40) * m / top

    pts: list[str] = []
    level = y(0)
    for t, m in zip(edges, used, strict=True):  # a step function: across, then up or down
        pts.append(f"{x(t):.1f},{level:.1f}")
        level = y(m)
        pts.append(f"{x(t):.1f},{level:.1f}")
    out = [f'<svg id="memory" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}">',
           f'<polyline class="mem" points="{" ".join(pts)}"/>',
           f'<line class="budget" x1="{PAD}" x2="{W - 10}" y1="{y(budget):.1f}" '
           f'y2="{y(budget):.1f}"/>',
           f'<text class="lbl" x="4" y="{y(budget) + 4:.1f}">budget {_mib(budget)}</text>',
           f'<text class="lbl" x="4" y="{y(0):.1f}">0</text>']
    for j in jobs:
        if j.get("oom"):
            out.append(f'<circle class="oom-mark" cx="{x(j["t_end"]):.1f}" cy="{y(budget):.1f}" '
                       f'r="5"><title>{html.escape(j["file"])} OOM-killed</title></circle>')
    out.append("</svg>")
    return "\n".join(out)


CSS = """body{font:14px system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px} h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse} td,th{padding:3px 10px;border-bottom:1px solid #ddd;
text-align:right} td:first-child,th:first-child{text-align:left}
.lbl{font:11px monospace;fill:#555} .job{fill:#4c78a8} .job.lowmem{fill:#f58518}
.job.oom{fill:#e45756} .step{fill:#9ecae9} .step.failed{fill:#e45756}
.mem{fill:none;stroke:#4c78a8;stroke-width:2} .budget{stroke:#e45756;stroke-dasharray:6 4}
.oom-mark{fill:#e45756;font:11px sans-serif} .ok{color:#2a7} .bad{color:#c33}"""


def render_html(data: dict[str, Any]) -> str:
    s = data["summary"]
    dur = data["ended"] - data["started"]
    rows = "\n".join(
        f"<tr><td>{html.escape(r['file'])}</td><td>{r['count']}</td><td>{_mib(r['peak'])}</td>"
        f"<td>{_mib(r['estimate'])}</td><td>{html.escape(r['source'])}</td>"
        f"<td>{r['min_s']}</td><td>{r['max_s']}</td><td>{r['avg_s']}</td><td>{r['total_s']}</td>"
        f"<td>{r['percent']}%</td><td>{'OOM ' if r['oom'] else ''}"
        f"{'low-mem' if r['lowmem'] else ''}</td></tr>" for r in data["tu_table"])
    variants = "\n".join(
        f"<tr><td>{html.escape(v['id'])}</td><td>{v['status']}</td>"
        f"<td>{html.escape(v.get('reason', ''))}</td></tr>" for v in data["variants"])
    status = "failed" if s["failed"] else "succeeded"
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>builder report</title><style>{CSS}</style></head><body>
<h1>Build {status} in {dur:.1f} s</h1>
<p>{html.escape(data['host'])} · memory budget {_mib(data['budget'])} ·
{s['done']} steps run, {s['cached']} cached (cache hit rate {data['cache_hit_rate']:.0%}),
{s['skipped']} skipped, <span class="{'bad' if s['failed'] else 'ok'}">{s['failed']} failed</span>,
{s['aborted']} not run · {len(data.get('compile_jobs', []))} compile jobs</p>
<h2>Timeline: compile jobs per slot, then steps</h2>
{svg_timeline(data)}
<h2>Memory in use (measured peaks of running compile jobs) against the budget</h2>
{svg_memory(data)}
<h2>Translation units by peak memory</h2>
<table><tr><th>file</th><th>count</th><th>peak</th><th>estimate</th><th>from</th>
<th>min s</th><th>max s</th><th>avg s</th><th>total s</th><th>%</th><th></th></tr>
{rows}</table>
<h2>Plan</h2><table><tr><th>variant</th><th>status</th><th>note</th></tr>{variants}</table>
</body></html>
"""


def write(ws: Workspace, output: Path | None) -> Path:
    data = load(ws)
    path = output or ws.report_html
    from builder.util.files import atomic_write

    atomic_write(path, render_html(data))
    return path
