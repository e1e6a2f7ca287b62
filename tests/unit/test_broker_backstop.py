"""The backstop in the scheduler core on a clock of the test's own: the growth rate that
decides a freeze is measured again from each freeze on."""

from __future__ import annotations

from builder.memory.backstop import lines
from builder.memory.core import Memory, Pause, Scheduler
from builder.memory.jobs import JobRecord
from builder.memory.running import Run

MiB = 2**20
BUDGET = 4096 * MiB


def _core() -> Scheduler:
    b = Scheduler(BUDGET, 8)
    for i in range(4):  # four compiles halfway to their 1000 MiB peaks, oldest first
        rec = JobRecord(f"j{i}", f"j{i}.cpp", 1000 * MiB, 1000 * MiB, "recipe", 0.0)
        b.running[rec.id] = Run(rec, 0.0, 1, float(i), rss=500 * MiB)
    return b


def test_one_freeze_per_burst_of_growth() -> None:
    # memory climbs 100 MiB in 0.1 s toward the freeze line, and the freeze stops it: the
    # samples before the freeze said 1 GiB/s, and counted again 50 ms later they froze a
    # second job, then a third, for growth that had already stopped
    b = _core()
    line = lines(BUDGET, 0.0)
    assert b.step(Memory(int(line.freeze) - 200 * MiB), 0.0) == []
    assert b.step(Memory(int(line.freeze) - 100 * MiB), 0.1) == [Pause("j3", held=True)]
    for step in range(1, 6):  # flat from here on
        b.step(Memory(int(line.freeze) - 100 * MiB), 0.1 + 0.05 * step)
    assert {i for i, run in b.running.items() if run.held} == {"j3"}
    # growth after the freeze still counts: the next youngest is frozen
    b.step(Memory(int(line.freeze) - 20 * MiB), 0.45)
    assert {i for i, run in b.running.items() if run.held} == {"j3", "j2"}
