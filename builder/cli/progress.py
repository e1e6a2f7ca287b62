"""Progress output for ``builder build``.

:class:`LinePrinter` prints one line per event — for logs, pipes and CI (GitHub
Actions gets a ``::group::`` fold per step).  :class:`LiveProgress` is used on a
terminal: a bar of steps done/total with an ETA from earlier builds' step times,
the compile jobs running now with the memory reserved for each against the
budget, and cache hits.  ``NO_COLOR`` turns colours off.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from builder.execute.executor import Event
from builder.plan.text import estimate_source

__all__ = ["LinePrinter", "LiveProgress", "eta", "predicted"]


class LinePrinter:
    def __init__(self, quiet: bool = False, verbose: bool = False) -> None:
        self.quiet = quiet
        self.verbose = verbose
        self.github = os.environ.get("GITHUB_ACTIONS") == "true"

    def event(self, e: Event) -> None:
        where = f"[{e.index}/{e.total}]"
        if e.kind == "start":
            if self.github:
                print(f"::group::{e.step}", flush=True)
            if not self.quiet:
                print(f"{where} run     {e.step}", flush=True)
        elif e.kind == "done":
            if not self.quiet:
                print(f"{where} done    {e.step} ({e.seconds:.1f}s)", flush=True)
            if self.github:
                print("::endgroup::", flush=True)
        elif e.kind == "failed":
            print(f"{where} FAILED  {e.step} ({e.seconds:.1f}s)", flush=True)
            if self.github:
                print("::endgroup::", flush=True)
        elif e.kind == "aborted":
            print(f"{where} not run {e.step} ({e.message})", flush=True)
        elif e.kind == "progress" and not self.quiet:
            print(f"{where} ...     {e.step}: {e.message}", flush=True)
        elif e.kind == "skip" and self.verbose:
            print(f"{where} skip    {e.step}: {e.message}", flush=True)
        elif e.kind == "cached" and self.verbose:
            print(f"{where} cached  {e.step}", flush=True)

    def line(self, step: str, text: str) -> None:
        sys.stdout.write(f"    {text}\n")


def _bar(total: float, completed: float) -> Any:
    """A progress bar on a line of its own (a bare ProgressBar ends no line: the next line
    was drawn after it, and cut off at the terminal's width)."""
    from rich.progress_bar import ProgressBar
    from rich.table import Table

    grid = Table.grid()
    grid.add_row(ProgressBar(total=total, completed=completed, width=60))
    return grid


def predicted(step: Any) -> float:
    """The plan's wall-time prediction of a compile step (0: none)."""
    from builder.plan.payloads import CompileJobs

    return step.payload.prediction.wall if isinstance(step.payload, CompileJobs) else 0.0


def _jobs(step: Any) -> int:
    """How many compile jobs the plan predicts for a step (0: not a compile step)."""
    from builder.plan.payloads import CompileJobs

    return step.payload.prediction.jobs if isinstance(step.payload, CompileJobs) else 0


def eta(expected: dict[str, float], left: list[str], running: dict[str, float],
        jobs: tuple[int, int] | None = None) -> tuple[float, bool, bool]:
    """Seconds still to go, whether every step left had an expected time, and whether a
    running step has outrun its expectation.  ``expected``: step → seconds (0: unknown),
    ``left``: the steps not finished, ``running``: step → seconds it has run, ``jobs``:
    (done, total) compile jobs of the running compile step.  A running step has the rest
    of its expected time left — or, once it has compiled some of its jobs, what its own
    pace says the rest takes (so a step past its prediction is not "~0s" for minutes)."""
    total, known, over = 0.0, True, False
    for sid in left:
        exp = expected.get(sid, 0.0)
        ran = running.get(sid)
        if ran is None:
            total += exp
            known = known and exp > 0
            continue
        rest = max(exp - ran, 0.0)
        if jobs is not None and jobs[1] > 0 and 0 < jobs[0] < jobs[1] and _is_compile(sid):
            rest = ran * (jobs[1] - jobs[0]) / jobs[0]  # its own pace so far
        elif exp and ran > exp:
            over, known = True, False  # how much longer: not known
        elif not exp:
            known = False
        total += rest
    return total, known, over


def _is_compile(step_id: str) -> bool:
    return step_id.rsplit("/", 1)[-1] == "build"


def _label(step_id: str) -> str:
    """``libamm/cpu-release-py3.11-0123456789ab/build`` → ``libamm cpu-release-py3.11 build``:
    the variant's key hash says nothing to a reader."""
    recipe, vdir, name = [*step_id.split("/", 2), "", ""][:3]
    parts = vdir.split("-")
    if len(parts) > 1 and len(parts[-1]) == 12:
        parts = parts[:-1]
    return " ".join(x for x in (recipe, "-".join(parts), name) if x)


def _mib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


class LiveProgress:
    """A rich live display; falls back to nothing it cannot draw."""

    def __init__(self, plan: Any, executor_ref: Any, times: dict[str, float],
                 verbose: bool = False, later: Sequence[Any] = (), earlier: int = 0,
                 built: frozenset[str] = frozenset(), t0: float | None = None) -> None:
        """``later``: the steps of variants that wait for this round's (a build in rounds,
        :mod:`builder.cli.rounds`), counted and predicted with it; ``earlier``: the steps
        earlier rounds ran, and ``built`` their variants (now up to date, not "cached");
        ``t0``: when the build started."""
        from rich.console import Console
        from rich.live import Live

        from builder.execute.record import step_key
        from builder.plan.model import TO_RUN

        self.console = Console(no_color="NO_COLOR" in os.environ)
        self.plan = plan
        self.executor_ref = executor_ref
        runs = [s for s in (*plan.steps, *later) if s.status in TO_RUN]
        self.todo = [s.id for s in runs]
        self.earlier = earlier
        # earlier builds' step times, else the plan's compile-time prediction (a cold build)
        self.expected = {s.id: times.get(step_key(s.id), 0.0) or predicted(s) for s in runs}
        self.from_history = any(times.get(step_key(sid)) for sid in self.todo)
        self.done: set[str] = set()
        self.started: dict[str, float] = {}  # running step → when it started
        self.jobs = {s.id: _jobs(s) for s in plan.steps if s.status in TO_RUN}
        self.cached = sum(1 for s in plan.steps if s.status not in (*TO_RUN, "skip")
                          and s.variant not in built)
        self.current = ""
        self.started_step = time.monotonic()
        self.verbose = verbose
        self.t0 = time.monotonic() if t0 is None else t0
        self.live = Live(self, console=self.console, refresh_per_second=4, transient=False)

    def __enter__(self) -> LiveProgress:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def event(self, e: Event) -> None:
        if e.kind == "start":
            self.current, self.started_step = e.step, time.monotonic()
            self.started[e.step] = self.started_step
        elif e.kind in ("done", "failed", "aborted"):
            self.done.add(e.step)
            self.started.pop(e.step, None)
            if e.kind == "failed":
                self.console.print(f"[red]FAILED[/red] {e.step} ({e.seconds:.1f}s)")
            elif e.kind == "done" and self.verbose:
                self.console.print(f"done {e.step} ({e.seconds:.1f}s)")
        elif e.kind == "progress":
            self.console.print(f"{e.step}: {e.message}", markup=False, highlight=False)

    def line(self, step: str, text: str) -> None:
        self.console.print(f"    {text}", markup=False, highlight=False)

    def _eta(self) -> str:
        left = [sid for sid in self.todo if sid not in self.done]
        now = time.monotonic()
        running = {sid: now - t for sid, t in self.started.items()}
        jobs = None
        broker = getattr(self.executor_ref, "broker", None)
        compiling = next((sid for sid in running if _is_compile(sid)), "")
        if broker is not None and compiling and self.jobs.get(compiling):
            jobs = (int(broker.snapshot()["done"]), self.jobs[compiling])
        secs, known, over = eta(self.expected, left, running, jobs)
        if not secs and not known:
            return "ETA unknown (no earlier build, no compile prediction)"
        how = "" if self.from_history else " (predicted; first build)"
        late = ", running past its prediction" if over else ""
        return f"ETA ~{secs:.0f}s{'' if known else '+'}{how}{late}"

    def __rich__(self) -> Any:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        n, total = self.earlier + len(self.done), self.earlier + len(self.todo)
        head = Text(f"{n}/{total} steps · {self.cached} cached · "
                    f"{time.monotonic() - self.t0:.0f}s elapsed · {self._eta()}")
        parts: list[Any] = [head, _bar(max(total, 1), n),
                            Text(f"now: {_label(self.current)}", style="bold",
                                 overflow="fold")]
        broker = getattr(self.executor_ref, "broker", None)
        if broker is not None:
            snap = broker.snapshot()
            budget = max(int(snap["budget"]), 1)
            parts.append(Text(f"memory reserved {_mib(snap['reserved'])} of {_mib(budget)} "
                              f"budget · {len(snap['running'])} compiling, "
                              f"{snap['waiting']} waiting, {snap['done']} done"))
            parts.append(_bar(budget, min(snap["reserved"], budget)))
            table = Table(box=None, show_header=True, pad_edge=False)
            table.add_column("compiling", overflow="fold", ratio=3)
            table.add_column("reserved", justify="right", no_wrap=True)
            table.add_column("estimate", overflow="fold", ratio=2)
            table.add_column("for", justify="right", no_wrap=True)
            for j in snap["running"]:
                table.add_row(j["file"], _mib(j["reserve"]), estimate_source(j["source"]),
                              f"{j['seconds']:.0f}s")
            parts.append(table)
        return Group(*parts)
