"""The ``builder`` command line: the phases, one after another, and the only place
that prints errors and chooses the exit status.

    load + validate → host facts → workspace state → resolve → plan → execute → report
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from builder.cli import args as cli_args
from builder.cli.planning import find_project, host_facts, load_recipes, make_plan
from builder.errors import BuilderError, FileSystemError, UsageError
from builder.recipe.recipeset import RecipeSet, display_path
from builder.resolve.request import Request
from builder.util.runner import Runner
from builder.workspace.paths import Workspace

__all__ = ["cmd_cache", "cmd_host", "cmd_lock", "cmd_matrix", "cmd_plan", "cmd_report",
           "cmd_schema", "cmd_validate", "cmd_verify", "main"]


def cmd_validate(args: argparse.Namespace, ws: Workspace) -> int:
    paths = [Path(a) for a in args.recipes if a.endswith((".yaml", ".yml"))]
    rs = RecipeSet.load(ws.recipes_dir, paths)
    chosen = rs.select(args.recipes, ws.recipes_dir) if args.recipes else rs.recipes
    for r in chosen:
        print(f"ok  {r.display}  ({r.name} {r.version}; backends: {', '.join(r.backend_names)})")
    print(f"{len(chosen)} recipe(s) valid.")
    # what `plan` would refuse on this host, said now rather than in a later round
    from builder import backends as registry

    host = host_facts(ws, rs)
    for r in chosen:
        for b in r.backends:
            be = registry.get(b.backend_kind)
            if be.host_unavailable(host) is not None:
                continue  # the whole backend is a skip here, with its reason, in `plan`
            for i, arch in enumerate(b.archs):
                bad = be.arch_unavailable(arch, host)
                if bad is not None and r.positions is not None:
                    loc = r.positions.location(("backends", b.name, "archs", i))
                    print(f"note: {loc}: {bad.reason} on this host: `builder plan`/`build` "
                          f"stop on it (fix: {bad.fix}; or --skip-unsupported)")
    return 0


def cmd_host(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.plan.text import gib
    from builder.resolve.request import memory_budget

    try:
        rs: RecipeSet | None = RecipeSet.load(ws.recipes_dir)
    except BuilderError:
        rs = None  # host facts do not depend on the recipes being valid
    host = host_facts(ws, rs)
    if args.format == "json":
        from builder.cli.dist import host_json

        dist = host_json(args, ws)
        print(json.dumps({**host.to_json(), **({"dist": dist} if dist else {})}, indent=2,
                         sort_keys=True))
        return 0
    m = host.memory
    budget = memory_budget(host, Request(memory_budget=args.memory_budget))
    cg = (f"cgroup v{m.cgroup_version}" + (f" limit {gib(m.cgroup_limit)}" if m.cgroup_limit
                                           else " (no limit)") +
          (", writable" if m.cgroup_writable else ", not writable")) if m.cgroup_version \
        else "no cgroup memory controller"
    print(f"os/arch:  {host.os}/{host.arch}")
    print(f"cpus:     {host.cpus} usable by this process")
    print(f"memory:   {gib(m.total)} total, {gib(m.available)} available, swap {gib(m.swap)}; "
          f"{cg}")
    print(f"budget:   {gib(budget)} for builds (--memory-budget to change)")
    print("tools:")
    for t in host.tools:
        line = f"  {t.name:7} {t.version:12} {t.path}"
        if t.archs:
            line += f"\n          archs: {' '.join(t.archs)}"
        print(line)
    print("pythons:")
    for p in host.pythons:
        pk = ", ".join(f"{n} {v}" for n, v in p.packages)
        mark = "  (default)" if p.version == host.default_python else ""
        print(f"  {p.version:6} {p.full:9} {p.path}{mark}" + (f"\n          {pk}" if pk else ""))
    print("gpus:     " + (", ".join(host.gpus) if host.gpus else "none visible"))
    from builder.cli.dist import pool_line, scheduler_line

    line = pool_line(args, ws)
    if line:
        print(line)
        print(scheduler_line(args.dist))
    return 0


def cmd_plan(args: argparse.Namespace, ws: Workspace) -> int:
    import gc

    # planning makes many small objects and no reference cycles worth collecting: the
    # collector's full passes over a growing heap made a plan of thousands of variants
    # slower than linear
    gc.disable()
    try:
        return _plan(args, ws)
    finally:
        gc.enable()


def _plan(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.plan import text as planfmt

    # --all shows what this host cannot build among the rest instead of stopping at it
    # (named recipes and backends still stop, as their build would)
    lenient = args.all and not args.skip_unsupported
    args.skip_unsupported = args.skip_unsupported or lenient
    from builder.cli.dist import plan_pool

    plan_pool(args, ws)
    plan, _ = make_plan(args, ws, plan_all=args.all, facts_file=args.host_facts)
    left_out = sum(1 for n in plan.notes if "left out by --skip-unsupported" in n)
    if lenient and left_out:
        print(f"note: {left_out} arch(s) this host's toolchains cannot build are shown as left "
              f"out; `builder build --all` stops on them unless --skip-unsupported",
              file=sys.stderr)
    if args.format == "json":
        planfmt.write_json(plan, sys.stdout)
    elif args.format == "dot":
        sys.stdout.write(planfmt.dot(plan))
    else:
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        planfmt.stream_text(plan, sys.stdout, color=color, commands=not args.no_commands)
        from builder.cli.dist import pool_line

        line = pool_line(args, ws)
        if line:
            print(line)
    return 0


def cmd_matrix(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.ci import jobs as cimatrix
    from builder.ci import sessions as matrix

    paths = [Path(a) for a in args.recipes if a.endswith((".yaml", ".yml"))]
    rs = RecipeSet.load(ws.recipes_dir, paths)
    if args.write_workflow and args.recipes:
        raise UsageError("--write-workflow covers every recipe of the project; drop the "
                         "recipe names")
    chosen = rs.select(args.recipes, ws.recipes_dir) if args.recipes else rs.recipes
    history = cimatrix.read_history(ws.memory_history)
    roots = {r.name: cimatrix.source_roots(r, ws.state) for r in chosen}
    m = cimatrix.ci_matrix(chosen, matrix.CI_PYTHON, history, roots, project=rs.recipes)
    if args.write_workflow:
        # the workflow leaves out the estimates, so that it depends on the recipes only
        target = ws.root / cimatrix.WORKFLOW_PATH
        text = cimatrix.workflow(cimatrix.ci_matrix(chosen, matrix.CI_PYTHON))
        old = target.read_text(encoding="utf-8") if target.is_file() and \
            not target.is_symlink() else None
        if old == text:
            print(f"{display_path(target)} is up to date ({m.job_count} jobs)")
            return 0
        from builder.util.writer import write_text

        # the user's own workflow file is never replaced without --force
        write_text(target, text, named=True, force=args.force, recognise=cimatrix.is_workflow)
        print(f"wrote {display_path(target)}: {m.job_count} jobs (a plain backend × Python "
              f"matrix would have {m.unfactored})")
    elif args.format == "json":
        print(json.dumps(m.to_json(), indent=2))
    elif args.format == "github":
        print(json.dumps(m.github(), separators=(",", ":")))
    else:
        sys.stdout.write(m.text())
    return 0


def cmd_lock(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.workspace.pins import source_files, write

    plan, _ = make_plan(args, ws, plan_all=False)
    rs, roots = load_recipes(args, ws)
    n = write(plan, args.output, force=args.force,
              files=source_files(plan, list(rs.closure(roots)), ws))
    from builder.workspace.pins import remember

    remember(ws, args.output)
    print(f"locked {n} variant(s) in {args.output}")
    return 0


def cmd_report(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.report import page as report

    if args.format == "json":
        print(json.dumps(report.load(ws), indent=1, sort_keys=True))
        return 0
    path = report.write(ws, args.output, force=args.force)
    print(f"wrote {display_path(path)}")
    if args.open:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())
    return 0


def cmd_cache(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.workspace import prune as cache
    from builder.workspace import usage as cachescan

    max_size, older_than = cache.parse_limits(args.max_size, args.older_than)
    if args.action == "info":
        if max_size is not None or older_than is not None or args.dry_run:
            raise UsageError("--max-size, --older-than and --dry-run go with `cache prune`")
        data = cache.summary(ws, cachescan.scan(ws, args.lockfile))
        out = json.dumps(data, indent=1) + "\n" if args.format == "json" \
            else cache.format_info(data)
    else:
        result = cache.prune(ws, lockfile=args.lockfile, max_size=max_size,
                             older_than=older_than, dry_run=args.dry_run,
                             wait=not args.no_wait)
        out = json.dumps(result, indent=1) + "\n" if args.format == "json" \
            else cache.format_prune(result)
    sys.stdout.write(out)
    return 0


def cmd_verify(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.workspace import verify

    result = verify.verify(ws)
    sys.stdout.write(json.dumps(result, indent=1) + "\n" if args.format == "json"
                     else verify.format_text(result))
    return 1 if result["bad"] else 0


def cmd_schema(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.recipe.docs import markdown
    from builder.recipe.validate import schema

    if args.format == "markdown":
        sys.stdout.write(markdown())
    else:
        print(json.dumps(schema(), indent=2))
    return 0


def _cmd_dist(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.cli.dist import cmd_dist

    return cmd_dist(args, ws)


def main(argv: Sequence[str] | None = None, runner: Runner | None = None) -> int:
    """Run the CLI.  ``runner`` replaces the subprocess runner (tests record argv).

    Everything printed — results, progress, errors, a traceback — goes through the one
    redactor (:class:`RedactingStream`); SIGTERM stops a command like Ctrl-C (exit 143)."""
    from builder.cli import interrupts
    from builder.util.secrets import RedactingStream

    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(out), RedactingStream(err)
    try:
        with interrupts.signal_stops():
            return _main(argv, runner)
    except KeyboardInterrupt:
        return interrupts.interrupted()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        sys.stdout, sys.stderr = out, err


def _main(argv: Sequence[str] | None, runner: Runner | None) -> int:
    parser = cli_args.parser()
    args = parser.parse_args(argv)
    try:
        root = args.project or find_project(Path.cwd())
    except OSError as exc:  # the current folder was removed, or cannot be read
        print(FileSystemError.of(exc, "cannot use the current folder").render(),
              file=sys.stderr)
        return FileSystemError.exit_code
    state = args.state_dir or (Path(os.environ["BUILDER_STATE_DIR"])
                               if os.environ.get("BUILDER_STATE_DIR") else None)
    ws = Workspace.at(root, state)
    commands = {"validate": cmd_validate, "host": cmd_host, "plan": cmd_plan,
                "schema": cmd_schema, "lock": cmd_lock, "report": cmd_report,
                "matrix": cmd_matrix, "cache": cmd_cache, "verify": cmd_verify,
                "dist": _cmd_dist}
    try:
        if args.command not in ("schema", "validate", "matrix"):
            from builder.workspace.ownership import claim_state

            claim_state(ws.state)  # before anything is written to or deleted from it
        if args.command in ("build", "publish", "remote"):
            from builder.cli import build as cli_build

            if args.command == "publish":
                return cli_build.cmd_publish(args, ws)
            if args.command == "remote":
                return cli_build.cmd_remote(args, ws)
            return cli_build.cmd_build(args, ws, runner)
        return commands[args.command](args, ws)
    except BuilderError as exc:
        if exc.exit_code == 130:
            from builder.cli import interrupts

            interrupts.ignore_interrupts()  # a second Ctrl-C while saying so changes nothing
            print(interrupts.message(exc.render()), file=sys.stderr)
            return interrupts.exit_code()
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        from builder.cli.interrupts import interrupted

        return interrupted()
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a path that cannot be read or written: named, with a fix
        err = FileSystemError.of(exc)
        print(err.render(), file=sys.stderr)
        return err.exit_code
    except RecursionError:
        print("error: the input is nested too deeply to process", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
