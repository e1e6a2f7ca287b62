"""The executor's loop decisions (:class:`executor.Executor`): whether a step runs now
(:func:`runs`), which steps may run side by side (:func:`parallel_batch`) and running
them (:func:`run_batch`).

Kernel recipes compile one step per (kernel, arch, format), each writing its own cache
entry: independent steps, which the executor runs on up to ``plan.jobs`` threads.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from builder.errors import Interrupted, StepFailed
from builder.plan.model import CACHED, SKIP, Step

__all__ = ["PARALLEL_KINDS", "parallel_batch", "run_batch", "runs"]


#: step kinds whose steps of one variant are independent of each other (each writes its
#: own cache entry) and may run side by side
PARALLEL_KINDS = frozenset({"kernel"})


def parallel_batch(steps: tuple[Step, ...], i: int, jobs: int) -> list[Step]:
    """The steps from ``steps[i]`` on that may run side by side: consecutive steps of a
    parallel kind (:data:`PARALLEL_KINDS`) none of which depends on another of them.  A
    single step (or none to run in parallel, or ``jobs`` 1) gives a batch of one."""
    out: list[Step] = []
    ids: set[str] = set()
    for step in steps[i:]:
        if step.kind not in PARALLEL_KINDS or any(d in ids for d in step.deps):
            break
        out.append(step)
        ids.add(step.id)
    return out if jobs > 1 and len(out) > 1 else list(steps[i:i + 1])


def run_batch(ex: Any, batch: list[Step], first: int, summary: Any, bad: set[str]) -> None:
    """Independent steps (:func:`parallel_batch`) of the executor ``ex`` on up to
    ``plan.jobs`` threads, with
    the same events and summary as one at a time: each ``start`` when it starts, its
    ``done``/``failed`` when it ends; after a failure (without ``keep_going``) the
    steps not started yet are not run.  An interruption stops every running command
    and raises :class:`Interrupted` once all have returned."""

    queue = [(first + n, s) for n, s in enumerate(batch, 1)]  # events count from 1
    running: dict[Future[None], tuple[int, Step, float]] = {}
    with ThreadPoolExecutor(max_workers=max(1, ex.plan.jobs)) as pool:
        try:
            while queue or running:
                while queue and len(running) < ex.plan.jobs:
                    i, step = queue.pop(0)
                    if runs(ex, step, i, summary, bad):
                        ex.emit("start", step, index=i)
                        running[pool.submit(ex.run_step, step)] = \
                            (i, step, time.monotonic())
                if not running:
                    continue
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    i, step, t0 = running.pop(fut)
                    exc = fut.exception()
                    if isinstance(exc, StepFailed):
                        summary.failed.append(exc)
                        bad.add(step.id)
                        ex.emit("failed", step, time.monotonic() - t0, str(exc),
                                   index=i)
                    elif exc is not None:
                        queue.clear()
                        raise exc
                    else:
                        summary.done.append(step.id)
                        ex.emit("done", step, time.monotonic() - t0, index=i)
        except BaseException as exc:
            queue.clear()
            stop = getattr(ex.runner, "stop_all", None)
            if callable(stop):
                stop()
            wait(running)
            if not isinstance(exc, (KeyboardInterrupt, Interrupted)):
                raise
            names = ", ".join(s.id for _, s, _ in running.values())
            raise Interrupted(f"interrupted during {names or 'the build'}; the next "
                              f"build resumes from the steps that completed") from None


def runs(ex: Any, step: Step, i: int, summary: Any, bad: set[str]) -> bool:
    """Whether the executor ``ex`` is to run ``step`` now; if not, records in ``summary``
    and announces why (skipped, cached, a dependency failed, the build stops)."""
    if step.status == SKIP:
        summary.skipped.append(step.id)
        bad.add(step.id)
        ex.emit("skip", step, message=step.reason, index=i)
        return False
    if step.status == CACHED:
        summary.cached.append(step.id)
        ex.emit("cached", step, index=i)
        return False
    broken = [d for d in step.deps if d in bad]
    if broken:
        summary.aborted.append(step.id)
        bad.add(step.id)
        ex.emit("aborted", step, message=f"needs {broken[0]}", index=i)
        return False
    if summary.failed and not ex.keep_going:
        summary.aborted.append(step.id)
        bad.add(step.id)
        return False
    return True
