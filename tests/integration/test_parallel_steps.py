"""Independent kernel steps run side by side, up to the plan's jobs, with the executor's
events, summary and interruption semantics (a fake runner that takes time)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from builder.errors import Interrupted
from builder.execute.executor import Event, Executor, parallel_batch
from builder.plan.model import BuildPlan
from builder.recipe.recipeset import RecipeSet
from builder.resolve.request import Request
from builder.resolve.resolver import resolve
from builder.util.runner import Result
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import host


class SlowRunner:
    """Writes the ``-o`` file after ``delay`` seconds; counts how many run at once."""

    def __init__(self, delay: float = 0.3, fail: str = "", interrupt: str = "") -> None:
        self.delay, self.fail, self.interrupt = delay, fail, interrupt
        self.lock = threading.Lock()
        self.now = self.most = 0
        self.stopped = threading.Event()

    def run(self, argv: Sequence[str], *, cwd: Path, env_changes: Mapping[str, str],
            log_path: Path, timeout: float,
            on_line: Callable[[str], None] | None = None,
            base_env: Mapping[str, str] | None = None) -> Result:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            joined = " ".join(argv)
            if self.interrupt and self.interrupt in joined:
                return Result(130, interrupted=True)
            if self.fail and self.fail in joined:  # at once: before its neighbour ends
                return Result(2, ["error: broken kernel"])
            self.stopped.wait(self.delay)
            if "-o" in argv:
                out = Path(argv[list(argv).index("-o") + 1])
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text("// ptx\n")
            return Result(0)
        finally:
            with self.lock:
                self.now -= 1

    def stop_all(self) -> None:
        self.stopped.set()


def kernel_plan(project: Path, home: Path, jobs: int = 2) -> BuildPlan:
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select(["kern"], ws.recipes_dir)
    return resolve(roots, rs, Request(env=(("HOME", str(home)),), jobs=jobs),
                   host("linux-cuda13"), read_state(ws, rs.closure(roots)), ws)


def run(plan: BuildPlan, project: Path, runner: SlowRunner, keep_going: bool = False
        ) -> tuple[object, list[Event]]:
    from builder.workspace.ownership import claim_state

    events: list[Event] = []
    claim_state(Workspace.at(project).state)  # as the command line does before a build
    ex = Executor(plan, Workspace.at(project), runner, on_event=events.append,
                  keep_going=keep_going)
    return ex.run(), events


def test_kernel_steps_run_in_parallel_up_to_the_plans_jobs(project: Path,
                                                           tmp_path: Path) -> None:
    plan = kernel_plan(project, tmp_path)
    kernels = [s.id for s in plan.steps if s.kind == "kernel"]
    assert len(kernels) == 3 and plan.jobs == 2
    assert [s.id for s in parallel_batch(plan.steps, 0, plan.jobs)] == kernels
    runner = SlowRunner()
    t0 = time.monotonic()
    summary, events = run(plan, project, runner)
    assert summary.ok and set(kernels) <= set(summary.done)  # type: ignore[attr-defined]
    assert runner.most == 2  # never more than the plan's jobs
    assert time.monotonic() - t0 < 3 * 0.3 + 0.25  # 2 rounds, not 3
    for k in kernels:  # each step: start, then done; the publish step after all of them
        kinds = [e.kind for e in events if e.step == k]
        assert kinds == ["start", "done"]
    order = [e.step for e in events if e.kind == "done"]
    assert order.index(f"{plan.variants[0].id}/publish") > max(order.index(k) for k in kernels)
    assert {e.index for e in events if e.step in kernels} == {1, 2, 3}


def test_one_job_runs_them_one_at_a_time(project: Path, tmp_path: Path) -> None:
    plan = kernel_plan(project, tmp_path, jobs=1)
    assert len(parallel_batch(plan.steps, 0, plan.jobs)) == 1
    runner = SlowRunner(delay=0.05)
    summary, _ = run(plan, project, runner)
    assert summary.ok and runner.most == 1  # type: ignore[attr-defined]


def test_a_failed_kernel_fails_its_variant_and_stops_what_was_not_started(
        project: Path, tmp_path: Path) -> None:
    plan = kernel_plan(project, tmp_path)
    kernels = [s.id for s in plan.steps if s.kind == "kernel"]
    summary, _ = run(plan, project, SlowRunner(fail="-arch=sm_75"))
    failed = [f.step_id for f in summary.failed]  # type: ignore[attr-defined]
    assert failed == [kernels[0]]  # scale:sm_75 (scale:sm_80 ran beside it)
    assert kernels[1] in summary.done  # type: ignore[attr-defined]
    # not started after the failure (without --keep-going), like any later step
    assert kernels[2] in summary.aborted  # type: ignore[attr-defined]
    assert f"{plan.variants[0].id}/publish" in summary.aborted  # type: ignore[attr-defined]
    summary2, _ = run(plan, project, SlowRunner(fail="-arch=sm_75"), keep_going=True)
    assert set(kernels[1:]) <= set(summary2.done)  # type: ignore[attr-defined]


def test_an_interruption_stops_the_steps_running_beside_it(project: Path,
                                                          tmp_path: Path) -> None:
    plan = kernel_plan(project, tmp_path)
    runner = SlowRunner(delay=30.0, interrupt="-arch=sm_80")
    t0 = time.monotonic()
    with pytest.raises(Interrupted, match="interrupted during"):
        run(plan, project, runner)
    assert runner.stopped.is_set() and time.monotonic() - t0 < 10
