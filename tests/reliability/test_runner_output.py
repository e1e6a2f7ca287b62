"""A step's command is over when it exits, not when its output pipe closes: a process it
left in the background (a compiler-cache server, a test's daemon) inherits the pipe and
may hold it for hours.  Everything the command printed is still kept."""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

import pytest

from builder.util.runner import OUTPUT_GRACE, SubprocessRunner


def test_a_background_process_holding_the_output_does_not_hold_the_step(
        tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    (tmp_path / ".builder-state").write_text("")  # a folder builder owns (the writer)
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
    (tmp_path / ".builder-state").write_text("")  # a folder builder owns (the writer)
    lines: list[str] = []
    res = SubprocessRunner().run([sys.executable, "-c", code], cwd=tmp_path, env_changes={},
                                 log_path=log, timeout=120, on_line=lines.append)
    assert res.returncode == 3
    assert lines == [f"line {i}" for i in range(20000)]
    assert res.tail[-1] == "line 19999"
    body = [x for x in log.read_text().splitlines() if x.startswith("line ")]
    assert len(body) == 20000
    assert "still holds" not in log.read_text()


@pytest.mark.parametrize("error", [RuntimeError("bug"), BrokenPipeError(32, "Broken pipe")])
def test_a_failing_live_display_neither_stops_nor_loses_the_output(
        tmp_path: Path, error: Exception) -> None:
    # `-v` prints each line; if that fails (a display bug, a closed terminal) the step
    # must go on: before, the reader stopped and closed the pipe, and the command died of
    # SIGPIPE at its next line (2 MB of output is 30 x the pipe's buffer)
    code = "for i in range(40000): print(f'line {i} ' + 'x' * 40)\n"
    seen: list[str] = []

    def display(line: str) -> None:
        seen.append(line)
        if len(seen) == 3:
            raise error

    log = tmp_path / "step.log"
    (tmp_path / ".builder-state").write_text("")  # a folder builder owns (the writer)
    t0 = time.monotonic()
    res = SubprocessRunner().run([sys.executable, "-c", code], cwd=tmp_path, env_changes={},
                                 log_path=log, timeout=30, on_line=display)
    assert res.returncode == 0 and not res.timed_out and time.monotonic() - t0 < 20
    assert len(seen) == 3  # the display was called no more
    text = log.read_text()
    assert f"# live output stopped: {error!r}" in text
    assert len([x for x in text.splitlines() if x.startswith("line ")]) == 40000
