"""A step's command is over when it exits, not when its output pipe closes: a process it
left in the background (a compiler-cache server, a test's daemon) inherits the pipe and
may hold it for hours.  Everything the command printed is still kept."""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

from builder.util.runner import OUTPUT_GRACE, SubprocessRunner


def test_a_background_process_holding_the_output_does_not_hold_the_step(
        tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    t0 = time.monotonic()
    res = SubprocessRunner().run(
        ["bash", "-c", "(sleep 16; echo late) & echo started; echo done"], cwd=tmp_path,
        env_changes={}, log_path=log, timeout=120)
    took = time.monotonic() - t0
    assert res.returncode == 0 and not res.timed_out
    assert took < OUTPUT_GRACE + 8, took  # not the 16 s of the background process
    assert res.tail == ["started", "done"]
    text = log.read_text()
    assert "still holds its output" in text and text.rstrip().endswith("# exit code 0")
    # once it ends, what it printed late went nowhere, and the pipe was closed (an unclosed
    # one is a ResourceWarning, an error in this suite)
    time.sleep(max(0.0, 18 - (time.monotonic() - t0)))
    gc.collect()
    assert log.read_text() == text


def test_all_output_is_kept_when_the_command_exits_at_once(tmp_path: Path) -> None:
    # written faster than it is read, the command gone before the reader catches up
    code = "import sys\nfor i in range(20000): print(f'line {i}')\nsys.exit(3)\n"
    log = tmp_path / "step.log"
    lines: list[str] = []
    res = SubprocessRunner().run([sys.executable, "-c", code], cwd=tmp_path, env_changes={},
                                 log_path=log, timeout=120, on_line=lines.append)
    assert res.returncode == 3
    assert lines == [f"line {i}" for i in range(20000)]
    assert res.tail[-1] == "line 19999"
    body = [x for x in log.read_text().splitlines() if x.startswith("line ")]
    assert len(body) == 20000
    assert "still holds" not in log.read_text()
