"""Turning a command line into a plan: find the project, load its recipes, look at the
host (or read a host-facts file), ask the remote what it holds, and resolve."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from builder.errors import RemoteError, UsageError
from builder.host.facts import HostFacts, load_host_facts
from builder.host.probe import probe
from builder.plan.model import BuildPlan
from builder.recipe.recipeset import RecipeSet
from builder.resolve import secretenv, stepenv
from builder.resolve.keyinputs import env_snapshot
from builder.resolve.options import secret_options
from builder.resolve.request import Request
from builder.resolve.resolver import resolve
from builder.util.secrets import remember, split_url
from builder.workspace.paths import Workspace

__all__ = ["find_project", "host_facts", "load_recipes", "make_plan", "refuse_credentials",
           "request_for"]


def find_project(start: Path) -> Path:
    here = start.resolve()
    for p in (here, *here.parents):
        if (p / "recipes").is_dir():
            return p
    return here


def load_recipes(args: argparse.Namespace, ws: Workspace) -> tuple[RecipeSet, list]:  # type: ignore[type-arg]
    paths = [Path(a) for a in getattr(args, "recipes", []) if a.endswith((".yaml", ".yml"))]
    for p in paths:
        if not p.is_file():
            raise UsageError(f"no such recipe file: {p}")
    rs = RecipeSet.load(ws.recipes_dir, paths, ws.schema_passes)
    if getattr(args, "all", False):
        roots = list(rs.recipes)
    elif args.recipes:
        roots = rs.select(args.recipes, ws.recipes_dir)
    else:
        names = ", ".join(sorted(rs.by_name)) or "none found"
        raise UsageError(f"name a recipe or pass --all (recipes: {names})")
    return rs, roots


def host_facts(ws: Workspace, rs: RecipeSet | None, facts_file: Path | None = None) -> HostFacts:
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


def request_for(args: argparse.Namespace, roots: list, plan_all: bool,  # type: ignore[type-arg]
                project: frozenset[str] = frozenset(),
                closure: list | None = None) -> Request:  # type: ignore[type-arg]
    """The request; ``project``: the recipes a ``recipe:`` prefix of ``-o`` may name
    (the selected ones and what they require); ``closure``: those recipes, whose
    environment variables are read as the roots' are (a dependency's ``${env.X}``)."""
    every = closure if closure is not None else roots
    known = {o.name for r in roots for o in r.options}
    project = project | {r.name for r in roots}
    refuse_credentials(every)
    for ov in args.option:
        if ov.recipe and ov.recipe not in project:
            raise UsageError(f"-o {ov.recipe}:{ov.name}={ov.value}: no recipe named "
                             f"'{ov.recipe}' is part of this build (recipes: "
                             f"{', '.join(sorted(project))})")
        if not ov.recipe and ov.name not in known:
            raise UsageError(f"-o {ov.name}: no selected recipe has an option '{ov.name}' "
                             f"(options: {', '.join(sorted(known)) or 'none'})")
    from builder.remote.names import check_remote_name

    for flag, name in (("--remote", getattr(args, "remote", "")),
                       ("--conan-remote", args.conan_remote)):
        if name:  # it becomes an argument of conan: never an option, never empty
            check_remote_name(name, flag)
    pythons = tuple(args.python)
    if "all" in pythons or (plan_all and not pythons):
        pythons = ("all",)
    return Request(backends=tuple(dict.fromkeys(args.backend)), pythons=pythons,
                   build_types=tuple(args.build_type), options=tuple(args.option),
                   env=env_snapshot(os.environ, every), skip_unsupported=args.skip_unsupported,
                   memory_budget=args.memory_budget, jobs=args.jobs,
                   run_tests=not getattr(args, "no_tests", False),
                   conan_remote=args.conan_remote, compiler_cache=args.compiler_cache,
                   cache_remote=split_url(args.cache_remote, "cache-remote")[1] or
                   args.cache_remote, remote=getattr(args, "remote", ""),
                   pass_env=stepenv.snapshot(stepenv.pass_names(
                       getattr(args, "env", []),
                       os.environ.get(stepenv.PASS_ENV_SETTING, "")), os.environ),
                   secret_env=secretenv.cli_names(getattr(args, "secret_env", [])),
                   own_pythonpath=own_pythonpath(),
                   wheel_variants=getattr(args, "wheel_variants", False),
                   dist=getattr(args, "dist_pool", None))


def own_pythonpath() -> str:
    """The entries of ``PYTHONPATH`` that builder itself runs from — its checkout, or the
    folder its dependencies were installed into (``pip install --target``) — as absolute
    paths: the steps' compiler launchers import builder, and the Conan installed beside it
    imports its own package, from there.  Entries builder did not load anything from are
    the user's, and do not reach a step."""
    import sys

    entries = [os.path.realpath(e) for e in os.environ.get("PYTHONPATH", "").split(os.pathsep)
               if e]
    loaded = [os.path.realpath(f) for m in list(sys.modules.values())
              if (f := getattr(m, "__file__", None))]
    used = [e for e in dict.fromkeys(entries)
            if any(f.startswith(e.rstrip("/") + "/") for f in loaded)]
    return os.pathsep.join(used)


def refuse_credentials(recipes: list) -> None:  # type: ignore[type-arg]
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


def make_plan(args: argparse.Namespace, ws: Workspace, plan_all: bool,
              facts_file: Path | None = None, unusable: frozenset[str] = frozenset(),
              check_sources: bool = False) -> tuple[BuildPlan, list[str]]:
    """The plan, and the names of the recipes the user asked for.  With ``--remote``, the
    remote is asked which variants it holds (except the keys in ``unusable``).  With
    ``check_sources``, the ``path`` sources of what will be built pass the source policy
    (no link out of the tree, no special file)."""
    from dataclasses import replace

    from builder.workspace.state import read_state

    rs, roots = load_recipes(args, ws)
    host = host_facts(ws, rs, facts_file)
    closure = rs.closure(roots)
    request = request_for(args, roots, plan_all, frozenset(r.name for r in closure),
                          closure=list(closure))
    for r in closure:  # the plan holds references to them: kept here, for the children
        for name, value in secret_options(r, request).items():
            remember(name, value)
        for name, value in secretenv.env_values(r, os.environ).items():
            remember(name, value)
        for name in {*r.build_spec.secrets, *(n for t in r.tests for n in t.secrets),
                     *request.secret_env}:
            if name in os.environ:  # passed to its steps at run time; masked everywhere
                remember(f"env/{name}", os.environ[name])
    state = read_state(ws, closure)
    notes: list[str] = []
    if request.remote:
        from builder.remote import conan as remote
        from builder.resolve.steps import tool

        try:
            keys = remote.remote_keys(ws, tool(host, "conan", "conan"), request.remote,
                                      [(r.name, r.version) for r in closure])
        except RemoteError as exc:
            if not getattr(args, "remote_optional", False):
                raise
            keys = {}
            notes.append(f"remote '{exc.remote}' {exc.why}: building locally "
                         f"(--remote-optional)")
        state = replace(state, remote_keys=frozenset(keys) - unusable,
                        remote_outputs=tuple(sorted((k, o) for k, o in keys.items()
                                                    if o and k not in unusable)))
    plan = resolve(roots, rs, request, host, state, ws)
    if check_sources:
        from builder.plan.model import BUILD
        from builder.source.policy import check_tree

        building = {v.recipe for v in plan.variants if v.status == BUILD}
        for r in closure:
            for s in r.sources if r.name in building else ():
                # a patched one is checked as patched, in builder's copy (its fetch step)
                if s.kind == "path" and not s.patches:
                    check_tree(Path(s.location), f"{r.display}: source.path", s.exclude)
    if plan_all and not args.python:  # plan and build --all differ here: say so
        from builder.plan.model import BUILD as TO_BUILD

        other = sorted({v.python for v in plan.variants if v.status == TO_BUILD and
                        v.python and v.python != host.default_python})
        if other:
            notes.append(f"--all plans every Python the recipes support; `builder build "
                         f"--all` builds Python {host.default_python} only, so the "
                         f"{', '.join(other)} variants stay to build (-p all builds them)")
    if notes:
        plan = replace(plan, notes=(*notes, *plan.notes))
    return plan, [r.name for r in roots]


