"""The rounds of one ``builder build``: a dependent whose compile key waits for a
dependency still to be built (:attr:`Variant.waits_for`, "early cutoff" in
:mod:`builder.resolve.keys`) is held back, and the build is planned again once the
dependency is built — then the dependent is keyed by what the dependency really made: up
to date when that is byte-identical to what it was built against, rebuilt otherwise.

:class:`Rounds` holds what the rounds did so far (their summaries merged) and says, for
each plan, what runs now and what waits.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from builder.errors import PlanError
from builder.plan.model import BUILD, CACHED, TO_RUN, BuildPlan

__all__ = ["Rounds"]


class Rounds:
    def __init__(self) -> None:
        self.summary: Any = None  # executor.Summary of the rounds so far, merged
        self.ex: Any = None  # the last round's executor (its notes are merged in)
        self.built: frozenset[str] = frozenset()  # variants built by an earlier round
        self.cutoffs: list[str] = []  # one line per dependent found up to date
        self._waited: dict[str, tuple[str, ...]] = {}  # variant → what it waited for
        self._rounds = 0
        self._recorder: Any = None

    def recorder(self, new: Any) -> Any:
        """The build record of every round (execute.record.BuildRecorder): the first
        round's, following each later round's plan."""
        if self._recorder is None:
            self._recorder = new
        else:
            self._recorder.plan = new.plan
        return self._recorder

    def said(self, plan: BuildPlan) -> None:
        """Note, for each variant that waited in an earlier round, how it came out."""
        recipe_of = {v.id: v.recipe for v in plan.variants}
        for v in plan.variants:
            deps = self._waited.pop(v.id, None)
            if deps is None or v.waits_for or v.status not in (BUILD, CACHED):
                continue  # still waiting, or downloaded or skipped: nothing to say
            names = ", ".join(dict.fromkeys(recipe_of.get(d, d) for d in deps))
            if v.status == CACHED or (v.status == BUILD and all(
                    s.kind in ("test", "wheel") for s in plan.steps_of(v.id)
                    if s.status == BUILD)):
                self.cutoffs.append(f"{v.recipe}: up to date (dependency {names} rebuilt, "
                                    f"identical output)")
            else:
                self.cutoffs.append(f"{v.recipe}: built against the new output of {names}")

    def split(self, plan: BuildPlan) -> tuple[BuildPlan, frozenset[str]]:
        """The plan of what runs in this round, and the variants that wait (with every
        step of theirs) for the next one."""
        self._rounds += 1
        if self._rounds > len(plan.variants) + 1:  # each round settles one level
            raise PlanError("the build kept planning dependents again without their "
                            "dependencies settling; run `builder plan` to see what waits")
        waiting = frozenset(v.id for v in plan.variants if v.waits_for)
        self._waited.update({v.id: v.waits_for for v in plan.variants if v.waits_for})
        if not waiting:
            return plan, waiting
        now = replace(plan, variants=tuple(v for v in plan.variants if v.id not in waiting),
                      steps=tuple(s for s in plan.steps if s.variant not in waiting))
        return now, waiting

    def add(self, summary: Any, ex: Any) -> tuple[Any, Any]:
        """Merge a round's summary (and its executor's notes) into the rounds'."""
        if self.summary is None:
            self.summary, self.ex = summary, ex
        else:
            s = self.summary
            s.done += summary.done
            s.cached += summary.cached
            s.skipped += summary.skipped
            s.failed += summary.failed
            s.aborted += summary.aborted
            s.oom += summary.oom
            s.seconds += summary.seconds
            for attr in ("cache_stats", "memory_notes"):
                getattr(ex, attr)[:0] = getattr(self.ex, attr)
            ex.test_counts = {**self.ex.test_counts, **ex.test_counts}
            self.ex = ex
        self.built |= {sid.rsplit("/", 1)[0] for sid in summary.done}
        return self.summary, self.ex

    def abandon(self, plan: BuildPlan, waiting: frozenset[str]) -> list[str]:
        """The steps of the variants that waited for a round that failed: not run (each
        said, like a step whose dependency failed)."""
        out = []
        for s in plan.steps:
            if s.variant in waiting and s.status in TO_RUN:
                v = next(v for v in plan.variants if v.id == s.variant)
                print(f"not run {s.id} (waits for {', '.join(v.waits_for)})", flush=True)
                out.append(s.id)
        return out

    def retried(self) -> None:
        """The last round is being retried (a download built here instead): its failures
        and the steps they held back are not the build's (an earlier round had none)."""
        if self.summary is not None:
            self.summary.failed.clear()
            self.summary.aborted.clear()
