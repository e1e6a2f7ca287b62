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

from . import __version__
from .errors import BuilderError, Interrupted, UsageError
from .host import HostFacts, load_host_facts, probe
from .options import OptionOverride
from .plan import BuildPlan
from .recipes import RecipeSet, display_path
from .resolve import Request, env_snapshot, resolve
from .runner import Runner
from .workspace import Workspace

EPILOG = """exit codes: 0 success; 1 a build step failed; 2 bad command line; 3 invalid recipe
or host-facts file; 4 cannot be planned on this host (missing tool, unsupported arch);
5 workspace locked (--no-wait); 6 a Conan remote is unknown, down or refuses the
credentials; 130 interrupted."""


def _size(text: str) -> int:
    from .validate import parse_size

    try:
        return parse_size(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 6GiB or 800MiB)") from None


def _option(text: str) -> OptionOverride:
    name, eq, value = text.partition("=")
    if not eq or not name:
        raise argparse.ArgumentTypeError(f"expected name=value or recipe:name=value, got "
                                         f"{text!r}")
    recipe, colon, opt = name.partition(":")
    return OptionOverride(recipe, opt, value) if colon else OptionOverride("", name, value)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="builder", description="Declarative builds of native GPU/ML libraries: YAML "
        "recipes → a plan you can read → Conan 2 + CMake/Ninja builds.", epilog=EPILOG)
    p.add_argument("--version", action="version", version=f"builder {__version__}")
    p.add_argument("-C", "--project", type=Path, default=None, metavar="DIR",
                   help="project folder holding recipes/ (default: the current folder or the "
                        "nearest parent with a recipes/ folder)")
    p.add_argument("--state-dir", type=Path, default=None, metavar="DIR",
                   help="where builds, caches, logs and the Conan home live (default: "
                        "$BUILDER_STATE_DIR, else <project>/.builder)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    v = sub.add_parser("validate", help="check recipes against the schema and each other",
                       description="Validate recipe files (default: every recipe of the "
                       "project). Errors name file:line:col and a hint.")
    v.add_argument("recipes", nargs="*", help="recipe names or paths to .yaml files")

    h = sub.add_parser("host", help="show what this machine offers",
                       description="CPUs, memory budget, toolchains and their GPU archs, "
                       "Python interpreters.")
    h.add_argument("--format", choices=("text", "json"), default="text")
    h.add_argument("--memory-budget", type=_size, default=0, metavar="SIZE")

    def selection(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("recipes", nargs="*", help="recipe names or paths to .yaml files")
        sp.add_argument("--all", action="store_true", help="every recipe of the project")
        sp.add_argument("-b", "--backend", action="append", default=[], metavar="BACKEND",
                        help="only this backend: cpu, cuda, rocm, metal or one a recipe "
                             "names, such as arm (repeatable; default: all the recipe "
                             "declares)")
        sp.add_argument("-p", "--python", action="append", default=[], metavar="X.Y",
                        help="target Python version (repeatable; 'all' for every supported)")
        sp.add_argument("--build-type", action="append", default=[],
                        choices=("release", "debug", "relwithdebinfo"))
        sp.add_argument("-o", "--option", action="append", default=[], type=_option,
                        metavar="[RECIPE:]NAME=VALUE", help="set a recipe option")
        sp.add_argument("--skip-unsupported", action="store_true",
                        help="leave out archs the toolchain cannot build, and backends or "
                             "target platforms this host cannot build, shown as skipped, "
                             "instead of failing")
        sp.add_argument("--memory-budget", type=_size, default=0, metavar="SIZE",
                        help="memory the build may use, e.g. 6GiB (default: available memory "
                             "or the cgroup limit, less a reserve)")
        sp.add_argument("--compiler-cache", choices=("none", "ccache", "sccache"),
                        default=os.environ.get("BUILDER_COMPILER_CACHE", ""),
                        help="compile through a compiler cache (default: "
                             "$BUILDER_COMPILER_CACHE, else the recipe's build.compiler_cache, "
                             "else none)")
        sp.add_argument("--cache-remote", default="", metavar="URL",
                        help="remote storage for the compiler cache, e.g. "
                             "redis://127.0.0.1:6379")
        sp.add_argument("--conan-remote", default="", metavar="NAME",
                        help="Conan remote for requirements with `provider: remote`")
        sp.add_argument("-j", "--jobs", type=int, default=0, help="parallel compile jobs "
                        "(default: usable CPUs)")
        sp.add_argument("--remote", default=os.environ.get("BUILDER_REMOTE", ""),
                        metavar="NAME", help="download variants published on this Conan "
                        "remote instead of building them (`builder remote add`; default: "
                        "$BUILDER_REMOTE); credentials from CONAN_LOGIN_USERNAME_<NAME> / "
                        "CONAN_PASSWORD_<NAME>")
        sp.add_argument("--remote-optional", action="store_true",
                        help="build locally when the remote is down or refuses us, instead "
                             "of failing")

    pl = sub.add_parser("plan", help="show exactly what a build would do (runs nothing)",
                        description="Resolve recipes for this host (or --host-facts) and show "
                        "every step with its exact command and status. With --all and no "
                        "--python, every supported Python version is planned.")
    selection(pl)
    pl.add_argument("--format", choices=("text", "json", "dot"), default="text")
    pl.add_argument("--host-facts", type=Path, metavar="FILE",
                    help="plan for the machine described by FILE (from `builder host "
                         "--format json`)")
    pl.add_argument("--no-commands", action="store_true", help="hide the commands")

    lk = sub.add_parser("lock", help="pin sources, toolchains, Conan refs, archs and options",
                        description="Write a lockfile for the selected recipes; `builder build "
                        "--lockfile FILE` then refuses to build anything that differs.")
    selection(lk)
    lk.add_argument("--output", type=Path, default=Path("builder.lock"), metavar="FILE")

    b = sub.add_parser("build", help="build recipes", description="Plan, then run the steps "
                       "that are not cached. Inputs unchanged: nothing runs.")
    selection(b)
    b.add_argument("--no-tests", action="store_true",
                   help="do not run the recipes' test steps (shown as skipped)")
    b.add_argument("--lockfile", type=Path, metavar="FILE",
                   help="refuse to build anything that differs from this lockfile")
    b.add_argument("-k", "--keep-going", action="store_true",
                   help="go on with independent steps after a failure")
    b.add_argument("--no-wait", action="store_true",
                   help="fail at once if another builder holds the workspace")
    b.add_argument("-v", "--verbose", action="store_true", help="stream every command's output")
    b.add_argument("-q", "--quiet", action="store_true", help="print only failures and the "
                   "summary")

    pb = sub.add_parser("publish", help="upload built variants to a Conan remote",
                        description="Upload the selected recipes' up-to-date variants (and "
                        "their dependencies) to a Conan remote: the Conan package, wheels "
                        "and kernel artifacts, found by the variant key. Another machine's "
                        "`builder build --remote NAME` then downloads instead of building.")
    selection(pb)
    rm = sub.add_parser("remote", help="configure the Conan remotes builder may use",
                        description="Add, list or remove remotes in builder's project-local "
                        "Conan home (no remote is configured by default: builds are offline).")
    rm_sub = rm.add_subparsers(dest="remote_command", metavar="ACTION", required=True)
    ra = rm_sub.add_parser("add", help="add a remote: NAME URL")
    ra.add_argument("name")
    ra.add_argument("url")
    ra.add_argument("--insecure", action="store_true", help="do not verify TLS certificates")
    rm_sub.add_parser("list", help="list the configured remotes")
    rr = rm_sub.add_parser("remove", help="remove a remote")
    rr.add_argument("name")

    mx = sub.add_parser("matrix", help="print the CI matrix (backend × Python × runner)",
                        description="The CI jobs for the recipes: one per (backend, Python) "
                        "that an extension recipe (python.abi: cpython) needs, and one per "
                        "backend for Python-independent recipes; each with its runner, its "
                        "nox session and a CPU-time estimate from the build history.")
    mx.add_argument("recipes", nargs="*", help="recipe names or paths (default: every recipe)")
    mx.add_argument("--format", choices=("text", "json", "github"), default="text",
                    help="github: {\"include\": [...]} for a workflow's strategy.matrix")
    mx.add_argument("--write-workflow", action="store_true",
                    help="write .github/workflows/build.yml (one job per matrix entry, each "
                         "running its nox session)")

    rp = sub.add_parser("report", help="an HTML page (or JSON) about the last build",
                        description="Timeline of compile jobs per slot, memory over time "
                        "against the budget, translation units by peak memory and time, plan "
                        "summary and cache hits — one self-contained page, no network.")
    rp.add_argument("--format", choices=("html", "json"), default="html")
    rp.add_argument("--output", type=Path, metavar="FILE",
                    help="where to write the page (default: .builder/report.html)")
    rp.add_argument("--open", action="store_true", help="open it in a browser")

    ca = sub.add_parser("cache", help="disk use of the state folder; prune what no build "
                        "needs", description="`info`: sizes per kind (sources, builds, stage, "
                        "installs, kernel artifacts, wheels, Conan packages, logs, leftovers "
                        "of interrupted builds) and per recipe. `prune`: remove what is not "
                        "needed — never the newest complete install of each variant, its "
                        "build folder, what the lockfile pins, or published kernels.")
    ca.add_argument("action", choices=("info", "prune"))
    ca.add_argument("--format", choices=("text", "json"), default="text")
    ca.add_argument("--max-size", metavar="SIZE", help="prune: remove unneeded items, oldest "
                    "first, until the state folder is no larger than SIZE (e.g. 10GiB)")
    ca.add_argument("--older-than", metavar="AGE", help="prune: only items not written for "
                    "AGE (e.g. 30d, 12h)")
    ca.add_argument("--dry-run", action="store_true", help="prune: only list what would go")
    ca.add_argument("--lockfile", type=Path, metavar="FILE", help="keep every variant this "
                    "lockfile pins (default: builder.lock in the project, when present)")
    ca.add_argument("--no-wait", action="store_true",
                    help="prune: fail at once if a build holds the workspace")

    sc = sub.add_parser("schema", help="print the recipe JSON Schema (or its reference table)")
    sc.add_argument("--format", choices=("json", "markdown"), default="json")
    return p


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
    parser = _parser()
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
