"""bench/cold_replay.py runs the real admission policy over jobs measured on the GPU
machine: its figures must keep matching what was measured there (bench/memory_cap.py)."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import REPO


def test_replay_reproduces_the_measured_build_times() -> None:
    out = subprocess.run([sys.executable, str(REPO / "bench" / "cold_replay.py")],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    secs = {m.group(1).strip(): float(m.group(2))
            for m in re.finditer(r"^(.+?)\s+([\d.]+) s", out, re.M)}
    cold = secs["cold, as builder ran it before the backstop"]
    history = secs["with history (every job measured)"]
    # measured there: cold 35.3–36.0 s, history 30.3–30.8 s, -j5 29.5–29.7 s, -j4 37.7–38.2 s
    assert 33.0 <= cold <= 38.0 and 29.0 <= history <= 32.5
    assert 28.5 <= secs["fixed -j5"] <= 31.5 and 36.5 <= secs["fixed -j4"] <= 40.0
    assert history < cold
    # admitted on the prior's time, without its margin: no slower, and the replay's jobs
    # (with no backstop to stop them) stay within the budget
    spec = secs["cold, speculative (backstop watching)"]
    assert spec <= cold + 0.5
    assert not re.search(r"speculative .*more than the budget", out)
    # with history and the backstop watching: no slower than the best -jN that fits
    assert secs["with history, backstop watching"] <= secs["fixed -j5"]
    assert not re.search(r"backstop watching .*more than the budget", out)
    assert "fixed -j6" in out and re.search(r"fixed -j6 .*more than the budget", out)
    assert not re.search(r"fixed -j5 .*more than the budget", out)
