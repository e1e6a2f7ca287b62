"""Resolve recipes + a request + host facts into a :class:`BuildPlan` — purely.

``resolve`` reads no environment, starts no process and looks at no clock: the
host (:class:`HostFacts`), the workspace's current contents (:class:`State`) and
the environment variables that matter (``Request.env``) are all passed in as
values.  That is what makes ``builder plan`` trustworthy, fast and testable with
golden files.

Each variant (recipe × backend × build type × Python) is resolved in named steps:
its option values; what keeps it from being built here (:mod:`.checks`); its
dependencies, resolved first; its keys (:mod:`.keys`: the compile key, the variant key);
its steps (:mod:`.steps`, :mod:`.kernelsteps`, :mod:`.download`); its status (build,
cached, skip, download).  A variant whose compiled files are installed under its compile
key has its compile steps up to date: only its tests and wheel may be left to run (when
they changed, or never passed), and it is cached when none is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from builder import backends as registry
from builder.backends import Backend
from builder.backends.platforms import Platform
from builder.errors import Diagnostic, UnsupportedError, UsageError
from builder.host.facts import HostFacts
from builder.plan.model import BUILD, CACHED, DOWNLOAD, SKIP, BuildPlan, Step, Variant
from builder.plan.payloads import PublishKernels
from builder.recipe.model import BackendSpec, OptionValue, Recipe, option_text
from builder.recipe.recipeset import RecipeSet
from builder.recipe.subst import SubstitutionError
from builder.resolve import checks, keys, stepenv
from builder.resolve.cmakesteps import cmake_steps
from builder.resolve.download import download_steps
from builder.resolve.kernelsteps import kernel_steps
from builder.resolve.keyinputs import env_inputs, require_set
from builder.resolve.options import resolve_options
from builder.resolve.order import branch_notes, ordered
from builder.resolve.pysteps import python_steps
from builder.resolve.request import Request, dist_pool, memory_budget
from builder.resolve.secretenv import with_build_secrets
from builder.resolve.steps import VariantContext, refetch_for_tests, up_to_date
from builder.resolve.steps import tool as host_tool
from builder.resolve.xmakesteps import xmake_steps
from builder.wheels.variants import supported as variant_kind
from builder.workspace.paths import Workspace
from builder.workspace.state import State

__all__ = ["INSTALLS", "REMOTE_SYSTEMS", "branch_notes", "resolve"]

#: build systems whose variant is one install tree (cached as a whole by its key)
INSTALLS = ("cmake", "python", "xmake")
#: build systems whose variants a Conan remote can hold (python and xmake installs are
#: not exported to Conan yet: they are built here)
REMOTE_SYSTEMS = ("cmake", "kernels")
#: the steps of each build system's variant
_STEPS: dict[str, Callable[[VariantContext], list[Step]]] = {
    "cmake": cmake_steps, "kernels": kernel_steps, "python": python_steps,
    "xmake": xmake_steps}
#: the base environment, the same for the variants of one interpreter and option values
_variant_env = functools.lru_cache(maxsize=64)(stepenv.variant_env)


def resolve(roots: Sequence[Recipe], recipes: RecipeSet, request: Request, host: HostFacts,
            state: State, ws: Workspace) -> BuildPlan:
    """The plan for ``roots`` (and the recipes they require) on ``host``."""
    known = list(dict.fromkeys([*registry.names(), *(n for r in recipes.recipes
                                                     for n in r.backend_names)]))
    for b in request.backends:
        if b not in known:
            raise UsageError(f"unknown backend '{b}' (backends: {', '.join(known)})")
    res = _Resolution(recipes, request, host, state, ws)
    for recipe in roots:
        for backend, build_type, python in _requested(recipe, request, host):
            v = res.variant(recipe, backend, build_type, python)
            # variant wheels: the same build once per GPU arch, each with its own wheel
            spec = recipe.backend(backend)
            if (request.wheel_variants or recipe.wheel.variants) and len(v.archs) > 1 and \
                    spec is not None and variant_kind(spec.backend_kind) and \
                    recipe.python.versions and v.status != SKIP:
                for arch in v.archs:
                    res.variant(recipe, backend, build_type, python, arch)
    if res.arch_errors:
        raise UnsupportedError(res.arch_errors)
    return res.plan()


def _requested(recipe: Recipe, request: Request, host: HostFacts
               ) -> list[tuple[str, str, str]]:
    """(backend, build type, Python) of each variant the request asks of ``recipe``."""
    backends = [b for b in (request.backends or recipe.backend_names)
                if recipe.backend(b) is not None]
    if request.backends and not backends:
        raise UsageError(f"recipe '{recipe.name}' has no backend "
                         f"{' or '.join(request.backends)} (it declares "
                         f"{', '.join(recipe.backend_names)})")
    build_types = [t for t in (request.build_types or recipe.build_types[:1])
                   if t in recipe.build_types] or list(recipe.build_types[:1])
    pythons = checks.pythons_for(recipe, request, host) \
        if recipe.python.abi == "cpython" else [""]
    if recipe.python.abi == "cpython" and request.pythons and request.pythons != ("all",):
        pythons = list(request.pythons)  # one it does not support: a skip that says why
    return [(b, bt, py) for b in backends for bt in build_types for py in pythons]


@dataclass
class _Feasibility:
    """What the checks found for one variant."""

    platform: Platform | None
    problems: list[checks.Problem]
    archs: checks.ArchChoice
    compiler_cache: str
    python: str  # the interpreter the build uses ("" when none)
    #: the first problem rules the variant out on this host whatever else is installed
    #: (the rest would be noise); otherwise every problem is said at once
    hard: bool = False


class _Resolution:
    """The variants resolved so far (each once: dependencies are shared) and their steps."""

    def __init__(self, recipes: RecipeSet, request: Request, host: HostFacts, state: State,
                 ws: Workspace) -> None:
        self.recipes, self.request, self.host, self.state, self.ws = \
            recipes, request, host, state, ws
        self.budget = memory_budget(host, request)
        self.dist = dist_pool(request)
        # the pool's cores join this machine's: a job holds a local slot while it is out
        self.jobs = request.jobs or host.cpus + (self.dist.cores if self.dist else 0)
        self.notes: list[str] = []
        self.arch_errors: list[Diagnostic] = []
        self.variants: dict[str, Variant] = {}
        self.steps: list[Step] = []
        self.memo: dict[tuple[str, str, str, str], Variant] = {}
        #: variant id → (its key inputs, what its dependents are keyed by: keys.OUTPUT,
        #: or keys.PENDING or keys.BY_KEY with its compile key)
        self.consumed: dict[str, tuple[keys.KeyInputs, str]] = {}
        self.identities: dict[str, str] = {}  # variant id → keys.identity_key, once
        # the workspace's tables as the step makers look them up: made once, shared by
        # every variant's context (read only), not copied per variant
        self.tables = (dict(state.file_digests), dict(state.compile_units),
                       {f: (p, t, c) for f, p, t, c in state.measured},
                       dict(state.kernel_installs), dict(state.source_digests),
                       dict(state.name_digests), dict(request.env),
                       dict(state.kernel_records))

    def variant(self, recipe: Recipe, backend: str, build_type: str, python: str,
                arch: str = "") -> Variant:
        """One variant; ``arch``: only that GPU arch of the backend's (a variant wheel's
        build: its own compile key, install tree and wheel)."""
        memo_key = (recipe.name, backend, build_type, python + (f"@{arch}" if arch else ""))
        if memo_key in self.memo:
            return self.memo[memo_key]
        spec = recipe.backend(backend)
        assert spec is not None
        be = registry.get(spec.backend_kind)
        vnotes: list[str] = []
        options = resolve_options(recipe, self.request, vnotes)
        found = self._check(recipe, spec, be, options, python)
        if arch:
            found = replace(found, archs=replace(found.archs, archs=(arch,), skipped=()))
        deps = self._dependencies(recipe, spec, build_type, python, found.problems)
        # a variant wheel's build is keyed as if the recipe named its one arch: adding
        # another arch to the recipe leaves the builds of the existing ones as they are
        keyed = recipe if not arch else replace(recipe, backends=tuple(
            replace(b, archs=(arch,)) if b.name == backend else b for b in recipe.backends))
        inputs = self._key_inputs(keyed, spec, be, build_type, python, options, found, deps)
        variant = self._variant(inputs, found, deps, vnotes, arch)
        if variant.status != SKIP:  # one that is built needs each variable it reads set
            require_set(recipe, dict(self.request.env), spec.name)
        self.memo[memo_key] = variant
        variant, new_steps = self._steps(variant, inputs, found, deps, arch)
        self.memo[memo_key] = variant
        self.variants[variant.id] = variant
        self.consumed[variant.id] = (inputs, self._consumed(variant))
        self.steps.extend(new_steps)
        vnotes += branch_notes(recipe.name, new_steps, self.state)
        self.notes.extend(n for n in vnotes if n not in self.notes)
        return variant

    def _identity(self, variant_id: str) -> str:
        """keys.identity_key of a dependency, made when a dependent first asks (most
        variants have none)."""
        if variant_id not in self.identities:
            self.identities[variant_id] = keys.identity_key(self.consumed[variant_id][0])
        return self.identities[variant_id]

    def _consumed(self, v: Variant) -> str:
        """What a dependent of ``v`` is keyed by: the output digest of ``v``'s install when
        its compile is up to date, pending while it is to be built (or downloaded)."""
        output = self.state.output(v.compile_key)
        if self.recipes.by_name[v.recipe].build_system not in INSTALLS or v.status == SKIP:
            return keys.BY_KEY + v.compile_key
        if output and v.status in (BUILD, CACHED):
            return keys.OUTPUT + output
        if v.status == DOWNLOAD and (remote := self.state.remote_output(v.compile_key)):
            return keys.OUTPUT + remote  # the bytes the download puts in place
        return keys.PENDING + v.compile_key

    def _check(self, recipe: Recipe, spec: BackendSpec, be: Backend,
               options: dict[str, OptionValue], python: str) -> _Feasibility:
        host, request = self.host, self.request
        platform, problems = checks.platform_problems(spec, be, host)
        hard = bool(problems)  # not buildable on this host: what else is missing is noise
        problems += [p for p in checks.tool_problems(recipe, spec, be, host, options)
                     if p not in problems]
        archs = checks.arch_choice(recipe, spec, be, host, options, request)
        self.arch_errors.extend(archs.errors)
        if archs.skipped:  # said by plan and build (a CMake build would just lack them)
            self.notes.extend(n for n in (
                f"{recipe.name} {spec.name}: left out by --skip-unsupported: {why} (fix: {fx})"
                for _, why, fx in archs.skipped) if n not in self.notes)
        compiler_cache = request.compiler_cache or recipe.compiler_cache or "none"
        problems += checks.requirement_problems(recipe, spec, host, options, request,
                                                platform, compiler_cache)
        if recipe.enabled_by and options.get(recipe.enabled_by) is False:
            problems.insert(0, (f"disabled: option {recipe.enabled_by} is false",
                                f"-o {recipe.name}:{recipe.enabled_by}=true to build it"))
            hard = True
        wanted = checks.pythons_for(recipe, request, host)
        if python and recipe.python.versions and python not in recipe.python.versions:
            problems.insert(0, (f"Python {python} is not among the versions {recipe.name} "
                                f"supports ({', '.join(recipe.python.versions)})",
                                "ask for a supported version with --python, or add it to "
                                f"python.versions in {recipe.display}"))
            hard = True
        elif not wanted and request.pythons and request.pythons != ("all",):
            problems.append((f"Python {', '.join(request.pythons)} is not among the versions "
                             f"{recipe.name} supports ({', '.join(recipe.python.versions)})",
                             "ask for a supported version with --python"))
        builds_with_python = recipe.build_system == "python"  # the interpreter runs the build
        # a Python-independent build (abi: none) uses the default interpreter when the recipe
        # supports it, so that `plan --all` and `plan NAME` agree on its variant
        py_for_build = python or ((host.default_python if host.default_python in wanted else
                                   (wanted or [host.default_python])[0])
                                  if recipe.python.versions or recipe.requires.python or
                                  builds_with_python else "")
        if py_for_build and (recipe.requires.python or python or builds_with_python):
            p = checks.python_problem(recipe, py_for_build, host) or \
                checks.torch_backend_problem(recipe, be, py_for_build, host)
            if p:
                problems.append(p)
        return _Feasibility(platform, problems, archs, compiler_cache, py_for_build, hard=hard)

    def _dependencies(self, recipe: Recipe, spec: BackendSpec, build_type: str, python: str,
                      problems: list[checks.Problem]) -> list[Variant]:
        """The required recipes' variants (resolved first); their problems become ours."""
        backend = spec.name
        deps: list[Variant] = []
        for req in recipe.requires.recipes:
            dep = self.recipes.by_name[req.name]
            dep_backend = backend if dep.backend(backend) else "cpu"
            if dep.backend(backend) is None and spec.target:  # a cpu build is for this host
                problems.append((f"requires {dep.name}, which has no {backend} backend (its "
                                 f"cpu build is for this host, not {spec.target})",
                                 f"add backends.{backend} (kind: {spec.backend_kind}, target: "
                                 f"{spec.target}) to {dep.display}"))
                continue
            if dep.backend(dep_backend) is None:
                problems.append((f"requires {dep.name}, which has no {backend} or cpu backend",
                                 f"add backends.{backend} to {dep.display}"))
                continue
            dep_bt = build_type if build_type in dep.build_types else dep.build_types[0]
            dep_py = ""
            if dep.python.abi == "cpython":  # the dependent's Python, else the default one
                dep_py = python or checks.pythons_for(dep, replace(self.request, pythons=()),
                                                      self.host)[0]
            dv = self.variant(dep, dep_backend, dep_bt, dep_py)
            deps.append(dv)
            if dv.status == SKIP:
                problems.append((f"requires {dep.name}, which is skipped: {dv.reason}", dv.fix))
        return deps

    def _key_inputs(self, recipe: Recipe, spec: BackendSpec, be: Backend, build_type: str,
                    python: str, options: dict[str, OptionValue], found: _Feasibility,
                    deps: list[Variant]) -> keys.KeyInputs:
        host = self.host
        multiarch = found.platform.multiarch if found.platform else ""
        return keys.KeyInputs(
            recipe=recipe, backend=spec.name, build_type=build_type, python=python,
            py_info=host.python(found.python) if found.python else None,
            archs=found.archs.archs, options=options,
            sources=keys.source_digest(recipe, self.state),
            tools=keys.tool_versions(host, be, found.platform),
            conan=keys.conan_pins(recipe, host, multiarch),
            deps=[self._identity(d.id) for d in deps],
            dep_outputs=tuple(self.consumed[d.id][1] for d in deps),
            env=tuple(env_inputs(recipe, dict(self.request.env), backend=spec.name)) +
            stepenv.key_entries(self.request.pass_env),
            test_env=tuple(env_inputs(recipe, dict(self.request.env), tests=True,
                                      backend=spec.name)),
            py_reqs=tuple(keys.python_requirements(recipe, host.python(found.python)
                                                   if found.python else None)),
            toolchain=keys.toolchain(host, be, found.platform, recipe.build_system),
            code_flags=be.code_flags(be.compress_mode(spec.compress_mode, host)))

    def _variant(self, k: keys.KeyInputs, found: _Feasibility, deps: list[Variant],
                 vnotes: list[str], arch: str = "") -> Variant:
        recipe, python = k.recipe, k.python
        config_key = keys.config_key(k)
        record = self.state.record(config_key)
        key, compile_key = keys.variant_key(k, record), keys.compile_key(k, record)
        if record is not None and not record.ok and keys.recorded(recipe):
            vnotes.append(f"{recipe.name} {k.backend} {k.build_type}: rebuilt, since "
                          f"{record.changed} changed after its last build")
        waits_for = tuple(d.id for d, out in zip(deps, k.dep_outputs, strict=True)
                          if out.startswith(keys.PENDING))
        if waits_for:
            names = ", ".join(dict.fromkeys(d.recipe for d in deps if d.id in waits_for))
            vnotes.append(f"{recipe.name} {k.backend} {k.build_type}: rebuilds if {names}'s "
                          f"output changes (decided once {names} is built)")
        # the folders go with the config: a test edit builds in the same ones, a source
        # edit rebuilds incrementally in them
        vdir = f"{k.backend}-{k.build_type}" + (f"-py{python}" if python else "") + \
            (f"-{arch}" if arch else "") + f"-{config_key[:12]}"
        prefix = self.ws.install_dir(recipe.name, vdir)
        status, reason, fix = BUILD, "", ""
        if found.problems:
            # everything that is missing at once (one fix line for all of it), unless the
            # first problem rules the variant out on this host whatever else is installed
            shown = found.problems[:1] if found.hard else found.problems
            status = SKIP
            reason = "; ".join(dict.fromkeys(p[0] for p in shown))
            fix = "; ".join(dict.fromkeys(p[1] for p in shown if p[1]))
        return Variant(
            id=f"{recipe.name}/{vdir}", recipe=recipe.name, version=recipe.version,
            backend=k.backend, build_type=k.build_type, python=python, archs=k.archs,
            options=tuple((n, option_text(v)) for n, v in k.options.items()), key=key,
            prefix=str(prefix), status=status, reason=reason, fix=fix,
            deps=tuple(d.id for d in deps), recipe_file=recipe.display, notes=tuple(vnotes),
            pins=keys.pins(k), compile_key=compile_key, config_key=config_key,
            env=self._base_env(k), waits_for=waits_for)

    def _base_env(self, k: keys.KeyInputs) -> tuple[tuple[str, str], ...]:
        """The environment every step of the variant starts from (resolve.stepenv)."""
        host, recipe = self.host, k.recipe
        py = k.py_info or host.python(host.default_python)
        tools = [host.builder_python, *(t.path for t in host.tools), py.path if py else ""]
        values = {o.name: option_text(v) for o, v in
                  ((o, k.options[o.name]) for o in recipe.options if o.name in k.options)}
        return _variant_env(
            tool_paths=tuple(t for t in tools if t), state=str(self.ws.state),
            own_pythonpath=self.request.own_pythonpath,
            cxx=cxx.path if (cxx := host.tool("cxx")) else "",
            options_env=tuple((n, values[o.name]) for o in recipe.options if o.name in values
                              for n in (o.legacy_env, o.env) if n),
            passed=self.request.pass_env)

    def _context(self, variant: Variant, k: keys.KeyInputs, found: _Feasibility,
                 deps: list[Variant], arch: str = "") -> VariantContext:
        state, request = self.state, self.request
        files, units, measured, kernel_installs, sources, names, env, kernel_records = \
            self.tables
        test_pythons = tuple(checks.pythons_for(k.recipe, request, self.host)) \
            if not k.python else (k.python,)
        return VariantContext(
            recipe=k.recipe, variant=variant, host=self.host, ws=self.ws, jobs=self.jobs,
            options=k.options, python=k.py_info,
            deps=tuple((d, self.recipes.by_name[d.recipe]) for d in deps),
            file_digests=files, kernel_artifacts=state.kernel_artifacts,
            fetched=state.fetched, budget=self.budget, units=units,
            wheels=state.wheels, measured=measured,
            kernel_installs=kernel_installs, kernel_records=kernel_records,
            skipped_archs=found.archs.skipped,
            env=env, run_tests=request.run_tests,
            conan_remote=request.conan_remote, compiler_cache=found.compiler_cache,
            cache_remote=request.cache_remote,
            test_pythons=test_pythons, platform=found.platform,
            remote=request.dist if self.dist else None,
            source_digests=sources, done=state.done, wheel_variant=arch,
            name_digests=names,
            compiled=k.recipe.build_system in INSTALLS and
            variant.compile_key in state.installed,
            own_key=keys.own_key(k, state.record(variant.config_key)),
            test_python_problems=tuple(
                (p, *problem) for p in test_pythons if p != found.python
                and k.recipe.requires.python
                for problem in [checks.python_problem(k.recipe, p, self.host)] if problem))

    def _steps(self, variant: Variant, k: keys.KeyInputs, found: _Feasibility,
               deps: list[Variant], arch: str = "") -> tuple[Variant, list[Step]]:
        """The variant's steps; a kernel variant whose steps are all done is cached, one
        published on the remote is downloaded."""
        recipe, request = k.recipe, self.request
        ctx = self._context(variant, k, found, deps, arch)
        variant = replace(variant, sources=tuple(dict.fromkeys(
            [ctx.source_root(), *(s.location for s in recipe.sources if s.kind == "path")])))
        try:
            new_steps = with_build_secrets(
                recipe, _STEPS.get(recipe.build_system, cmake_steps)(ctx),
                request.secret_env)
        except SubstitutionError as exc:
            if variant.status == SKIP:  # e.g. ${python} of an interpreter this host lacks
                return variant, []
            raise checks.no_value(recipe, exc.name) from None
        compiled = ctx.compiled or any(s.kind == "publish-kernels" and s.status == CACHED
                                       for s in new_steps)
        if variant.status == BUILD and ctx.compiled:  # only the tests or the wheel may run
            new_steps = refetch_for_tests([up_to_date(s, variant.prefix) for s in new_steps],
                                          ctx.fetched)
        if variant.status == BUILD and all(s.status != BUILD for s in new_steps):
            return replace(variant, status=CACHED, reason=f"up to date: {variant.prefix}"
                           if ctx.compiled else ""), new_steps
        if variant.status == BUILD and not compiled and request.remote and \
                variant.compile_key in self.state.remote_keys and \
                recipe.build_system in REMOTE_SYSTEMS:
            variant = replace(variant, status=DOWNLOAD,
                              reason=f"published on remote {request.remote}; downloaded, "
                                     f"not built (its tests ran where it was built)")
            return variant, download_steps(variant, new_steps, request.remote,
                                           host_tool(self.host, "conan", "conan"), self.ws,
                                           cmake=recipe.build_system == "cmake")
        return variant, new_steps

    def plan(self) -> BuildPlan:
        self._one_recipe_per_tree()
        variants = ordered(list(self.variants.values()))
        order_index = {v.id: i for i, v in enumerate(variants)}
        self.steps.sort(key=lambda s: order_index[s.variant])
        host, budget = self.host, self.budget
        # the budget says where it comes from; the host facts say where they come from
        mem_desc = f"{budget / 2**30:.1f} GiB budget (" + (
            "--memory-budget" if self.request.memory_budget else
            f"{host.memory.usable() / 2**30:.1f} GiB available less a reserve") + ")"
        return BuildPlan(variants=tuple(variants), steps=tuple(self.steps),
                         host=f"{host.os}-{host.arch}, {host.cpus} CPUs ({host.source}), "
                              f"{mem_desc}",
                         cpus=host.cpus, memory_budget=budget, jobs=self.jobs,
                         notes=tuple(self.notes + list(self.state.notes)), dist=self.dist)

    def _one_recipe_per_tree(self) -> None:
        """Two recipes publishing into one kernel tree would replace each other's files
        on every build (and each would say it is up to date): refused here, naming the
        ``install.root`` line of both."""
        from builder.workspace.ownership import shared_tree

        claims = []
        for s in self.steps:
            if isinstance(s.payload, PublishKernels):
                recipe = self.recipes.by_name[self.variants[s.variant].recipe]
                where = recipe.positions.location(("install", "root")) if \
                    recipe.positions else recipe.display
                claims.append((s.payload.tree, recipe.name, str(where)))
        shared_tree(claims)
