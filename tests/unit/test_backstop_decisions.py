"""The backstop's decisions (pure): freeze the youngest growing job near the budget,
never the oldest; thaw the oldest frozen one when it has room to reach its peak (or when
nothing else runs); kill and requeue the youngest — frozen first — at the kill line."""

from __future__ import annotations

from builder.memory.backstop import JobView, lines, react

MiB = 2**20
BUDGET = 4096 * MiB


def _jobs(*paused: bool, held: tuple[bool, ...] = ()) -> list[JobView]:
    held = held or tuple(paused)
    return [JobView(f"j{i}", float(i), 1000 * MiB, 600 * MiB, p, h)
            for i, (p, h) in enumerate(zip(paused, held, strict=True))]


def test_below_the_freeze_line_nothing_happens() -> None:
    line = lines(BUDGET, 0.0)
    assert react(_jobs(False, False, False), int(line.freeze) - MiB, 0.0, BUDGET).freeze == ()


def test_the_youngest_running_job_is_frozen_never_the_oldest() -> None:
    line = lines(BUDGET, 0.0)
    used = int(line.freeze) + MiB
    assert react(_jobs(False, False, False), used, 0.0, BUDGET).freeze == ("j2",)
    assert react(_jobs(False, False, True), used, 0.0, BUDGET).freeze == ("j1",)
    assert react(_jobs(False, True, True), used, 0.0, BUDGET).freeze == ()  # oldest goes on


def test_fast_growth_freezes_earlier() -> None:
    slow, fast = lines(BUDGET, 0.0), lines(BUDGET, 800 * MiB)
    assert fast.freeze < slow.freeze and fast.kill < slow.kill
    used = int(fast.freeze) + MiB  # under the line at rest, over it while growing fast
    assert react(_jobs(False, False), used, 0.0, BUDGET).freeze == ()
    assert react(_jobs(False, False), used, 800 * MiB, BUDGET).freeze == ("j1",)


def test_at_the_kill_line_the_youngest_frozen_job_is_requeued() -> None:
    line = lines(BUDGET, 0.0)
    used = int(line.kill) + MiB
    assert react(_jobs(False, True, False), used, 0.0, BUDGET).requeue == ("j1",)
    assert react(_jobs(False, False, False), used, 0.0, BUDGET).requeue == ("j2",)
    assert react(_jobs(False), used, 0.0, BUDGET).requeue == ()  # alone: nothing to give


def test_a_frozen_job_is_thawed_when_it_can_reach_its_peak() -> None:
    line = lines(BUDGET, 0.0)
    jobs = _jobs(False, True)  # j1 holds 600 of its 1000 MiB
    room_needed = 400 * MiB
    assert react(jobs, int(line.freeze) - room_needed + MiB, 0.0, BUDGET).thaw == ()
    assert react(jobs, int(line.freeze) - room_needed - MiB, 0.0, BUDGET).thaw == ("j1",)


def test_when_everything_is_stopped_the_oldest_frozen_job_goes_on() -> None:
    line = lines(BUDGET, 0.0)
    jobs = [JobView("a", 0.0, 1000 * MiB, 100 * MiB, True, False),  # paused by the guard
            JobView("b", 1.0, 1000 * MiB, 100 * MiB, True, True),
            JobView("c", 2.0, 1000 * MiB, 100 * MiB, True, True)]
    assert react(jobs, int(line.freeze) - MiB, 0.0, BUDGET).thaw == ("b",)


def test_a_job_at_its_peak_is_not_frozen_the_youngest_growing_one_is() -> None:
    # a TU at 99 % of its compile, holding its peak: freezing it stops no growth and keeps
    # its memory held longer — the backstop froze such jobs one after another while the
    # one still growing went on
    line = lines(BUDGET, 0.0)
    used = int(line.freeze) + MiB
    jobs = [JobView("oldest", 0.0, 1000 * MiB, 600 * MiB),
            JobView("growing", 1.0, 1000 * MiB, 500 * MiB),
            JobView("at-peak", 2.0, 1000 * MiB, 990 * MiB)]
    assert react(jobs, used, 0.0, BUDGET).freeze == ("growing",)
    at_peak = [jobs[0], JobView("done-soon", 1.0, 1000 * MiB, 980 * MiB)]
    assert react(at_peak, used, 0.0, BUDGET).freeze == ()
    assert react(at_peak, int(line.kill) + MiB, 0.0, BUDGET).requeue == ("done-soon",)
