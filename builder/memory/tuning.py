"""Every knob of the memory scheduler, in one frozen object.

:class:`Tuning` is read by ``builder plan``'s forecast (:mod:`.forecast`), by the scheduler
core (:mod:`.core`) that the broker and the replays drive, and by the estimates
(:mod:`.estimate`).  Each field says its unit and why it exists in its metadata
(``unit``, ``why``); docs/memory.md lists them.  The values are the defaults here and
nowhere else: ``resources/memory_priors.json`` holds only the per-header priors (data that
changes with compilers), not policy.  A knob that is a bare literal in a function is a
knob nobody can find: the policy modules take a ``Tuning`` and read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

__all__ = ["TUNING", "MiB", "Tuning", "knob", "knobs", "knobs_table"]

MiB = 2**20


def knob(default: Any, unit: str, why: str) -> Any:
    """A field of :class:`Tuning`: its default, its unit and why it exists."""
    return field(default=default, metadata={"unit": unit, "why": why})


@dataclass(frozen=True)
class Tuning:
    """The scheduler's knobs (module doc).  ``replace(tuning, fast=0.9)`` makes a variant."""

    # -- the time model (policy.envelope) ---------------------------------------------
    floor: float = knob(0.2, "share of peak",
                        "memory a job may hold from its first instant: lies above every "
                        "RSS curve measured for gcc TUs (the tightest needs 0.16)")
    knee: float = knob(0.6, "share of CPU time",
                       "by this share of its CPU time a job may have reached its peak")
    fast: float = knob(0.85, "share of CPU time",
                       "a job may need only this share of its measured CPU time (history "
                       "taken on a busier machine)")
    watched_fast: float = knob(0.95, "share of CPU time",
                               "``fast`` while the backstop watches the measured memory: a "
                               "job faster than its history then costs a freeze, not a kill")
    late: float = knob(1.05, "multiple of CPU time",
                       "a job is predicted gone only after this multiple of its CPU time")
    tick: float = knob(0.1, "seconds",
                       "period of admission and the guard: memory frees up with time")
    horizon: float = knob(0.3, "seconds",
                          "how far ahead the guard looks; above tick + reaction time")
    bet: float = knob(0.05, "share of budget",
                      "a speculative job (never measured, admitted on its prior's time "
                      "while the backstop watches) may be planned this much above the "
                      "budget: jobs started together on a guessed time do not peak together")
    # -- a job past its single peak (policy.after_peak, policy.released) ----------------
    peak_region: float = knob(0.9, "share of peak",
                              "points of a curve at this share of its highest form its peak")
    drop: float = knob(0.6, "share of peak",
                       "a job is past its peak once it holds this share of it or less")
    reached: float = knob(0.85, "share of predicted peak",
                          "a job seen at this share of its predicted peak has reached it")
    slack: float = knob(0.05, "share of peak",
                        "what a job past its peak may hold above what its curve says")
    # -- admission order (admission.by_size) -------------------------------------------
    same_size: float = knob(0.10, "share of estimate",
                            "estimates this close count as one size: ninja's order decides")
    long: float = knob(1.5, "multiple of the band's median",
                       "a job this long goes first: started late it is the build's tail")
    # -- the guard (guard.guard) -------------------------------------------------------
    near_peak: float = knob(0.9, "share of bound",
                            "a job holding this much of its bound is at its peak: pausing "
                            "it stops no growth")
    stale: float = knob(0.1, "share of peak",
                        "what a job may have grown since its last report (launchers report "
                        "every 0.5 s)")
    # -- the backstop (backstop.react) -------------------------------------------------
    at_peak: float = knob(0.95, "share of expected peak",
                          "a job holding this much has nothing left to grow: not frozen")
    margin: float = knob(0.03, "share of budget",
                         "the freeze line lies this far below the budget ...")
    margin_min: int = knob(96 * MiB, "bytes", "... and at least this far")
    reaction: float = knob(0.25, "seconds",
                           "how far ahead the backstop extrapolates the measured growth")
    backstop_period: float = knob(0.05, "seconds",
                                  "period of the backstop's reads of the build cgroup")
    rate_window: float = knob(0.3, "seconds", "samples the growth rate is measured over")
    # -- the broker --------------------------------------------------------------------
    settle: float = knob(0.25, "seconds",
                         "time to gather ninja's first burst before the first grant, so "
                         "that largest-first applies to all of it")
    launcher_bytes: int = knob(10 * MiB, "bytes",
                               "memory of one launcher process, counted for every launcher "
                               "connected: the estimates do not include it")
    shares_kept: int = knob(8, "jobs",
                            "recent jobs whose CPU share predicts a new job's speed")
    min_share: float = knob(0.05, "CPU share", "the least CPU share a job is expected to get")
    above_growth: float = knob(1.25, "multiple of RSS",
                               "a job above every estimate is expected to grow this much more")
    oom_raise: float = knob(2.0, "multiple of estimate",
                            "a job killed out of memory is recorded at least this large")
    # -- estimates (estimate.estimate, estimate.learned) --------------------------------
    margin_history: float = knob(1.05, "multiple of peak",
                                 "a peak measured once: what 0.1 s sampling can miss")
    margin_history_repeat: float = knob(1.015, "multiple of peak",
                                        "a peak measured twice within 1 %")
    margin_recipe: float = knob(1.15, "multiple of peak",
                                "a recipe value or another flag set's measurement")
    margin_prior: float = knob(1.25, "multiple of peak", "a prior by umbrella header")
    margin_learned: float = knob(1.07, "multiple of peak",
                                 "a peak learned from one sibling in this build")
    margin_learned_again: float = knob(1.03, "multiple of peak",
                                       "a peak learned from two siblings that agree")
    agree: float = knob(0.02, "share of peak",
                        "two sibling peaks this close agree (margin_learned_again)")
    plausible_header: float = knob(0.6, "share of prior",
                                   "a sibling may lower a job known by its umbrella header "
                                   "to this share of the header's prior, no lower")
    plausible_default: float = knob(1.0, "share of prior",
                                    "... and one known by no header below the default prior")

    # -- measuring (the launcher, the history) -----------------------------------------
    sample_period: float = knob(0.1, "s", "how often the launcher samples a job's memory "
                                "(a shorter peak can be missed: margin_history)")
    report_period: float = knob(0.5, "s", "how often a running job reports its CPU time "
                                "and memory to the broker")
    curve_points: int = knob(20, "points", "a job's memory curve as stored in the history: "
                             "its RSS at this many even shares of its CPU time")
    keep_cpus: int = knob(3, "builds", "successive CPU times kept per job; the time model "
                          "plans with their mean (typical_cpu)")

    def watched(self) -> Tuning:
        """This tuning while the backstop watches the build's measured memory."""
        return replace(self, fast=max(self.fast, self.watched_fast))


def knobs() -> list[tuple[str, Any, str, str]]:
    """(name, default, unit, why) of every knob, for the docs."""
    return [(f.name, f.default, f.metadata["unit"], f.metadata["why"]) for f in fields(Tuning)]


def knobs_table() -> str:
    """The knobs as the Markdown table in docs/memory.md (a test keeps the two alike)."""
    rows = ["| knob | default | unit | why |", "| --- | --- | --- | --- |"]
    rows += [f"| `{name}` | {default} | {unit} | {why.replace('``', '`')} |"
             for name, default, unit, why in knobs()]
    return "\n".join(rows) + "\n"


#: the defaults, for pure functions called without a tuning of their own
TUNING = Tuning()
