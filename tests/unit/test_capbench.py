"""The memory bench's table (devkit/captable.py, printed by bench/memory_cap.py): builder's
runs are compared with the fixed -jN runs of their own machine only (a fresh GPU machine of
the same name and CPU model ran -j5 in 71.4 s where the one before took 57.3 s: a ratio
across them measures the machines)."""

from __future__ import annotations

from typing import Any

import pytest

from devkit.captable import summarize


def _row(run: str, seconds: float, boot: str, **extra: Any) -> dict[str, Any]:
    row = {"workload": "libamm", "cap": "6GiB", "run": run, "ok": True, "oom": 0,
           "seconds": seconds, "peak": 5000, "date": f"2026-11-25 {seconds:06.1f}",
           "host": {"name": "vm", "cores": 16, "cpu": "Xeon", "boot": boot}}
    if run.startswith("fixed"):
        row["jobs"] = int(run.split("-j")[1])
    else:
        row.update(retries=0, pauses=0, most=5, timed="18/18", curved=13)
    return {**row, **extra}


def test_builder_is_compared_with_its_own_machines_fixed_runs(
        capsys: pytest.CaptureFixture[str]) -> None:
    rows = [_row("fixed -j5", 57.3, "aaaa"), _row("builder (cold)", 60.0, "aaaa"),
            _row("fixed -j5", 71.4, "bbbb"), _row("builder (history)", 73.5, "bbbb")]
    assert not summarize(rows, "libamm")  # history: 1.03x its machine's -j5, over 1.0
    out = capsys.readouterr().out
    assert "builder (cold): median of 1 run(s) 60.0 s = 1.05× the median of fixed -j5" in out
    # against its own machine's 71.4 s, not the other's 57.3 s (1.28x)
    assert "builder (history): median of 1 run(s) 73.5 s = 1.03× the median" in out
    assert "[boot bbbb]" in out and "rows from different machines" in out
    assert out.count("\nfixed -j5 ") == 2  # one row per machine, not merged


def test_repeated_runs_compare_median_with_median(capsys: pytest.CaptureFixture[str]) -> None:
    """Three fixed runs of 54.0, 57.9 and 62.8 s (one machine, one day) and builder's
    runs: its median against theirs, not one run against their fastest."""
    good = {"good": [54.0, 57.9, 62.8], "runs": 3, "killed": 0}
    rows = [_row("fixed -j5", 54.0, "aaaa", **good), _row("fixed -j4", 66.0, "aaaa"),
            *(_row("builder (cold)", s, "aaaa") for s in (58.0, 60.5, 64.0)),
            _row("builder (history)", 57.0, "aaaa"), _row("builder (history-2)", 56.0, "aaaa"),
            _row("builder (history-3)", 59.0, "aaaa", above=3.2, overdue=12.5, paused_s=4.0)]
    assert summarize(rows, "libamm")
    out = capsys.readouterr().out
    assert "job-s paused 4.0, at peak above their curves 3.2, overdue 12.5)" in out
    assert "fixed -j5               yes          0      57.9" in out  # its median
    assert "median of 54.0, 57.9, 62.8 s" in out
    assert out.count("builder (cold) ") == 3  # every run is a row
    # cold: 60.5 / 57.9 = 1.045; fastest against fastest 58.0 / 54.0 = 1.07
    assert "builder (cold): median of 3 run(s) 60.5 s = 1.04× the median of fixed -j5 " \
        "(3 run(s), 57.9 s)" in out and "fastest against fastest 1.07×" in out
    # history: every history run of the machine, whatever its number: 57.0 / 57.9
    assert "builder (history): median of 3 run(s) 57.0 s = 0.98×" in out
    assert "result: all targets met" in out
    # a killed run makes -j5 unsafe: -j4 (66.0 s) is the best safe one, and a failed
    # builder run fails its target whatever the others' times
    rows[0] = {**rows[0], "killed": 1, "oom": 1}
    rows[3] = {**rows[3], "oom": 1}
    assert not summarize(rows, "libamm")
    out = capsys.readouterr().out
    assert "builder (cold) FAILED" in out
    assert "builder (history): median of 3 run(s) 57.0 s = 0.86× the median of fixed -j4" in out


def test_a_run_without_a_fixed_baseline_on_its_machine_is_not_compared(
        capsys: pytest.CaptureFixture[str]) -> None:
    rows = [_row("fixed -j5", 57.3, "aaaa"), _row("builder (cold)", 50.0, "cccc"),
            _row("builder (history)", 49.0, "cccc")]
    assert not summarize(rows, "libamm")
    out = capsys.readouterr().out
    assert "builder (cold): no fixed -jN survived on its machine" in out
    assert "×" not in out
    # rows recorded before machines were told apart (no boot) still compare as before
    old = [{**r, "host": {k: v for k, v in r["host"].items() if k != "boot"}}
           for r in (_row("fixed -j5", 57.3, ""), _row("builder (cold)", 57.0, ""),
                     _row("builder (history)", 56.0, ""))]
    assert summarize(old, "libamm")
