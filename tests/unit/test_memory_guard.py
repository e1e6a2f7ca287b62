"""The pause guard (builder/memory/guard.py): which running jobs pause, which resume.
Older jobs go first whatever their pauses; a job at its peak is never paused (pausing it
frees nothing and holds its memory longer); a paused job counts at what it holds."""

from __future__ import annotations

from builder.memory.guard import guard
from builder.memory.policy import Running
from builder.memory.tuning import Tuning

GiB = 2**30
#: a torch TU's measured memory curve (share of its peak by share of its CPU time)
CURVE = (0.15, 0.25, 0.3, 0.4, 0.45, 0.45, 0.47, 0.53, 0.6, 0.69,
         0.7, 0.71, 0.75, 0.8, 0.85, 0.91, 0.96, 0.98, 0.99, 1.0)


def test_jobs_at_their_peak_are_not_paused_for_a_young_one() -> None:
    # three TUs started together: the two behind the oldest are overdue (more CPU than
    # measured), at their peaks and about to end; a young TU grows.  The bounds do not fit:
    # only the young one's growth can be stopped.  The guard used to pause the two at 99 %
    # too, and they stayed paused, holding 2.4 GB, while the young one compiled for 10 s.
    m = Tuning()
    oldest = Running(int(1.5 * GiB), 0.0, 15.0, cpu=10.0, rss=int(1.45 * GiB), curve=CURVE,
                     rss_cpu=10.0)
    late = Running(int(1.2 * GiB), 0.0, 9.9, cpu=10.6, rss=int(1.19 * GiB), curve=CURVE,
                   rss_cpu=10.6)
    young = Running(int(1.2 * GiB), 8.0, 10.0, cpu=2.6, rss=int(0.45 * GiB), curve=CURVE,
                    rss_cpu=2.6)
    jobs = {"oldest": oldest, "late-a": late, "late-b": late, "young": young}
    assert guard(jobs, int(4.0 * GiB), 10.6, m) == {"young"}
    # with room for all of them, nobody is paused
    assert guard(jobs, 8 * GiB, 10.6, m) == set()


def test_age_is_the_first_start_not_shortened_by_pauses() -> None:
    # "a" was granted first and paused for 5 s earlier: its ``started`` is now 2 s later
    # than "b"'s.  Both grow, and only one fits beside the oldest: "a", the older, goes on.
    m = Tuning()
    oldest = Running(GiB, 0.0, 20.0, cpu=5.0, rss=GiB // 2)
    a = Running(GiB, 6.0, 10.0, cpu=2.0, rss=GiB // 4, since=1.0)
    b = Running(GiB, 4.0, 10.0, cpu=2.0, rss=GiB // 4, since=4.0)
    budget = int(1.65 * GiB)
    assert guard({"oldest": oldest, "a": a, "b": b}, budget, 11.0, m) == {"b"}
    # without ``since`` (a caller that knows no first start) the shifted start decides
    a_shifted = Running(GiB, 6.0, 10.0, cpu=2.0, rss=GiB // 4)
    assert guard({"oldest": oldest, "a": a_shifted, "b": b}, budget, 11.0, m) == {"a"}


def test_a_paused_job_counts_at_what_it_holds() -> None:
    # "p2" ran ahead of its model (0.3 GB after 0.5 s of CPU, above its ramp), so its
    # bound is its peak; paused at 0.3 GB it cannot grow.  Counted at its peak, it kept
    # the older paused "p1" from resuming although everything fits.
    m = Tuning()
    oldest = Running(GiB, 0.0, 20.0, cpu=10.0, rss=GiB // 2)
    p1 = Running(GiB, 1.0, 10.0, cpu=4.0, rss=int(0.3 * GiB), paused=True, since=1.0)
    p2 = Running(GiB, 2.0, 10.0, cpu=0.5, rss=int(0.3 * GiB), paused=True, since=2.0)
    budget = int(2.5 * GiB)
    assert guard({"oldest": oldest, "p1": p1, "p2": p2}, budget, 12.0, m) == {"p2"}
