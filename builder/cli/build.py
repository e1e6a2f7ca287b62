"""``builder build``, ``builder publish`` and ``builder remote``: running a plan (with a
rebuild of what a binary remote gave back corrupted), and sharing its results."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from builder.cli.outputs import print_outputs, print_wheels
from builder.cli.planning import make_plan
from builder.cli.rounds import Rounds
from builder.errors import Interrupted, PlanError, UsageError
from builder.plan.model import BUILD, CACHED, DOWNLOAD, SKIP, BuildPlan, Step
from builder.plan.payloads import PublishKernels
from builder.recipe.recipeset import display_path
from builder.resolve.secretenv import missing
from builder.util.runner import Runner
from builder.workspace.paths import Workspace

__all__ = ["cmd_build", "cmd_publish", "cmd_remote"]


def _check_requested(plan: BuildPlan, args: argparse.Namespace, named: list[str]) -> None:
    """What the user asked for by name and cannot be built is an error: a backend named
    with --backend, or a recipe named on the command line none of whose variants can be
    built here (with --all, skips are reported and the rest is built)."""
    if args.skip_unsupported:
        return
    bad = [v for v in plan.variants if v.status == SKIP and v.backend in args.backend]
    if not bad and args.recipes and not args.all:
        by_recipe: dict[str, list[Any]] = {}
        for v in plan.variants:
            by_recipe.setdefault(v.recipe, []).append(v)
        bad = [vs[0] for r, vs in by_recipe.items()
               if r in set(named) and all(v.status == SKIP for v in vs)]
    if bad:
        v = bad[0]
        raise PlanError(f"cannot build {v.id}: {v.reason}\n  fix: {v.fix}")


def _check_budget(plan: BuildPlan, args: argparse.Namespace) -> None:
    """A memory budget below the lightest compile job of a build step that will run is
    said before anything runs: an error when it was asked for (--memory-budget), a note
    when it is what this host has left."""
    from builder.plan.payloads import CompileJobs
    from builder.workspace.prune import human as gib

    budget = plan.memory_budget
    for s in plan.steps:
        if not isinstance(s.payload, CompileJobs) or s.status != BUILD:
            continue
        light = s.payload.prediction.lightest
        if light is None or budget >= light.peak:
            continue
        what = (f"the memory budget {gib(budget)} is below the lightest compile job of "
                f"{s.id} ({light.file}, estimated peak {gib(light.peak)})")
        if args.memory_budget:
            raise PlanError(f"{what}\n  fix: raise --memory-budget to at least "
                            f"{gib(light.peak)}, or leave it out to use what this host has")
        print(f"note: {what}; jobs will run one at a time with the recipe's low-memory "
              f"flags and may still be killed: free memory first", file=sys.stderr)
        return


def cmd_build(args: argparse.Namespace, ws: Workspace, runner: Runner | None = None) -> int:
    from builder.errors import DownloadFailed
    from builder.execute.executor import needs_work
    from builder.workspace.lock import workspace_lock

    t0 = time.monotonic()
    if getattr(args, "sandbox", False):
        from builder.execute.sandbox import find_bwrap

        find_bwrap()  # before anything runs: a missing bubblewrap is a plan error
    with workspace_lock(ws, wait=not args.no_wait):
        if runner is None:
            from builder.util.runner import reap_orphans

            orphans = reap_orphans(str(ws.state))
            if orphans:
                print(f"note: stopped {len(orphans)} process(es) that an earlier build "
                      f"killed with SIGKILL had left running", file=sys.stderr)
        from builder.remote.conanhome import repair_conan_home

        repaired = repair_conan_home(ws)  # before planning: what it removes is rebuilt
        if repaired:
            print(f"note: {repaired}", file=sys.stderr)
        from builder.cli import dist

        session = dist.begin(args, ws)  # before planning: --dist implies sccache
        unusable: frozenset[str] = frozenset()
        rounds = Rounds()
        while True:
            plan, named = make_plan(args, ws, plan_all=False, unusable=unusable,
                                   check_sources=True)
            rounds.said(plan)
            _check_requested(plan, args, named)
            if args.lockfile is not None:
                from builder.cli.planning import load_recipes
                from builder.workspace.pins import check, source_files

                rs, roots = load_recipes(args, ws)
                check(plan, args.lockfile,
                      source_files(plan, list(rs.closure(roots)), ws))
            _check_budget(plan, args)
            missing(plan.steps, os.environ)  # before anything runs, with the recipe line
            from builder.workspace.ownership import preflight
            from builder.workspace.usage import record_in_use

            record_in_use(ws, [v.id for v in plan.variants if v.status != SKIP])

            preflight([(s.kind, s.payload.tree) for s in plan.steps
                       if isinstance(s.payload, PublishKernels) and s.status == BUILD],
                      ws.state)
            now, waiting = rounds.split(plan)
            if rounds.summary is not None and not needs_work(now):
                summary, ex = rounds.summary, rounds.ex  # what waited is up to date
                break
            later = tuple(s for s in plan.steps if s.variant in waiting)
            ran = _execute(args, ws, now, runner, t0, rounds, later)
            if ran is None:
                dist.end(session, ws)
                return 0
            summary, ex = rounds.add(*ran)
            if waiting and summary.ok:  # planned again, with what was just built
                continue
            # A download that came back corrupted (already removed) is rebuilt; one that
            # failed because the remote is down is rebuilt with --remote-optional.
            retry = frozenset(f.key for f in summary.failed if isinstance(f, DownloadFailed)
                              and (f.corrupt or args.remote_optional)) - unusable
            if not retry or len(retry) < sum(1 for f in summary.failed):
                summary.aborted += rounds.abandon(plan, waiting)
                break
            for f in summary.failed:
                print(f"note: {f.step_id}: {f.explanation}; building it here instead",
                      file=sys.stderr)
            rounds.retried()
            unusable |= retry
    pool = dist.end(session, ws)
    if pool is not None:
        from builder.execute.record import attach

        attach(ws, "dist", pool)  # the report's pool section
    for failure in summary.failed:
        print(failure.render(), file=sys.stderr)
    if ex.cache_stats:
        hits = sum(c["hits"] for c in ex.cache_stats)
        misses = sum(c["misses"] for c in ex.cache_stats)
        remote = sum(c.get("remote_hits", 0) for c in ex.cache_stats)
        print(f"compiler cache: {hits} hit(s), {misses} miss(es)" +
              (f", {remote} from the remote" if remote else ""))
    for line in summary.oom:  # recovered or not: its estimate was wrong, and it cost time
        print(f"out of memory: {line}")
    for line in ex.memory_notes:  # no OOM kill, but time lost: requeues, a scheduler failure
        print(f"memory: {line}")
    print_wheels(plan)
    _print_branch_pins(plan, ws)
    for line in rounds.cutoffs:
        print(line)
    for sid, counts in ex.test_counts.items():  # a test that ran nothing is no pass
        print(f"tests: {sid}: {counts.text() if counts else 'ran (no count in its output)'}")
    status = "failed" if not summary.ok else "done"
    print(f"{status}: {len(summary.done)} step(s) run, {len(summary.cached)} cached, "
          f"{len(summary.failed)} failed, {len(summary.aborted)} not run" +
          (f", {len(summary.oom)} compile(s) killed out of memory" if summary.oom else "") +
          f" — {summary.seconds:.1f}s; {_variant_results(plan, summary, rounds.built)}")
    print_outputs(plan, summary)
    if not summary.ok:
        return 1
    return 0


def _variant_counts(plan: BuildPlan) -> str:
    """Variants by status, in the words every build message uses (skips count variants)."""
    n = {st: sum(1 for v in plan.variants if v.status == st)
         for st in (BUILD, DOWNLOAD, CACHED, SKIP)}
    parts = [f"{n[BUILD]} variant(s) to build" if n[BUILD] else "",
             f"{n[DOWNLOAD]} to download" if n[DOWNLOAD] else "",
             f"{n[CACHED]} up to date" if n[CACHED] else "",
             f"{n[SKIP]} skipped" if n[SKIP] else ""]
    return ", ".join(p for p in parts if p) or "no variants"


def _variant_results(plan: BuildPlan, summary: Any, built: frozenset[str] = frozenset()
                     ) -> str:
    """After the run: variants built (or downloaded), failed, up to date, skipped;
    ``built``: those built by an earlier round of the same build."""
    bad = {f.step_id.rsplit("/", 1)[0] for f in summary.failed} | {
        a.rsplit("/", 1)[0] for a in summary.aborted}
    n = {"built": 0, "failed": 0, "up to date": 0, "skipped": 0}
    for v in plan.variants:
        word = "skipped" if v.status == SKIP else "failed" if v.id in bad else \
            "up to date" if v.status == CACHED and v.id not in built else "built"
        n[word] += 1
    return "variants: " + ", ".join(f"{k} {w}" for w, k in n.items() if k or w == "built")


def _print_skips(plan: BuildPlan, with_tests: bool) -> None:
    """Each variant (and test) not built here, with why and the fix."""
    skipped = {v.id for v in plan.variants if v.status == SKIP}
    for v in plan.variants:
        if v.id in skipped:
            print(f"  skipped {v.id}: {v.reason}" + (f"\n      fix: {v.fix}" if v.fix else ""))
    if with_tests:  # tests not run here (cross-compiled, GPU-only, another Python) likewise
        for st in plan.steps:
            if st.kind == "test" and st.status == SKIP and st.variant not in skipped:
                print(f"  skipped {st.id}: {st.reason}" +
                      (f"\n      fix: {st.fix}" if st.fix else ""))


def _nothing_to_do(plan: BuildPlan, verbose: bool, seconds: float) -> None:
    """A build with no step to run: one line (the skips, notes and wheels with -v).  When
    no variant is up to date either, everything selected was skipped: an error, so that a
    CI job asking for a Python or backend this recipe or host lacks does not pass having
    built nothing."""
    up = sum(1 for v in plan.variants if v.status in (CACHED, DOWNLOAD))
    skips = [v for v in plan.variants if v.status == SKIP]
    if not up:
        if not skips:
            raise PlanError("nothing to build: the selection names no variant")
        more = f" (and {len(skips) - 1} more; `builder plan` lists them)" if len(skips) > 1 \
            else ""
        v = skips[0]
        raise PlanError(f"nothing to build: every selected variant is skipped; {v.id}: "
                        f"{v.reason}{more}" + (f"\n  fix: {v.fix}" if v.fix else ""))
    extra = (f", {len(skips)} skipped" if skips else "") + \
        (f", {len(plan.notes)} note(s)" if plan.notes else "")
    hint = "; -v for why" if (skips or plan.notes) and not verbose else ""
    print(f"nothing to do: {up} variant(s) up to date{extra} ({seconds:.2f}s{hint})")
    if verbose:
        _print_skips(plan, with_tests=False)
        for n in plan.notes:
            print(f"note: {n}")
        print_wheels(plan)


def _execute(args: argparse.Namespace, ws: Workspace, plan: BuildPlan, runner: Runner | None,
             t0: float, rounds: Rounds | None = None, later: tuple[Step, ...] = ()
             ) -> tuple[Any, Any] | None:
    """Run ``plan`` with progress output and a build record (one for all ``rounds``; the
    live display counts the ``later`` steps, of variants waiting for this round, and what
    earlier rounds ran); None when nothing needs doing (after saying so)."""
    from builder.cli.progress import LinePrinter
    from builder.execute.executor import Executor, needs_work
    from builder.execute.record import BuildRecorder, load_times
    from builder.util.runner import SubprocessRunner

    counts = plan.counts()
    if not needs_work(plan):
        _nothing_to_do(plan, args.verbose, time.monotonic() - t0)
        return None
    recorder = BuildRecorder(plan, ws)
    if rounds is not None:
        recorder = rounds.recorder(recorder)
    live = sys.stdout.isatty() and not os.environ.get("CI") and not args.quiet
    printer: Any = LinePrinter(quiet=args.quiet, verbose=args.verbose)
    down = f", {counts[DOWNLOAD]} to download" if counts[DOWNLOAD] else ""
    earlier = rounds.summary if rounds is not None else None
    built = rounds.built if rounds is not None else frozenset()
    if earlier is None:
        print(f"building: {_variant_counts(plan)} ({counts[BUILD]} step(s) to run{down}, "
              f"{counts[CACHED]} cached) — logs in {display_path(ws.logs)}")
    else:  # a later round: what waited for the variants just built
        names = ", ".join(dict.fromkeys(
            v.recipe for v in plan.variants if v.status == BUILD and v.id not in built))
        print(f"building: then {names or 'the rest'}, planned again with what was just "
              f"built ({counts[BUILD]} step(s) to run{down})")
    _print_skips(plan, with_tests=not getattr(args, "no_tests", False))
    for n in plan.notes:
        print(f"note: {n}")
    ex = Executor(plan, ws, runner or SubprocessRunner(owner=str(ws.state)),
                  keep_going=args.keep_going)
    if getattr(args, "sandbox", False):
        from builder.execute.sandbox import Sandbox, find_bwrap

        ex.sandbox = Sandbox(find_bwrap(), ws, plan.variants)
    if live:
        from builder.cli.progress import LiveProgress

        printer = LiveProgress(plan, ex, load_times(ws), verbose=args.verbose, later=later,
                               earlier=len(earlier.done) if earlier is not None else 0,
                               built=built, t0=t0)

    def on_event(e: Any) -> None:
        recorder.event(e)
        printer.event(e)

    ex.on_event = on_event
    ex.on_line = printer.line if args.verbose else None
    try:
        if live:
            with printer:
                summary = ex.run()
        else:
            summary = ex.run()
    except (Interrupted, KeyboardInterrupt):
        from builder.execute.executor import Summary

        recorder.save(Summary(), interrupted=True)  # last-build.json says so
        raise
    recorder.save(summary)
    return summary, ex


def _print_branch_pins(plan: BuildPlan, ws: Workspace) -> None:
    """The commit each ``allow_branch`` source fetched in this build was resolved to."""
    from builder.resolve.resolver import branch_notes
    from builder.workspace.state import State, fetched_commits

    fetched = [s for s in plan.steps if s.kind == "fetch" and s.status == BUILD]
    if not fetched:
        return
    state = State(fetched_commits=fetched_commits(ws, [Path(o).name for s in fetched
                                                       for o in s.outputs]))
    for s in fetched:
        for n in branch_notes(s.variant.split("/", 1)[0], [s], state):
            print(f"note: {n}")


def cmd_publish(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.remote import conan as remote
    from builder.util.runner import SubprocessRunner
    from builder.workspace.lock import workspace_lock

    if args.index and getattr(args, "index_dir", ""):
        raise UsageError("publish: --index and --index-dir are alternatives; give one")
    if args.index:
        return _publish_index(args, ws)
    if getattr(args, "index_dir", ""):
        return _publish_index_dir(args, ws)
    name = args.remote
    if name:
        from builder.remote.names import check_remote_name

        check_remote_name(name, "--remote")
    if not name:
        raise UsageError("publish needs a remote: --remote NAME (or $BUILDER_REMOTE; see "
                         "`builder remote list`)")
    args.remote = ""  # plan what is here; the remote is only written to
    with workspace_lock(ws, wait=True):
        plan, _ = make_plan(args, ws, plan_all=False)
        conan = next((c[0] for s in plan.steps for c in s.commands
                      if c and Path(c[0]).name == "conan"), "conan")
        from builder.util.secrets import redact_url

        print(f"publishing to {name} ({redact_url(remote.configured(ws).get(name, '?'))}):")
        n = remote.publish(plan, ws, name, conan, SubprocessRunner(owner=str(ws.state)), print)
    print(f"published {n} variant(s) to {name}")
    return 0


def _publish_index(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.remote import index
    from builder.util.runner import SubprocessRunner
    from builder.workspace.lock import workspace_lock

    url = index.check_url(args.index)
    args.remote = ""
    with workspace_lock(ws, wait=True):
        plan, _ = make_plan(args, ws, plan_all=False)
        print(f"publishing to {url}:")
        n = index.publish(plan, ws, url, SubprocessRunner(owner=str(ws.state)), print)
    print(f"published {n} wheel(s) to {url}")
    return 0


def _publish_index_dir(args: argparse.Namespace, ws: Workspace) -> int:
    """The selected wheels into a static index folder (:mod:`builder.remote.indexdir`)."""
    from builder.remote import index
    from builder.remote.indexdir import write_index_dir
    from builder.workspace.lock import workspace_lock

    root = Path(args.index_dir).resolve()
    args.remote = ""
    with workspace_lock(ws, wait=True):
        plan, _ = make_plan(args, ws, plan_all=False)
        wheels = index.collect(plan)
        print(f"publishing to {display_path(root)}:")
        for line in write_index_dir(wheels, root):
            print(line)
    print(f"published {len(wheels)} wheel(s) to {display_path(root)} "
          f"(serve it: python -m http.server --directory {display_path(root)}; "
          f"index URL: http://HOST:PORT/simple/)")
    return 0


def cmd_remote(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.remote import conan as remote
    from builder.remote.names import check_remote_name, check_remote_url
    from builder.util.runner import capture

    if args.remote_command in ("add", "remove"):  # before Conan (or its home) is touched
        check_remote_name(args.name)
    if args.remote_command == "add":
        check_remote_url(args.url)
    remote.ensure_conan_home(ws)
    env = {**os.environ, "CONAN_HOME": str(ws.conan_home)}
    if args.remote_command == "list":
        remotes = remote.configured(ws)
        from builder.util.secrets import redact_url

        for n, url in remotes.items():
            print(f"{n}  {redact_url(url)}")
        if not remotes:
            print(f"no remote configured in {display_path(ws.conan_home)} (builds are "
                  f"offline); add one with `builder remote add NAME URL`")
        return 0
    from builder.host.probe import find_executable

    conan = find_executable("conan") or "conan"
    if args.remote_command == "add":
        from builder.util.secrets import url_credentials

        if url_credentials(args.url):
            var = re.sub(r"[^A-Za-z0-9]", "_", args.name).upper()
            raise UsageError(f"the URL of remote '{args.name}' carries a user name or "
                             f"password; builder keeps credentials out of its files\n  fix: "
                             f"give the URL without them and export "
                             f"CONAN_LOGIN_USERNAME_{var}=… CONAN_PASSWORD_{var}=…")
        argv = [conan, "remote", "add", args.name, args.url, "--force",
                *(["--insecure"] if args.insecure else [])]
    else:
        argv = [conan, "remote", "remove", args.name]
    rc, out = capture(argv, env=env)
    if rc != 0:
        raise UsageError(f"conan remote {args.remote_command} failed: "
                         f"{out.strip().splitlines()[-1] if out.strip() else rc}")
    print(f"{args.remote_command}: {args.name}" + (f" → {args.url}" if args.remote_command ==
                                                   "add" else ""))
    return 0
