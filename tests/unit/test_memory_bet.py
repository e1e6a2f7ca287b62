"""The bet (builder/memory/admission.py): a job never measured, admitted on its prior's
time while the backstop watches the build's memory, may be planned up to ``Tuning.bet``
above the budget — by admission and by the guard alike — and a measured job may not."""

from __future__ import annotations

from dataclasses import replace

from builder.memory.admission import admit
from builder.memory.guard import guard
from builder.memory.jobs import JobRecord
from builder.memory.policy import Job, Running, envelope
from builder.memory.running import Run
from builder.memory.tuning import Tuning

GiB = 2**30
#: a cold libamm batch: torch TUs at the recipe's 1.4 GiB on the prior's 18 s, whose four
#: peaks (5.6 GiB) pass a 5.5 GiB budget by 1.8 %
PEAK, PRIOR = int(1.4 * GiB), 18.0
BUDGET = int(5.5 * GiB)


def _batch(speculative: bool) -> list[Job]:
    return [Job(f"tu{i}", PEAK, i, PRIOR, speculative=speculative) for i in range(6)]


def test_a_cold_batch_on_its_prior_time_starts_one_more_job_within_the_bet() -> None:
    m = Tuning()
    assert len(admit(_batch(True), {}, BUDGET, 16, model=m)) == 4
    # the same jobs measured (a history's time and peak) keep the budget itself
    assert len(admit(_batch(False), {}, BUDGET, 16, model=m)) == 3
    # no bet: the speculative jobs keep it too
    assert len(admit(_batch(True), {}, BUDGET, 16, model=replace(m, bet=0.0))) == 3
    # past the bet nothing more starts: a fifth would need 7.0 GiB
    assert len(admit(_batch(True), {}, int(5.2 * GiB), 16, model=m)) == 3


def test_the_guard_lets_a_speculative_job_run_where_it_was_admitted() -> None:
    # four TUs admitted together on the prior's time, 9 s in: their bounds reach the
    # four peaks within the guard's horizon.  Admitted within the bet, the youngest runs
    # on; were it measured (no bet), the guard would pause it at once.
    m = Tuning()
    jobs = {f"tu{i}": Running(PEAK, 0.0, PRIOR, cpu=9.0, rss=int(0.6 * PEAK), rss_cpu=9.0,
                              since=float(i) / 10, speculative=True) for i in range(4)}
    assert sum(envelope(r, 9.5, m).ahead(9.8) for r in jobs.values()) > BUDGET
    assert guard(jobs, BUDGET, 9.5, m) == set()
    measured = {k: replace(r, speculative=False) for k, r in jobs.items()}
    assert guard(measured, BUDGET, 9.5, m) == {"tu3"}


def test_the_broker_tells_the_policy_which_running_jobs_are_speculative() -> None:
    rec = JobRecord("1:a.cpp", "a.cpp", PEAK, PEAK, "recipe", 0.0, speculative=True)
    assert Run(rec, PRIOR, 1, 0.0).view(1.0).speculative
    rec = JobRecord("2:b.cpp", "b.cpp", PEAK, PEAK, "history", 0.0)
    assert not Run(rec, PRIOR, 1, 0.0).view(1.0).speculative
