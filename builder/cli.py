"""The ``builder`` command line: the phases, one after another, and the only place
that prints errors and chooses the exit status.

    load + validate → host facts → workspace state → resolve → plan → execute → report
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from . import cli_args
from .errors import BuilderError, Interrupted, UsageError
from .host import HostFacts, load_host_facts, probe
from .plan import BuildPlan
from .recipes import RecipeSet, display_path
from .resolve import Request, env_snapshot, resolve
from .runner import Runner
from .workspace import Workspace


def find_project(start: Path) -> Path:
    here = start.resolve()
    for p in (here, *here.parents):
        if (p / "recipes").is_dir():
            return p
    return here


def _load(args: argparse.Namespace, ws: Workspace) -> tuple[RecipeSet, list]:  # type: ignore[type-arg]
    paths = [Path(a) for a in getattr(args, "recipes", []) if a.endswith((".yaml", ".yml"))]
    for p in paths:
        if not p.is_file():
            raise UsageError(f"no such recipe file: {p}")
    rs = RecipeSet.load(ws.recipes_dir, paths)
    if getattr(args, "all", False):
        roots = list(rs.recipes)
    elif args.recipes:
        roots = rs.select(args.recipes, ws.recipes_dir)
    else:
        names = ", ".join(sorted(rs.by_name)) or "none found"
        raise UsageError(f"name a recipe or pass --all (recipes: {names})")
    return rs, roots


def _host(ws: Workspace, rs: RecipeSet | None, facts_file: Path | None = None) -> HostFacts:
    if facts_file is not None:
        return load_host_facts(facts_file)
    pkgs: set[str] = set()
    if rs is not None:
        from packaging.requirements import Requirement

        for r in rs.recipes:
            pkgs.update(Requirement(t).name.lower() for t in r.requires.python)
    from .system import needed_packages

    return probe(ws.host_cache, tuple(sorted(pkgs)),
                 needed_packages(rs.recipes) if rs is not None else ())


def _request(args: argparse.Namespace, roots: list, plan_all: bool) -> Request:  # type: ignore[type-arg]
    known = {o.name for r in roots for o in r.options}
    for ov in args.option:
        if not ov.recipe and ov.name not in known:
            raise UsageError(f"-o {ov.name}: no selected recipe has an option '{ov.name}' "
                             f"(options: {', '.join(sorted(known)) or 'none'})")
    pythons = tuple(args.python)
    if "all" in pythons or (plan_all and not pythons):
        pythons = ("all",)
    return Request(backends=tuple(dict.fromkeys(args.backend)), pythons=pythons,
                   build_types=tuple(args.build_type), options=tuple(args.option),
                   env=env_snapshot(os.environ, roots), skip_unsupported=args.skip_unsupported,
                   memory_budget=args.memory_budget, jobs=args.jobs,
                   run_tests=not getattr(args, "no_tests", False),
                   conan_remote=args.conan_remote, compiler_cache=args.compiler_cache,
                   cache_remote=args.cache_remote, remote=getattr(args, "remote", ""))


def _plan(args: argparse.Namespace, ws: Workspace, plan_all: bool,
          facts_file: Path | None = None, unusable: frozenset[str] = frozenset()
          ) -> tuple[BuildPlan, list[str]]:
    """The plan, and the names of the recipes the user asked for.  With ``--remote``, the
    remote is asked which variants it holds (except the keys in ``unusable``)."""
    from dataclasses import replace

    from .state import read_state

    rs, roots = _load(args, ws)
    host = _host(ws, rs, facts_file)
    request = _request(args, roots, plan_all)
    closure = rs.closure(roots)
    state = read_state(ws, closure)
    notes: list[str] = []
    if request.remote:
        from . import remote
        from .steps import tool

        try:
            keys = remote.remote_keys(ws, tool(host, "conan", "conan"), request.remote,
                                      [(r.name, r.version) for r in closure])
        except remote.RemoteError as exc:
            if not getattr(args, "remote_optional", False):
                raise
            keys = frozenset()
            notes.append(f"remote '{exc.remote}' {exc.why}: building locally "
                         f"(--remote-optional)")
        state = replace(state, remote_keys=keys - unusable)
    plan = resolve(roots, rs, request, host, state, ws)
    if notes:
        plan = replace(plan, notes=(*notes, *plan.notes))
    return plan, [r.name for r in roots]


def cmd_validate(args: argparse.Namespace, ws: Workspace) -> int:
    paths = [Path(a) for a in args.recipes if a.endswith((".yaml", ".yml"))]
    rs = RecipeSet.load(ws.recipes_dir, paths)
    chosen = rs.select(args.recipes, ws.recipes_dir) if args.recipes else rs.recipes
    for r in chosen:
        print(f"ok  {r.display}  ({r.name} {r.version}; backends: {', '.join(r.backend_names)})")
    print(f"{len(chosen)} recipe(s) valid.")
    # what `plan` would refuse on this host, said now rather than in a later round
    from . import backends as registry

    host = _host(ws, rs)
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
    from .planfmt import gib
    from .resolve import memory_budget

    try:
        rs: RecipeSet | None = RecipeSet.load(ws.recipes_dir)
    except BuilderError:
        rs = None  # host facts do not depend on the recipes being valid
    host = _host(ws, rs)
    if args.format == "json":
        print(json.dumps(host.to_json(), indent=2, sort_keys=True))
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
    return 0


def cmd_plan(args: argparse.Namespace, ws: Workspace) -> int:
    from . import planfmt

    plan, _ = _plan(args, ws, plan_all=args.all, facts_file=args.host_facts)
    if args.format == "json":
        sys.stdout.write(planfmt.to_json(plan))
    elif args.format == "dot":
        sys.stdout.write(planfmt.dot(plan))
    else:
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        sys.stdout.write(planfmt.text(plan, color=color, commands=not args.no_commands))
    return 0


def cmd_matrix(args: argparse.Namespace, ws: Workspace) -> int:
    from . import cimatrix, matrix

    paths = [Path(a) for a in args.recipes if a.endswith((".yaml", ".yml"))]
    rs = RecipeSet.load(ws.recipes_dir, paths)
    if args.write_workflow and args.recipes:
        raise UsageError("--write-workflow covers every recipe of the project; drop the "
                         "recipe names")
    chosen = rs.select(args.recipes, ws.recipes_dir) if args.recipes else rs.recipes
    history = cimatrix.read_history(ws.state / "memory-history.json")
    roots = {r.name: cimatrix.source_roots(r, ws.state) for r in chosen}
    m = cimatrix.ci_matrix(chosen, matrix.CI_PYTHON, history, roots, project=rs.recipes)
    if args.write_workflow:
        # the workflow leaves out the estimates, so that it depends on the recipes only
        target = ws.root / cimatrix.WORKFLOW_PATH
        text = cimatrix.workflow(cimatrix.ci_matrix(chosen, matrix.CI_PYTHON))
        old = target.read_text(encoding="utf-8") if target.is_file() else None
        if old == text:
            print(f"{display_path(target)} is up to date ({m.job_count} jobs)")
            return 0
        from .execute import atomic_write

        atomic_write(target, text)
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
    from .lockfile import write

    plan, _ = _plan(args, ws, plan_all=False)
    n = write(plan, args.output)
    print(f"locked {n} variant(s) in {args.output}")
    return 0


def cmd_report(args: argparse.Namespace, ws: Workspace) -> int:
    from . import report

    if args.format == "json":
        print(json.dumps(report.load(ws), indent=1, sort_keys=True))
        return 0
    path = report.write(ws, args.output)
    print(f"wrote {display_path(path)}")
    if args.open:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())
    return 0


def cmd_cache(args: argparse.Namespace, ws: Workspace) -> int:
    from . import cache, cachescan

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


def cmd_schema(args: argparse.Namespace, ws: Workspace) -> int:
    from .docs import markdown
    from .validate import schema

    if args.format == "markdown":
        sys.stdout.write(markdown())
    else:
        print(json.dumps(schema(), indent=2))
    return 0


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a CI job cancelled, `kill`) stops a build like Ctrl-C: the running
    command's whole process group is stopped and the build is recorded as interrupted."""
    import signal
    import threading

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None, runner: Runner | None = None) -> int:
    """Run the CLI.  ``runner`` replaces the subprocess runner (tests record argv)."""
    parser = cli_args.parser()
    args = parser.parse_args(argv)
    root = args.project or find_project(Path.cwd())
    state = args.state_dir or (Path(os.environ["BUILDER_STATE_DIR"])
                               if os.environ.get("BUILDER_STATE_DIR") else None)
    ws = Workspace.at(root, state)
    commands = {"validate": cmd_validate, "host": cmd_host, "plan": cmd_plan,
                "schema": cmd_schema, "lock": cmd_lock, "report": cmd_report,
                "matrix": cmd_matrix, "cache": cmd_cache}
    try:
        if args.command in ("build", "publish", "remote"):
            from . import cli_build

            if args.command == "publish":
                return cli_build.cmd_publish(args, ws)
            if args.command == "remote":
                return cli_build.cmd_remote(args, ws)
            with _terminate_as_interrupt():
                return cli_build.cmd_build(args, ws, runner)
        return commands[args.command](args, ws)
    except BuilderError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(Interrupted("interrupted").render(), file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
