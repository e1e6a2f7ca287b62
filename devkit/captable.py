"""The table of ``bench/memory_cap.py``'s results: rows of capped runs → one table per
workload and cap, and whether builder met its targets.

Shared by ``bench/`` (which prints it) and ``tests/`` (which checks it), so that neither
imports the other.  A fixed ``-jN`` measured in several pieces counts as one with all their
runs (safe only if none was killed); every builder run is a row of its own.  Builder's runs
are compared with the fixed runs of their own machine (boot id), median against median
(:func:`_targets`).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from builder.recipe.validate import parse_size

__all__ = ["COLD_TARGET", "HISTORY_TARGET", "Row", "summarize"]

#: builder's wall time over the best fixed -jN that survived every repeat (issue #20)
COLD_TARGET = 1.05
HISTORY_TARGET = 1.0
Row = dict[str, Any]


def _machine(r: Row) -> str:
    """The boot the row was measured in ("": not recorded)."""
    return str(r["host"].get("boot", ""))


def _order(r: Row) -> tuple[int, int, str]:
    """-j<cores>, -j1, the other fixed runs by N, then builder's in the order they ran."""
    if r["run"].startswith("fixed"):
        n = int(r.get("jobs", 0))
        return (0 if n == int(r["host"]["cores"]) else 1 if n == 1 else 2, n, "")
    return (3, 0, str(r.get("date", "")))


def _good(r: Row) -> list[float]:
    """The times of a fixed row's runs that were not killed."""
    if "good" in r:
        return [float(x) for x in r["good"]]
    return [float(r["seconds"])] if r["ok"] and not r["oom"] else []


def _merge(a: Row, b: Row) -> Row:
    """Two rows of one fixed -jN: safe only if no run of either was killed; its time is
    the fastest run that was not."""
    good = [*_good(a), *_good(b)]
    runs, killed = int(a.get("runs", 1)) + int(b.get("runs", 1)), \
        int(a.get("killed", 0)) + int(b.get("killed", 0))
    return {**b, "ok": a["ok"] and b["ok"], "oom": int(a["oom"]) + int(b["oom"]),
            "peak": max(int(a["peak"]), int(b["peak"])), "runs": runs, "killed": killed,
            "good": good, "seconds": min(good) if good else b["seconds"]}


def _line(r: Row) -> str:
    extra = ""
    if "retries" in r:
        extra = (f"  (retried jobs: {r['retries']}, paused: {r['pauses']}, most at once: "
                 f"{r['most']}, time model: {r['timed']} jobs, {r['curved']} by their curve"
                 + (f"; job-s paused {r['paused_s']}, at peak above their curves "
                    f"{r['above']}, overdue {r['overdue']}" if "above" in r else "") + ")")
    elif int(r.get("runs", 1)) > 1:
        extra = f"  (killed in {r['killed']} of {r['runs']} runs" + (
            f"; median of {', '.join(f'{x:.1f}' for x in sorted(_good(r)))} s)"
            if _good(r) else ")")
    secs = statistics.median(_good(r)) if r["run"].startswith("fixed") and _good(r) \
        else float(r["seconds"])
    return (f"{r['run']:22} {'yes' if r['ok'] else 'NO':>4} {r['oom']:>10} "
            f"{secs:>9.1f} {r['peak']:>9}" + extra)


def summarize(rows: list[Row], workload: str) -> bool:
    """Print the table of ``workload``'s rows (one per cap) and the targets; True when
    every target was met (a cold or history run not made yet misses its target)."""
    ok = True
    caps = list(dict.fromkeys(str(r["cap"]) for r in rows if r["workload"] == workload))
    if not caps:
        print(f"{workload}: no runs recorded")
        return False
    for cap in caps:
        fixed: dict[str, Row] = {}
        builder: list[Row] = []
        for r in rows:
            if r["workload"] != workload or str(r["cap"]) != cap:
                continue
            run = str(r["run"])
            if run.startswith("fixed"):
                # a fixed -jN measured again on the same machine (another piece's
                # --repeats) adds its runs; on another machine it is another row
                key = f"{run}@{_machine(r)}"
                fixed[key] = _merge(fixed[key], r) if key in fixed else r
            else:  # every builder run counts: each is one sample of its machine
                builder.append(r)
        table = sorted([*fixed.values(), *builder], key=_order)
        hosts = {(r["host"]["cores"], r["host"]["cpu"], _machine(r)[:8]) for r in table}
        print(f"{workload} under a {cap} cap, " + "; ".join(
            f"{c} cores, {m}" + (f" (boot {b})" if b and len(hosts) > 1 else "")
            for c, m, b in sorted(hosts))
              + ("  (rows from different machines: builder's runs are compared with the "
                 "fixed runs of their own)" if len(hosts) > 1 else ""))
        print(f"{'run':22} {'ok':>4} {'OOM kills':>10} {'build s':>9} {'peak MiB':>9}")
        for r in table:
            print(_line(r) + (f"  [boot {_machine(r)[:8]}]" if len(hosts) > 1 else ""))
        ok = _targets(table) and ok
    return ok


def _failed(r: Row) -> str:
    """Why a builder run fails its targets whatever its time ("": it does not)."""
    cap = parse_size(str(r["cap"])) // 2**20 if r.get("cap") else 0
    if cap and int(r.get("peak", 0)) > cap:  # its peak is page cache and all, capped
        return (f"{r['run']} FAILED: its memory peaked at {r['peak']} MiB, above the "
                f"{r['cap']} cap: the build left the capped cgroup")
    if r["oom"] or not r["ok"]:
        log = Path(str(r.get("log", "")))
        tail = "\n".join(log.read_text().splitlines()[-15:]) if log.is_file() else ""
        return f"{r['run']} FAILED; the end of {log}:\n{tail}"
    return ""


def _targets(table: list[Row]) -> bool:
    """Builder's runs against the best safe fixed -jN *of their own machine* (a fresh GPU
    machine of the same name and CPU ran -j5 in 71.4 s where the one before took 57.3 s),
    median against median: the same TU takes ±15 % CPU time from run to run there, so one
    builder run against the fastest of three fixed runs measures that spread as much as
    builder.  The fastest runs' ratio is printed beside it."""
    fixed = [r for r in table if r["run"].startswith("fixed")]
    safe = [r for r in fixed if r["ok"] and r["oom"] == 0 and _good(r)]
    ok = True
    for what, target in (("cold", COLD_TARGET), ("history", HISTORY_TARGET)):
        runs = [r for r in table if r["run"].startswith(f"builder ({what}")]
        if not runs:
            print(f"builder ({what}): not run yet")
            ok = False
            continue
        for boot in dict.fromkeys(_machine(r) for r in runs):
            mine = [r for r in runs if _machine(r) == boot]
            bad = [why for why in map(_failed, mine) if why]
            for why in bad:
                print(why)
            if bad:
                ok = False
                continue
            ok = _compare(f"builder ({what})", mine, boot, safe, target) and ok
    cores = int(table[0]["host"]["cores"])
    jc = next((r for r in fixed if int(r.get("jobs", 0)) == cores), None)
    j1 = next((r for r in fixed if int(r.get("jobs", 0)) == 1), None)
    hist = [r for r in table if r["run"].startswith("builder (history")]
    if hist and j1 is not None and jc is not None and (jc["oom"] or not jc["ok"]):
        last, one = float(hist[-1]["seconds"]), float(j1["seconds"])
        print(f"-j{cores} OOMs at this cap; builder with history vs -j1: {last:.1f}s vs "
              f"{one:.1f}s {'faster' if last < one else 'NOT faster'}")
    print("result:", "all targets met" if ok else "targets missed")
    return ok


def _compare(what: str, runs: list[Row], boot: str, safe: list[Row], target: float) -> bool:
    """Print ``runs`` (builder's, of machine ``boot``) against the best safe fixed run of
    that machine; True when the ratio of the medians meets ``target``."""
    mine = [f for f in safe if _machine(f) == boot]
    if not mine:
        print(f"{what}: no fixed -jN survived on its machine (boot {boot[:8] or '?'})"
              + ("; the fixed runs of other machines are not comparable: run the fixed "
                 "pieces again on this one" if safe else " at this cap to compare with"))
        return False
    best = min(mine, key=lambda f: statistics.median(_good(f)))
    times = [float(r["seconds"]) for r in runs]
    base = _good(best)
    ratio = statistics.median(times) / statistics.median(base)
    fastest = min(times) / min(base)
    print(f"{what}: median of {len(times)} run(s) {statistics.median(times):.1f} s = "
          f"{ratio:.2f}× the median of {best['run']} ({len(base)} run(s), "
          f"{statistics.median(base):.1f} s), the best safe fixed run; fastest against "
          f"fastest {fastest:.2f}×; target ≤ {target} {'OK' if ratio <= target else 'OVER'}")
    return ratio <= target
