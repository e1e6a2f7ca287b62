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

from builder.cli import args as cli_args
from builder.errors import BuilderError, FileSystemError, UsageError
from builder.host.facts import HostFacts, load_host_facts, probe
from builder.plan.model import BuildPlan
from builder.recipe.recipeset import RecipeSet, display_path
from builder.resolve.resolver import Request, env_snapshot, resolve
from builder.util.runner import Runner
from builder.workspace.paths import Workspace


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
    from builder.resolve.system import needed_packages

    return probe(ws.host_cache, tuple(sorted(pkgs)),
                 needed_packages(rs.recipes) if rs is not None else ())


def _request(args: argparse.Namespace, roots: list, plan_all: bool,  # type: ignore[type-arg]
             project: frozenset[str] = frozenset()) -> Request:
    """The request; ``project``: the recipes a ``recipe:`` prefix of ``-o`` may name
    (the selected ones and what they require)."""
    known = {o.name for r in roots for o in r.options}
    project = project | {r.name for r in roots}
    _refuse_credentials(roots)
    for ov in args.option:
        if ov.recipe and ov.recipe not in project:
            raise UsageError(f"-o {ov.recipe}:{ov.name}={ov.value}: no recipe named "
                             f"'{ov.recipe}' is part of this build (recipes: "
                             f"{', '.join(sorted(project))})")
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


def _refuse_credentials(recipes: list) -> None:  # type: ignore[type-arg]
    """A recipe that substitutes a credential variable (``${env.CONAN_PASSWORD_X}``)
    would write it into CMake caches, logs and plans: refused, located."""
    from builder.errors import Diagnostic, Location, RecipeError
    from builder.resolve.keyinputs import env_names
    from builder.util.secrets import credential_names

    diags = []
    for r in recipes:
        for name in credential_names(env_names(r)):
            lines = r.positions.lines if r.positions else []
            at = next(((i, t.index("${env." + name)) for i, t in enumerate(lines, 1)
                       if "${env." + name in t), (0, 0))
            diags.append(Diagnostic(
                Location(r.display, at[0], at[1] + 1 if at[0] else 0), "",
                f"${{env.{name}}} is a credential; builder never substitutes one (it would "
                "end up in CMake caches, logs and plans)",
                "let the tool read it from the environment itself (Conan reads "
                "CONAN_LOGIN_USERNAME_<REMOTE> and CONAN_PASSWORD_<REMOTE>)",
                lines[at[0] - 1] if at[0] else ""))
    if diags:
        raise RecipeError(diags)


def _plan(args: argparse.Namespace, ws: Workspace, plan_all: bool,
          facts_file: Path | None = None, unusable: frozenset[str] = frozenset(),
          check_sources: bool = False) -> tuple[BuildPlan, list[str]]:
    """The plan, and the names of the recipes the user asked for.  With ``--remote``, the
    remote is asked which variants it holds (except the keys in ``unusable``).  With
    ``check_sources``, the ``path`` sources of what will be built pass the source policy
    (no link out of the tree, no special file)."""
    from dataclasses import replace

    from builder.workspace.state import read_state

    rs, roots = _load(args, ws)
    host = _host(ws, rs, facts_file)
    request = _request(args, roots, plan_all, frozenset(r.name for r in rs.closure(roots)))
    closure = rs.closure(roots)
    state = read_state(ws, closure)
    notes: list[str] = []
    if request.remote:
        from builder.remote import conan as remote
        from builder.resolve.steps import tool

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
    if check_sources:
        from builder.plan.model import BUILD
        from builder.source.policy import check_tree

        building = {v.recipe for v in plan.variants if v.status == BUILD}
        for r in closure:
            for s in r.sources if r.name in building else ():
                if s.kind == "path":
                    check_tree(Path(s.location), f"{r.display}: source.path")
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
    return 0


def cmd_host(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.plan.text import gib
    from builder.resolve.resolver import memory_budget

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
    from builder.plan import text as planfmt

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
    from builder.ci import jobs as cimatrix
    from builder.ci import sessions as matrix

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
        from builder.util.files import atomic_write

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
    from builder.workspace.pins import write

    plan, _ = _plan(args, ws, plan_all=False)
    n = write(plan, args.output)
    print(f"locked {n} variant(s) in {args.output}")
    return 0


def cmd_report(args: argparse.Namespace, ws: Workspace) -> int:
    from builder.report import page as report

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
    try:
        return _main(argv, runner)
    except KeyboardInterrupt:
        from builder.cli.entry import interrupted

        return interrupted()


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
                "matrix": cmd_matrix, "cache": cmd_cache, "verify": cmd_verify}
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
            with _terminate_as_interrupt():
                return cli_build.cmd_build(args, ws, runner)
        return commands[args.command](args, ws)
    except BuilderError as exc:
        if exc.exit_code == 130:
            from builder.cli.entry import ignore_interrupts

            ignore_interrupts()  # a second Ctrl-C while saying so changes nothing
        from builder.util.secrets import redact

        print(redact(exc.render()), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        from builder.cli.entry import interrupted

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
