"""The broker's backstop loop (Broker._react) on a clock of the test's own: the growth rate
that decides a freeze is measured again from each freeze on."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.memory.backstop import lines
from builder.memory.broker import Broker, BrokerConfig
from builder.memory.jobs import JobRecord, Live

MiB = 2**20
BUDGET = 4096 * MiB


def _broker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: list[float]) -> Broker:
    b = Broker(tmp_path / "b.sock", BrokerConfig(
        budget=BUDGET, slots=8, source_root=str(tmp_path), build_dir=str(tmp_path / "build"),
        history_path=str(tmp_path / "history.json")))
    monkeypatch.setattr(b, "now", lambda: clock[0])
    for i in range(4):  # four compiles halfway to their 1000 MiB peaks, oldest first
        rec = JobRecord(f"j{i}", f"j{i}.cpp", 1000 * MiB, 1000 * MiB, "recipe", 0.0)
        live = Live(rec, 0.0, 1, float(i), rss=500 * MiB)
        live.granted = True
        b.running[rec.id] = live
    return b


def test_one_freeze_per_burst_of_growth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    # memory climbs 100 MiB in 0.1 s toward the freeze line, and the freeze stops it: the
    # samples before the freeze said 1 GiB/s, and counted again 50 ms later they froze a
    # second job, then a third, for growth that had already stopped
    clock = [0.0]
    b = _broker(tmp_path, monkeypatch, clock)
    line = lines(BUDGET, 0.0, 0.25)
    b._react(int(line.freeze) - 200 * MiB)
    clock[0] = 0.1
    b._react(int(line.freeze) - 100 * MiB)
    assert {i for i, live in b.running.items() if live.held} == {"j3"}
    for step in range(1, 6):  # flat from here on
        clock[0] = 0.1 + 0.05 * step
        b._react(int(line.freeze) - 100 * MiB)
    assert {i for i, live in b.running.items() if live.held} == {"j3"}
    # growth after the freeze still counts: the next youngest is frozen
    clock[0] = 0.45
    b._react(int(line.freeze) - 20 * MiB)
    assert {i for i, live in b.running.items() if live.held} == {"j3", "j2"}
