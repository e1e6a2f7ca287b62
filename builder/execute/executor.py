"""Carry out a :class:`BuildPlan`: run steps in dependency order, publish results
atomically, and emit structured events for progress output and reports.

Steps that are ``cached`` or ``skip`` are not run.  A failed step marks every
step that depends on it as aborted; independent steps go on with
``keep_going``, otherwise the build stops after the first failure.  Install
trees and cache entries are written next to their final place and renamed into
it, so a reader never sees half of one.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from builder.errors import Interrupted, StepFailed
from builder.execute import compiling, downloading, fetching, publishing
from builder.execute.host import safe_name
from builder.execute.parallel import PARALLEL_KINDS, parallel_batch, run_batch, runs
from builder.memory import launcher
from builder.plan.model import TO_RUN, BuildPlan, Step
from builder.plan.payloads import (
    CleanStage,
    CollectInstall,
    KernelEntry,
    PrepareBuild,
    RenderFiles,
    TestRun,
    WheelBuild,
)
from builder.resolve import stepenv
from builder.util import writer
from builder.util.files import atomic_write
from builder.util.runner import Runner
from builder.util.scratch import private_tmp
from builder.workspace.paths import Workspace

__all__ = ["DONE_KINDS", "OOM_MARKERS", "PARALLEL_KINDS", "Event", "Executor", "Summary",
           "needs_work", "parallel_batch"]

#: steps keyed by the variant key whose success is recorded (``State.done``): the next
#: plan finds them up to date while the compiled files they use are
DONE_KINDS = frozenset({"test", "wheel"})

#: what a compiler killed for memory prints (the launcher's list, as text)
OOM_MARKERS = tuple(m.decode() for m in launcher.OOM_MARKERS)


@dataclass(frozen=True)
class Event:
    kind: str  # start | done | cached | skip | failed | aborted | progress
    step: str
    seconds: float = 0.0
    message: str = ""
    index: int = 0
    total: int = 0


@dataclass
class Summary:
    done: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[StepFailed] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: compiles killed out of memory, and how their retries ended (memory.jobs.oom_kills)
    oom: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.aborted




class Executor:
    def __init__(self, plan: BuildPlan, ws: Workspace, runner: Runner,
                 on_event: Callable[[Event], None] | None = None,
                 keep_going: bool = False, on_line: Callable[[str, str], None] | None = None
                 ) -> None:
        self.plan = plan
        self.ws = ws
        self.runner = runner
        self.on_event = on_event or (lambda e: None)
        self.on_line = on_line
        self.keep_going = keep_going
        self.broker: Any = None  # the running build step's memory broker, for progress
        self.cache_stats: list[dict[str, int]] = []  # compiler cache hits/misses per build
        self.oom: list[str] = []  # compiles killed out of memory (memory.jobs.oom_kills)
        #: compiles the memory backstop killed and ran again (memory.jobs.requeues), and a
        #: failure of the memory scheduler
        self.memory_notes: list[str] = []
        self.test_counts: dict[str, Any] = {}  # test step → testcounts.Counts (or None)
        #: each variant's base environment (resolve.stepenv): a step starts from nothing else
        self._bases = {v.id: v.env for v in plan.variants if v.env}
        #: with ``builder build --sandbox``: wraps each command in bubblewrap
        self.sandbox: Any = None

    def emit(self, kind: str, step: Step, seconds: float = 0.0, message: str = "",
              index: int = 0) -> None:
        self.on_event(Event(kind, step.id, seconds, message, index, len(self.plan.steps)))

    def progress(self, step: Step, text: str) -> None:
        """A line saying how a long wait of ``step`` goes (a fetch, a download), shown
        without ``-v``: a slow or silent server is seen as one."""
        self.emit("progress", step, message=text)

    def run(self) -> Summary:
        summary = Summary()
        start = time.monotonic()
        bad: set[str] = set()  # failed or aborted steps
        steps = self.plan.steps
        i = 0
        while i < len(steps):
            batch = parallel_batch(steps, i, self.plan.jobs)
            if len(batch) > 1:
                run_batch(self, batch, i, summary, bad)
                i += len(batch)
                continue
            i += 1
            step = steps[i - 1]
            if not runs(self, step, i, summary, bad):
                continue
            self.emit("start", step, index=i)
            t0 = time.monotonic()
            try:
                self.run_step(step)
            except StepFailed as failure:
                summary.failed.append(failure)
                bad.add(step.id)
                self.emit("failed", step, time.monotonic() - t0, str(failure), index=i)
                continue
            summary.done.append(step.id)
            self.emit("done", step, time.monotonic() - t0, index=i)
        summary.seconds = time.monotonic() - start
        summary.oom = list(self.oom)
        return summary

    # -- one step -------------------------------------------------------------------

    def log_path(self, step: Step) -> Path:
        return self.ws.logs / f"{safe_name(step.id)}.log"

    def commands(self, step: Step) -> None:
        log = self.log_path(step)
        cwd = Path(step.cwd) if step.cwd else self.ws.root
        writer.make_dirs(cwd, named=True)  # the step's folder: the recipe names it
        callback = None
        if self.on_line is not None:
            sink = self.on_line
            callback = lambda line, sid=step.id: sink(sid, line)  # noqa: E731
        env = dict(step.env)
        if step.kind == "test":  # tests write no Python caches into the source tree
            from builder.source.policy import test_env

            env = test_env(env)
        base = self.step_env(step, {})
        gone = [(n, where) for n, where in step.secrets if n not in base]
        if gone:  # the build checks first (resolve.secretenv.missing): unset since
            raise StepFailed(step.id, [], 1, str(log), [],
                             f"{gone[0][1]}: the secret {gone[0][0]} is not set in the "
                             f"environment; export it in the shell that runs builder")
        for folder in (base["TMPDIR"], base["HOME"]):  # builder's, or the host's (a fetch)
            if not os.path.isdir(folder):
                writer.make_dirs(folder)
        # a GPU compiler's temporary files (hipcc leaves two <kernel>-XXXXXX folders per
        # compile) go to a folder of the step's own, removed however the step ends
        # (under --sandbox every step has a private one)
        with private_tmp("builder-step-", step.kind == "kernel" or self.sandbox is not None,
                         base["TMPDIR"]) as tmp:
            self._run_all(step, cwd, {**env, "TMPDIR": tmp} if tmp else env, log, callback)

    def step_env(self, step: Step, changes: dict[str, str] | None = None) -> dict[str, str]:
        """The whole environment ``step`` runs with: its variant's base, its own changes
        (``changes``, default ``step.env``) and what its kind takes from the host at run
        time (:func:`builder.resolve.stepenv.compose`) — nothing else of this process's."""
        base = self._bases.get(step.variant) or stepenv.variant_env(
            tool_paths=[sys.executable], state=str(self.ws.state))
        names = [n for n, _ in step.secrets]  # the recipe's secrets for this step
        return stepenv.compose(base, dict(step.env) if changes is None else changes,
                               step.kind, os.environ, names)

    def _run_all(self, step: Step, cwd: Path, env: dict[str, str], log: Path,
                 callback: Callable[[str], None] | None) -> None:
        whole = self.step_env(step, env)
        for n, command in enumerate(step.commands):
            path = log if n == 0 else log.with_suffix(f".{n}.log")
            argv = command if self.sandbox is None else \
                self.sandbox.wrap(step, tuple(command), whole, cwd)
            res = self.runner.run(argv, cwd=cwd, env_changes=env, log_path=path,
                                  timeout=step.timeout, on_line=callback, base_env=whole)
            if res.interrupted:
                raise Interrupted(f"interrupted during {step.id}; the next build resumes "
                                  f"from the steps that completed")
            if res.returncode != 0:
                why = ""
                if res.timed_out:
                    why = f"stopped after its {step.timeout}s timeout"
                elif any(m in line for line in res.tail for m in OOM_MARKERS):
                    why = ("a compiler was killed, most likely out of memory; lower the "
                           "parallelism (--jobs) or set a memory budget (--memory-budget)")
                elif self.sandbox is not None:
                    why = ("it ran under --sandbox, where only the declared inputs are "
                           "visible and the network is cut off: a missing file or a refused "
                           "connection in the log is a read outside them; declare it, or pass "
                           "the variable with --env (docs/step-environment.md)")
                raise StepFailed(step.id, list(argv), res.returncode, str(path), res.tail, why)

    def _do_configure(self, step: Step) -> None:
        """CMake's configure, after dropping a cache made in another folder: a build folder
        is named by its config key, which does not change when the project (with its
        state folder) is moved or copied, and CMake refuses a cache from elsewhere."""
        for argv in step.commands:
            folder = argv[argv.index("-B") + 1] if "-B" in argv[:-1] else ""
            cache = Path(folder) / "CMakeCache.txt" if folder else None
            if cache is not None and cache.is_file():
                made_in = next((line.split("=", 1)[1].strip() for line in
                                cache.read_text(errors="replace").splitlines()
                                if line.startswith("CMAKE_CACHEFILE_DIR:")), "")
                if made_in and os.path.realpath(made_in) != os.path.realpath(folder):
                    writer.remove(cache)
                    writer.remove(Path(folder) / "CMakeFiles")
        self.commands(step)

    def _do_build(self, step: Step) -> None:
        compiling.build(self, step)

    def _do_fetch(self, step: Step) -> None:
        fetching.fetch(self, step)

    def _do_download(self, step: Step) -> None:
        downloading.download(self, step)

    def _do_publish(self, step: Step) -> None:
        publishing.publish_install(self, step)

    def _do_publish_kernels(self, step: Step) -> None:
        publishing.publish_kernels(self, step)

    def run_step(self, step: Step) -> None:
        handler = getattr(self, "_do_" + step.kind.replace("-", "_"), None)
        if handler is not None:
            handler(step)
        else:
            self.commands(step)
        if step.kind in DONE_KINDS:  # keyed by the variant key: up to date from now on
            from builder.workspace.state import mark_done

            mark_done(self.ws, step.inputs_hash)

    def _do_render(self, step: Step) -> None:
        assert isinstance(step.payload, RenderFiles)
        for path, text in step.payload.files:
            atomic_write(Path(path), text)
        self._ensure_conan_home()

    def _ensure_conan_home(self) -> None:
        from builder.remote.conan import ensure_conan_home

        ensure_conan_home(self.ws)

    def _do_prepare(self, step: Step) -> None:
        """Compiler wrappers and build folders for a build driven by pip or xmake."""
        from builder.execute.collect import prepare

        assert isinstance(step.payload, PrepareBuild)
        prepare(step.payload)

    def _do_collect(self, step: Step) -> None:
        """The stage filled from the build's wheel and the recipe's ``install.files``."""
        from builder.execute.collect import CollectError, collect

        assert isinstance(step.payload, CollectInstall)
        log = self.log_path(step)
        try:
            done = collect(step.payload)
        except (CollectError, OSError, ValueError) as exc:  # zipfile.BadZipFile is one
            raise StepFailed(step.id, [], 1, str(log), [], str(exc)) from None
        atomic_write(log, "".join(f"{line}\n" for line in done))

    def _do_test(self, step: Step) -> None:
        """The test command; then how many tests it ran. One that ran none fails unless
        the recipe allows it (``allow_empty``)."""
        from builder.execute.testcounts import verdict

        allow = isinstance(step.payload, TestRun) and step.payload.allow_empty
        log = self.log_path(step)
        try:
            self.commands(step)
            rc = 0
        except StepFailed as failed:
            counts, why = verdict(_read_lines(log), failed.returncode, allow)
            if why is None:  # pytest's "no tests" status, allowed
                self.test_counts[step.id] = counts
                return
            failed.explanation = why or failed.explanation
            raise
        counts, why = verdict(_read_lines(log), rc, allow)
        self.test_counts[step.id] = counts
        if why:
            raise StepFailed(step.id, list(step.commands[-1]) if step.commands else [], 0,
                             str(log), _read_lines(log)[-10:], why)

    def _do_wheel(self, step: Step) -> None:
        """Write the wheel, repair it with auditwheel when planned, keep the result
        (:mod:`builder.wheels.repair`)."""
        from builder.wheels import repair

        w = step.payload
        assert isinstance(w, WheelBuild)
        log = self.log_path(step)
        try:
            _, said, native = repair.write_raw(w)
            if step.commands and native:  # a wheel with no binary has nothing to repair
                if w.patchelf:  # auditwheel looks for patchelf on PATH only
                    path = os.pathsep.join((os.path.dirname(w.patchelf),
                                            self.step_env(step)["PATH"]))
                    step = replace(step, env=(*step.env, ("PATH", path)))
                try:
                    self.commands(step)
                except StepFailed as failed:
                    failed.explanation = repair.explain(failed.tail, w.policy)
                    raise
            final = repair.finish(w, repaired=bool(w.policy) and native)
        except (OSError, ValueError) as exc:
            raise StepFailed(step.id, [], 1, str(log), [],
                             f"cannot build the wheel: {exc}") from None
        note = "" if w.policy and native else f" — {w.note}" if native else ""
        with writer.open_stream(log, append=True) as out:
            out.write("".join(f"# {line}\n" for line in said) + f"# wheel: {final}{note}\n")

    def _do_stage(self, step: Step) -> None:
        if isinstance(step.payload, CleanStage):
            writer.remove(step.payload.stage)
        self.commands(step)

    def _do_kernel(self, step: Step) -> None:
        assert isinstance(step.payload, KernelEntry)
        partial, entry = Path(step.payload.partial), Path(step.payload.entry)
        writer.remove(partial)
        writer.make_dirs(partial)
        try:
            self.commands(step)
            expected = [partial / Path(o).name for o in step.outputs]
            missing = [str(p) for p in expected if not p.is_file() or p.stat().st_size == 0]
            if missing:
                raise StepFailed(step.id, list(step.commands[-1]), 0,
                                 str(self.log_path(step)), [],
                                 f"the compiler exited 0 but wrote no {missing[0]}")
            record = _kernel_record(self.ws, step)
            for p in partial.iterdir():  # intermediates (.air) are not cached
                if p not in expected:
                    writer.remove(p)
            if record is not None:  # what it read: the next plan finds it by that
                writer.write_text(partial / "record.json", json.dumps(record, sort_keys=True))
            if entry.exists():
                writer.remove(partial)
            else:
                writer.move(partial, entry)
        finally:
            writer.remove(partial)


def _kernel_record(ws: Workspace, step: Step) -> dict[str, object] | None:
    """What a kernel compile read (its depfile: the source and every header, wherever it
    is), as :func:`builder.source.inputs.take_record` keeps it, with the artifact's config
    and key; None when the backend wrote no depfile or it cannot be read (the artifact is
    then found only by its whole source folder)."""
    from builder.source.digest import StatCache
    from builder.source.inputs import prerequisites, take_record
    from builder.util import records

    ke = step.payload
    assert isinstance(ke, KernelEntry)
    if not ke.depfile or not ke.config:
        return None
    try:
        text = Path(ke.depfile).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    read = prerequisites(text)
    if not read:
        return None
    base = step.cwd or os.getcwd()
    planned = records.read_digest_cache(ws.digest_cache)
    record = take_record("", Path(ke.partial), ke.owned, (), dict(ke.names),
                         StatCache(planned), planned,
                         read={os.path.join(base, f) for f in read})
    if record is None:
        return None
    return {"config": ke.config, "key": ke.key, "record": record}


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def needs_work(plan: BuildPlan) -> bool:
    return any(s.status in TO_RUN for s in plan.steps)
