"""``builder report``: the last build as one self-contained HTML page (no network).

Drawn with inline SVG: a timeline of every compile and link job per slot (links in
another colour, OOM retries and low-memory runs marked), memory in use over time against
the budget line, the steps of the build; then a table of translation units (and links)
by peak memory and time
(count, min/max/avg/total, share of the total — like DashInfer's profiling table),
the plan summary and cache hit rates.  ``--format json`` gives the same data.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from builder.errors import UsageError
from builder.workspace.paths import Workspace

__all__ = ["CSS", "load", "memory_scale", "pool_section", "render_html", "short_paths",
           "svg_memory", "svg_timeline", "tu_table", "write"]

LANE = 22  # px per timeline row


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
                     # on the distributed pool (`--dist`): its peak there is not measured
                     # per job, only its servers' (`builder dist status`)
                     "where": "pool" if any(j.get("where") == "remote" for j in js) else "",
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


def _label(step_id: str) -> str:
    """``lib/cpu-release-py3.11-0123456789ab/test:py`` → ``lib cpu-release-py3.11 test:py``."""
    recipe, vdir, name = [*step_id.split("/", 2), "", ""][:3]
    parts = vdir.split("-")
    if len(parts) > 1 and len(parts[-1]) == 12:
        parts = parts[:-1]
    return " ".join(x for x in (recipe, "-".join(parts), name) if x)


def _span(data: dict[str, Any]) -> tuple[float, float]:
    jobs = data.get("compile_jobs", [])
    t0 = float(data["started"])
    t1 = max([float(data["ended"]), *(float(j["t_end"]) for j in jobs)])
    return t0, max(t1 - t0, 1e-3)


def _pct(t: float, t0: float, span: float) -> float:
    return 100.0 * (t - t0) / span


def _seconds(t: float) -> str:
    if t < 120:
        return f"{t:.0f} s"
    return f"{t / 60:.0f} min" if t % 60 == 0 else f"{t / 60:.1f} min"


def _tick_step(span: float) -> int:
    """Seconds between time-axis ticks: a round step giving at most 8 intervals."""
    return next((s for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200)
                 if span / s <= 8), 14400)


def _axis(span: float) -> str:
    """The time axis under a chart: ticks at a round step, placed in % of its width (the
    charts stretch with the page), the last one kept inside the chart."""
    step = _tick_step(span)
    ticks = [i * step for i in range(int(span / step) + 1)]
    out = []
    for i, t in enumerate(ticks):
        left = 100.0 * t / span
        shift = "0" if i == 0 else "-100%" if left > 92 else "-50%"
        out.append(f'<span class="tick" style="left:{left:.2f}%;transform:translateX({shift})">'
                   f"{_seconds(t)}</span>")
    return f'<div class="axis">{"".join(out)}</div>'


def _grid(span: float, height: int) -> str:
    """Vertical lines at the axis' ticks, in the chart's 0..1000 viewBox."""
    xs = [1000.0 * t / span for t in range(0, int(span) + 1, _tick_step(span))]
    return "".join(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height}"/>'
                   for x in xs)


def _label_width(data: dict[str, Any]) -> int:
    """Characters of the widest label of either chart: both label columns get this width
    (monospace), so the two charts' time axes line up."""
    steps = [s for s in data.get("steps", []) if "start" in s and "end" in s]
    return max([len(_label(s["id"])) for s in steps] +
               [len(f"budget {_mib(float(data.get('budget') or 1))} ↑"), len("slot 99")])


def svg_timeline(data: dict[str, Any]) -> str:
    """Compile jobs per slot, then the steps: labels in an HTML column (never cut), bars in
    an SVG that stretches to the page's width (a 0..1000 viewBox), a time axis below."""
    jobs = sorted(data.get("compile_jobs", []), key=lambda j: j["t_start"])
    steps = [s for s in data.get("steps", []) if "start" in s and "end" in s]
    t0, span = _span(data)

    def x(t: float) -> float:
        return 10 * _pct(t, t0, span)

    lanes = _lanes(jobs)
    n_lanes = max(lanes, default=-1) + 1
    h = LANE * (n_lanes + len(steps)) + (8 if n_lanes and steps else 0)
    labels = [f'<div class="lbl">slot {i + 1}</div>' for i in range(n_lanes)]
    if n_lanes and steps:
        labels.append('<div class="gap"></div>')
    bars = [f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1000 {h}" '
            f'preserveAspectRatio="none" style="height:{h}px">', _grid(span, h)]
    marks = []
    for j, lane in zip(jobs, lanes, strict=True):
        cls = ("job" + (" link" if j.get("kind") == "link" else "")
               + (" oom" if j.get("oom") else "") + (" lowmem" if j.get("lowmem") else ""))
        y = LANE * lane
        wid = max(x(j["t_end"]) - x(j["t_start"]), 1.5)
        what = ("link " if j.get("kind") == "link" else "") + str(j["file"])
        tip = (f"{what}: {j['t_end'] - j['t_start']:.1f} s, peak {_mib(j.get('peak') or 0)}"
               f", estimate {_mib(j.get('estimate') or 0)} ({j.get('source', '')})")
        bars.append(f'<rect class="{cls}" x="{x(j["t_start"]):.1f}" y="{y}" width="{wid:.1f}" '
                    f'height="{LANE - 4}"><title>{html.escape(tip)}</title></rect>')
        if j.get("oom"):
            left = _pct(j["t_end"], t0, span)
            shift = "translateX(-100%)" if left > 80 else "translateX(2px)"
            marks.append(f'<span class="oom-mark" style="left:{left:.2f}%;top:{y}px;'
                         f'transform:{shift}">OOM → retry</span>')
    base = LANE * n_lanes + (8 if n_lanes and steps else 0)
    for i, s in enumerate(steps):
        y = base + LANE * i
        labels.append(f'<div class="lbl" title="{html.escape(s["id"])}">'
                      f'{html.escape(_label(s["id"]))}</div>')
        bars.append(f'<rect class="step {s.get("status", "")}" x="{x(s["start"]):.1f}" y="{y}" '
                    f'width="{max(x(s["end"]) - x(s["start"]), 1.5):.1f}" height="{LANE - 6}">'
                    f'<title>{html.escape(s["id"])}: {s.get("seconds", 0):.1f} s</title></rect>')
    bars.append("</svg>")
    return (f'<div class="chart"><div class="labels" style="width:{_label_width(data)}ch">'
            f'{"".join(labels)}</div>'
            f'<div class="plot">{"".join(bars)}{"".join(marks)}{_axis(span)}</div></div>')


def svg_memory(data: dict[str, Any]) -> str:
    """Memory in use (a step function) against the budget line, same time axis."""
    jobs = data.get("compile_jobs", [])
    budget = float(data.get("budget") or 1)
    t0, span = _span(data)
    edges = sorted({t0, t0 + span, *(j["t_start"] for j in jobs), *(j["t_end"] for j in jobs)})
    used = [sum(int(j.get("peak") or j.get("estimate") or 0) for j in jobs
                if j["t_start"] <= t < j["t_end"]) for t in edges]
    top, budget_shown = memory_scale(budget, max(used, default=0))
    h = 200

    def x(t: float) -> float:
        return 10 * _pct(t, t0, span)

    def y(m: float) -> float:
        return h - 4 - (h - 12) * m / top

    pts: list[str] = []
    level = y(0)
    for t, m in zip(edges, used, strict=True):  # a step function: across, then up or down
        pts.append(f"{x(t):.1f},{level:.1f}")
        level = y(m)
        pts.append(f"{x(t):.1f},{level:.1f}")
    out = [f'<svg id="memory" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1000 {h}" '
           f'preserveAspectRatio="none" style="height:{h}px">', _grid(span, h),
           f'<polyline class="mem" points="{" ".join(pts)}"/>']
    if budget_shown:
        out.append(f'<line class="budget" x1="0" x2="1000" y1="{y(budget):.1f}" '
                   f'y2="{y(budget):.1f}"/>')
    for j in jobs:
        if j.get("oom"):
            out.append(f'<line class="oom-mark" x1="{x(j["t_end"]):.1f}" x2="{x(j["t_end"]):.1f}" '
                       f'y1="{y(budget):.1f}" y2="{y(budget):.1f}"><title>'
                       f'{html.escape(j["file"])} OOM-killed</title></line>')
    out.append("</svg>")
    # the budget's line, or (far above what was used) its size over a chart of the use
    head = f'<div class="lbl" style="top:{y(budget) - 11:.0f}px">budget {_mib(budget)}</div>' \
        if budget_shown else (f'<div class="lbl" style="top:-4px" title="the budget is far '
                              f'above the chart, which is scaled to what was used">budget '
                              f'{_mib(budget)} ↑</div>')
    labels = (f'<div class="labels ylab" style="height:{h}px;width:{_label_width(data)}ch">'
              f'{head}<div class="lbl" style="top:{y(0) - 16:.0f}px">0</div></div>')
    return (f'<div class="chart">{labels}<div class="plot">{"".join(out)}{_axis(span)}'
            f'</div></div>')


def memory_scale(budget: float, peak: float) -> tuple[float, bool]:
    """The memory chart's top and whether the budget line is on it: the budget with a
    margin, unless what was used stays below a quarter of it — then what was used with a
    margin (a large budget would draw the use as a flat line at 0)."""
    if peak <= 0 or peak * 4 >= budget:
        return max(budget * 1.1, peak * 1.1) or 1.0, True
    return peak * 1.25, False


def short_paths(files: list[str]) -> dict[str, str]:
    """Each file as shown in the table: below the folder all the absolute ones share
    (a long common prefix only widens the table; the full path is the cell's title)."""
    absolute = [f for f in files if f.startswith("/")]
    common = os.path.commonpath(absolute) if len(absolute) > 1 else (
        os.path.dirname(absolute[0]) if absolute else "")
    cut = len(common.rstrip("/")) + 1 if common not in ("", "/") else 0
    return {f: (f[cut:] if cut and f.startswith("/") else f) for f in files}


CSS = """body{font:14px system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px} h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse} td,th{padding:3px 10px;border-bottom:1px solid #ddd;
text-align:right} td:first-child,th:first-child{text-align:left}
td:first-child{overflow-wrap:anywhere} td:not(:first-child),th{white-space:nowrap}
td.why{white-space:normal;overflow-wrap:anywhere;text-align:left}
.chart{display:grid;grid-template-columns:max-content minmax(0,1fr);column-gap:10px}
.labels{font:12px monospace} .ylab{position:relative} .ylab .lbl{position:absolute;right:0}
.lbl{font:12px monospace;color:#444;height:22px;line-height:22px;white-space:nowrap}
.gap{height:8px}
.plot{position:relative;min-width:0} .plot svg{display:block;width:100%}
.axis{position:relative;height:20px;border-top:1px solid #999;font:12px sans-serif;color:#444}
.tick{position:absolute;top:3px;white-space:nowrap}
.grid{stroke:#e3e3e3;stroke-width:1;vector-effect:non-scaling-stroke}
.job{fill:#4c78a8} .job.link{fill:#72b7b2} .job.lowmem{fill:#f58518}
.job.oom{fill:#e45756} .step{fill:#9ecae9} .step.failed{fill:#e45756}
.mem{fill:none;stroke:#4c78a8;stroke-width:2;vector-effect:non-scaling-stroke}
.budget{stroke:#e45756;stroke-width:1.5;stroke-dasharray:6 4;vector-effect:non-scaling-stroke}
line.oom-mark{stroke:#e45756;stroke-width:10;stroke-linecap:round;
vector-effect:non-scaling-stroke}
span.oom-mark{position:absolute;color:#e45756;font:11px sans-serif;white-space:nowrap}
.ok{color:#2a7} .bad{color:#c33}"""


def _outcome(v: dict[str, Any], data: dict[str, Any]) -> str:
    """What became of a variant in this build (the plan said build, cached, skip…)."""
    if v["status"] == "skip":
        return "skipped"
    mine = [s for s in data.get("steps", []) if s["id"].startswith(v["id"] + "/")]
    if any(s.get("status") == "failed" for s in mine):
        return "failed"
    if any(s.get("status") in ("aborted", "pending", "running") for s in mine):
        return "not finished"
    words = {"cached": "up to date", "download": "downloaded", "build": "built"}
    return words.get(str(v["status"]), str(v["status"]))


def pool_section(data: dict[str, Any]) -> str:
    """The distributed pool (``--dist``): per build server the compiles sccache ran there
    and, for a pool started here, its cgroup's peak and OOM kills; "" without a pool."""
    d = data.get("dist")
    if not d:
        return ""

    def cell(s: dict[str, Any], key: str, fmt: Any) -> str:
        return fmt(s[key]) if key in s else "—"

    rows = "\n".join(
        f"<tr><td>{html.escape(str(s['name']))}</td><td>{html.escape(str(s['addr']))}</td>"
        f"<td>{cell(s, 'cores', str)}</td><td>{cell(s, 'memory', _mib)}</td>"
        f"<td>{s['jobs']}</td><td>{cell(s, 'peak', _mib)}</td>"
        f"<td>{cell(s, 'oom_kills', str)}</td></tr>" for s in d.get("servers", []))
    here = sum(1 for j in data.get("compile_jobs", []) if j.get("where") == "remote")
    return (f"<h2>Distributed pool</h2><p>{html.escape(str(d['scheduler']))}: "
            f"{d['remote']} of {d['compiles']} compile(s) ran on the pool, "
            f"{d['failed_there']} failed there and were compiled here; {here} job(s) were "
            f"sent by builder (marked <i>pool</i> in the table above; sccache does not say "
            f"which server ran which)</p>"
            f"<table><tr><th>server</th><th>address</th><th>cores</th><th>budget</th>"
            f"<th>compiles</th><th>peak</th><th>OOM kills</th></tr>{rows}</table>")


#: in the head of every page builder writes: what ``report -o`` may replace
GENERATOR = '<meta name="generator" content="builder report">'


def render_html(data: dict[str, Any]) -> str:
    s = data["summary"]
    dur = data["ended"] - data["started"]
    shown = short_paths([r["file"] for r in data["tu_table"]])
    rows = "\n".join(
        f"<tr><td title=\"{html.escape(r['file'])}\">{html.escape(shown[r['file']])}</td>"
        f"<td>{r['count']}</td><td>{_mib(r['peak'])}</td>"
        f"<td>{_mib(r['estimate'])}</td><td>{html.escape(r['source'])}</td>"
        f"<td>{r['min_s']}</td><td>{r['max_s']}</td><td>{r['avg_s']}</td><td>{r['total_s']}</td>"
        f"<td>{r['percent']}%</td><td>{'OOM ' if r['oom'] else ''}"
        f"{'low-mem' if r['lowmem'] else ''}{r.get('where', '')}</td></tr>"
        for r in data["tu_table"])
    variants = "\n".join(
        f"<tr><td>{html.escape(v['id'])}</td><td>{_outcome(v, data)}</td>"
        f"<td class=\"why\">{html.escape(v.get('reason', ''))}</td></tr>"
        for v in data["variants"])
    status = "failed" if s["failed"] else "succeeded"
    return f"""<!doctype html><html><head><meta charset="utf-8">{GENERATOR}
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>builder report</title><style>{CSS}</style></head><body>
<h1>Build {status} in {dur:.1f} s</h1>
<p>{html.escape(data['host'])} ·
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
{pool_section(data)}
<h2>Variants</h2><table><tr><th>variant</th><th>outcome</th><th>note</th></tr>{variants}</table>
</body></html>
"""


def is_report(head: bytes) -> bool:
    """A page builder wrote (its generator tag is in the head): replaced without --force."""
    return GENERATOR.encode() in head[:4096]


def write(ws: Workspace, output: Path | None, force: bool = False) -> Path:
    """The page, at ``output`` (a file the user named: a link, a FIFO, a device or a file
    builder did not write is refused; ``force`` replaces the latter) or in the state
    folder."""
    from builder.util.writer import write_text

    data = load(ws)
    path = output or ws.report_html
    write_text(path, render_html(data), named=output is not None,
               force=force, recognise=is_report)
    return path
