"""Resolve recipes + a request + host facts into a :class:`BuildPlan` — purely.

``resolve`` reads no environment, starts no process and looks at no clock: the
host (:class:`HostFacts`), the workspace's current contents (:class:`State`) and
the environment variables that matter (``Request.env``) are all passed in as
values.  That is what makes ``builder plan`` trustworthy, fast and testable with
golden files.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from . import backends as registry
from . import render, targets
from .errors import Diagnostic, Location, RecipeError, UnsupportedError, UsageError
from .host import HostFacts
from .kernelsteps import kernel_steps
from .model import Recipe, digest, option_text
from .options import OptionOverride, resolve_options
from .plan import BUILD, CACHED, DOWNLOAD, SKIP, BuildPlan, Variant
from .recipes import RecipeSet
from .remote import download_steps
from .steps import VariantContext, cmake_steps
from .steps import tool as host_tool
from .subst import SubstitutionError, substitute, variables
from .system import (
    conan_problem,
    cross_problem,
    missing_system,
    packages_for,
    qualified,
)
from .system import table as system_table
from .workspace import Workspace

#: bump when the meaning of a plan changes, so that old caches are not reused
#: (the templates of generated files are hashed into every key as well)
FORMAT = "builder-1"
#: besides the compile jobs and their launchers (which the broker counts): builder, cmake,
#: ninja and the cgroup helper (~45 MB anonymous, measured), page tables, slack
MIN_RESERVE = 128 * 2**20


@dataclass(frozen=True)
class Request:
    backends: tuple[str, ...] = ()  # empty: every backend each recipe declares
    pythons: tuple[str, ...] = ()  # empty: the default Python; ("all",): every supported one
    build_types: tuple[str, ...] = ()  # empty: each recipe's first build type
    options: tuple[OptionOverride, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # the environment variables the plan may use
    skip_unsupported: bool = False
    memory_budget: int = 0  # bytes; 0: derived from the host
    jobs: int = 0  # 0: the host's CPUs
    run_tests: bool = True
    conan_remote: str = ""  # a configured Conan remote for `provider: remote` requirements
    compiler_cache: str = ""  # none | ccache | sccache; "": the recipe's default, else none
    cache_remote: str = ""  # remote storage for the compiler cache, e.g. redis://127.0.0.1:6379
    remote: str = ""  # a Conan remote holding published variants (download, not build)


@dataclass(frozen=True)
class State:
    """What already exists in the workspace (read by :mod:`builder.state`)."""

    source_digests: tuple[tuple[str, str], ...] = ()
    file_digests: tuple[tuple[str, str], ...] = ()
    installed: frozenset[str] = frozenset()  # variant keys with a complete install
    kernel_artifacts: frozenset[str] = frozenset()  # artifact keys in the kernel cache
    kernel_installs: tuple[tuple[str, str], ...] = ()  # (install folder, variant key)
    fetched: frozenset[str] = frozenset()  # keys of complete git/url source folders
    #: source root → its translation units (path relative to the root, includes seen)
    compile_units: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()
    wheels: frozenset[str] = frozenset()  # wheel files already built
    #: absolute source file → (measured peak bytes, seconds, memory curve) from the history
    measured: tuple[tuple[str, int, float, tuple[float, ...]], ...] = ()
    remote_keys: frozenset[str] = frozenset()  # variant keys published on Request.remote
    notes: tuple[str, ...] = field(default=())


def memory_budget(host: HostFacts, request: Request) -> int:
    if request.memory_budget:
        return request.memory_budget
    usable = host.memory.usable()
    return max(usable - max(MIN_RESERVE, usable * 3 // 100), 0)


def model_digest(recipe: Recipe) -> str:
    """What in a recipe changes its builds: the model without its description, file
    name and positions — so editing a comment or moving the file rebuilds nothing."""
    from dataclasses import replace as _replace
    from pathlib import Path

    # source folders are covered by their content digest, not by where they are
    sources = tuple(_replace(src, location="" if src.kind == "path" else src.location,
                             patches=()) for src in recipe.sources)
    core = _replace(recipe, description="", digest="", display="", positions=None,
                    file=Path("/"), sources=sources)
    # named backends' kind and target are kept out of the repr (so that recipes without
    # them keep their keys) and added here
    named = [(b.name, b.kind, b.target) for b in recipe.backends if b.kind or b.target]
    return hashlib.sha256((repr(core) + (repr(named) if named else "")).encode()).hexdigest()




def _no_value(recipe: Recipe, name: str) -> RecipeError:
    """A known ``${name}`` used where it has no value (``${kernel}`` in a define,
    ``${python}`` in a recipe without Python, anything but options in a tool version)."""
    line = col = 0
    lines = recipe.positions.lines if recipe.positions else []
    for i, text in enumerate(lines, 1):
        if "${" + name + "}" in text:
            line, col = i, text.index("${" + name + "}") + 1
            break
    return RecipeError([Diagnostic(
        Location(recipe.display, line, col), "", f"${{{name}}} has no value here",
        "see the README's substitution table for where each variable may be used "
        "(${kernel}, ${arch} and ${ext} only in install.layout; ${python} only in recipes "
        "with python.versions; only ${options.NAME} in tool versions)",
        lines[line - 1] if line else "")])


def _tool_problem(tool: str, spec: str, host: HostFacts) -> tuple[str, str] | None:
    info = host.tool(tool)
    # cmake, ninja and conan are on PyPI: pip puts them next to the interpreter, on PATH in
    # an activated virtual environment
    pip = f"python3 -m pip install '{tool}{spec}'" if tool in ("cmake", "ninja", "conan") \
        else ""
    if info is None:
        fixes = {"cxx": "apt-get install g++", "cc": "apt-get install gcc",
                 "ccache": "apt-get install ccache"}
        return f"{tool} not found", pip or fixes.get(tool, f"install {tool} and put it on PATH")
    if spec:
        try:
            ok = Version(info.version) in SpecifierSet(spec)
        except InvalidVersion:
            ok = True  # an unparsable version is not held against the tool
        except InvalidSpecifier:  # e.g. from an option value: `${options.cuda_version}`
            return (f"{tool}: '{spec}' is not a valid version specifier",
                    "give the option a version such as 12.4, or a specifier such as >=12.0")
        if not ok:
            return (f"{tool} {info.version} ({info.path}) does not satisfy {spec}",
                    pip or f"install a {tool} matching {spec}")
    return None


def _python_problem(recipe: Recipe, py: str, host: HostFacts) -> tuple[str, str] | None:
    """What Python {py} lacks of the recipe's requires.python, all of it at once, with one
    fix that installs exactly that."""
    info = host.python(py)
    if info is None:
        return (f"no Python {py} interpreter found",
                f"install it (e.g. `pyenv install {py}`) or drop {py} from the request")
    missing: list[str] = []
    wrong: list[str] = []
    to_install: list[str] = []
    torch = ""
    where = f"for Python {py} ({info.path})"
    for text in recipe.requires.python:
        req = Requirement(text)
        have = info.package(req.name)
        if have is None:
            missing.append(req.name)
        else:
            local = Version(have).local or ""
            if req.name.lower() == "torch" and local.startswith("cu") and \
                    host.tool("nvcc") is None:
                wrong.append(f"torch {have} {where} is a CUDA build, and this host has no CUDA "
                             f"toolkit for its CMake config to find")
                torch = f"torch=={Version(have).public}+cpu"  # satisfied by the CUDA one
                continue
            elif not req.specifier.contains(Version(have).public, prereleases=True):
                wrong.append(f"{req.name} {have} {where} does not satisfy '{text}'")
            else:
                continue
        if req.name.lower() == "torch":
            torch = text
        else:
            to_install.append(text)
    if not missing and not wrong:
        return None
    verb = "is" if len(missing) == 1 else "are"
    reason = "; ".join([*([f"{', '.join(missing)} {verb} not installed {where}"]
                          if missing else []), *wrong])
    fixes = [f"{info.path} -m pip install {' '.join(shlex.quote(t) for t in to_install)}"] \
        if to_install else []
    if torch:  # PyPI's Linux torch wheel is the CUDA build (several GB): PyTorch's CPU index
        fixes.append(f"{info.path} -m pip install {shlex.quote(torch)} --index-url "
                     "https://download.pytorch.org/whl/cpu")
    fix = " && ".join(fixes)
    others = [p for p in host.pythons if p.version != py and all(
        p.package(r.name) and r.specifier.contains(Version(p.package(r.name) or "0").public,
                                                   prereleases=True)
        for r in map(Requirement, recipe.requires.python))]
    if others:  # interpreters here that have everything: the fix that needs no download
        fix = " or ".join(f"--python {p.version} ({p.path} has them)" for p in others) + \
            f"; or {fix}"
    return reason, fix


def _pythons_for(recipe: Recipe, request: Request, host: HostFacts) -> list[str]:
    supported = list(recipe.python.versions)
    if request.pythons == ("all",):
        return supported or [host.default_python]
    if request.pythons:
        return [p for p in request.pythons if not supported or p in supported]
    if not supported or host.default_python in supported:
        return [host.default_python]
    available = [p for p in supported if host.python(p)]
    return [available[-1] if available else supported[-1]]


def _arch_diag(recipe: Recipe, backend: str, arch: str, message: str, fix: str) -> Diagnostic:
    spec = recipe.backend(backend)
    idx = spec.archs.index(arch) if spec else 0
    path = ("backends", backend, "archs", idx)
    assert recipe.positions is not None
    loc = recipe.positions.location(path)
    return Diagnostic(loc, f"backends.{backend}.archs[{idx}]", message, fix + "; or pass "
                      "--skip-unsupported to leave it out", recipe.positions.line_text(loc.line))


def resolve(roots: Sequence[Recipe], recipes: RecipeSet, request: Request, host: HostFacts,
            state: State, ws: Workspace) -> BuildPlan:
    budget = memory_budget(host, request)
    jobs = request.jobs or host.cpus
    notes: list[str] = []
    arch_errors: list[Diagnostic] = []
    known = list(dict.fromkeys([*registry.names(), *(n for r in recipes.recipes
                                                     for n in r.backend_names)]))
    for b in request.backends:
        if b not in known:
            raise UsageError(f"unknown backend '{b}' (backends: {', '.join(known)})")
    variants: dict[str, Variant] = {}
    steps = []
    memo: dict[tuple[str, str, str, str], Variant] = {}
    sources = dict(state.source_digests)
    units_by_root = dict(state.compile_units)

    def variant_for(recipe: Recipe, backend: str, build_type: str, python: str) -> Variant:
        memo_key = (recipe.name, backend, build_type, python)
        if memo_key in memo:
            return memo[memo_key]
        spec = recipe.backend(backend)
        assert spec is not None
        be = registry.get(spec.backend_kind)
        problems: list[tuple[str, str]] = []
        vnotes: list[str] = []
        options = resolve_options(recipe, request, vnotes)
        platform, off_target = targets.for_host(spec.target, host, backend) if spec.target \
            else (None, None)
        if off_target:
            problems.append((off_target.reason, off_target.fix))
        elif platform and platform.cross and be.tool:
            problems.append((f"{backend}: cross-compiling the {be.name} backend for "
                             f"{spec.target} is not supported",
                             f"build it on a {spec.target} host"))
        multiarch = platform.multiarch if platform else ""
        unavailable = be.host_unavailable(host)
        if unavailable:
            problems.append((unavailable.reason, unavailable.fix))
        if spec.os and host.os not in spec.os:
            problems.append((f"{backend}: this recipe builds {backend} on "
                             f"{', '.join(spec.os)} only", f"use a {spec.os[0]} host"))
        hard = bool(problems)  # not buildable on this host: what else is missing is noise
        implied = [("cmake", ""), ("ninja", ""), ("conan", ""), ("cxx", "")] \
            if recipe.build_system == "cmake" else []
        for tool, written in [*implied, *spec.tools]:
            if be.tool == tool and unavailable:
                continue
            tspec = written
            if "${" in tspec:  # e.g. ${options.cuda_version}: a bare version pins it exactly
                try:
                    tspec = substitute(tspec, {f"options.{k}": option_text(v)
                                               for k, v in options.items()}).strip()
                except SubstitutionError as exc:
                    raise _no_value(recipe, exc.name) from None
                if tspec and tspec[0].isdigit():
                    tspec = f"=={tspec}.*"
            p = _tool_problem(tool, tspec, host)
            if p and p not in problems:
                problems.append(p)
        archs: list[str] = []
        skipped_archs: list[tuple[str, str, str]] = []
        wanted_archs = list(spec.archs)
        if spec.archs_option and options.get(spec.archs_option):
            override = options[spec.archs_option]
            assert isinstance(override, tuple)
            wanted_archs = [be.normalize_arch(a) for a in override]
            foreign = [a for a in wanted_archs if not be.arch_belongs(a)]
            if foreign:
                raise UsageError(f"{recipe.name}: option {spec.archs_option}: '{foreign[0]}' is "
                                 f"not a {backend} architecture")
        for arch in wanted_archs:
            bad = None if unavailable else be.arch_unavailable(arch, host)
            if bad is None:
                archs.append(arch)
            elif request.skip_unsupported:
                skipped_archs.append((arch, bad.reason, bad.fix))
            elif arch in spec.archs:
                arch_errors.append(_arch_diag(recipe, backend, arch, bad.reason, bad.fix))
            else:
                raise UnsupportedError([Diagnostic(
                    Location(f"option {spec.archs_option}"), "", bad.reason,
                    bad.fix + "; or pass --skip-unsupported")])
        if skipped_archs:  # said by plan and build (a CMake build would just lack them)
            vnotes.extend(f"{recipe.name} {backend}: left out by --skip-unsupported: {why} "
                          f"(fix: {fx})" for _, why, fx in skipped_archs)
        compiler_cache = request.compiler_cache or recipe.compiler_cache or "none"
        if compiler_cache != "none" and recipe.build_system == "cmake":
            cc = _tool_problem(compiler_cache, "", host)
            if cc:
                problems.append((f"compiler cache {compiler_cache}: {cc[0]}",
                                 f"apt-get install {compiler_cache}, or pass "
                                 "--compiler-cache none"))
        cxx = host.tool("cxx")
        from_system = [c.name for c in recipe.requires.conan if c.provider == "system"]
        if cxx is not None and cxx.static_runtime and recipe.build_system == "cmake" and \
                from_system:
            problems.append((
                f"{cxx.path} has no shared libstdc++: it links a private copy into each shared "
                f"library, while the system packages' C++ libraries ({', '.join(from_system)}) "
                "use the system's libstdc++.so; two copies in one process crash (iostreams)",
                "build with the distribution's compiler, e.g. CXX=/usr/bin/g++ CC=/usr/bin/gcc"))
        active_system = [sreq for sreq in recipe.requires.system if not sreq.when or
                         options.get(sreq.when[len("${options."):-1]) is True]
        wanted_system = [p for sreq in active_system for p in sreq.packages]
        system_refs = [c for c in recipe.requires.conan if c.provider == "system"]
        if platform and platform.cross and (system_refs or wanted_system) and not multiarch:
            problems.append((f"{backend}: this host has no system packages for "
                             f"{spec.target}", "use `provider: remote` for the Conan "
                             f"requirements, or build on a {spec.target} host"))
        elif system_refs or wanted_system:
            # every missing package (the target architecture's when cross compiling) named
            # in one problem whose fix installs all of them
            whys = [sreq.why for sreq in active_system if sreq.why and missing_system(
                [qualified(p, multiarch) for p in sreq.packages], host)]
            xp = cross_problem(system_refs, wanted_system, host, multiarch,
                               spec.target if platform and platform.cross else "", whys)
            if xp:
                problems.append(xp)
        for creq in recipe.requires.conan:
            if creq.provider == "system":
                entry = system_table().get(creq.name)
                if entry and missing_system(packages_for(entry, multiarch), host):
                    continue  # named above
                cp = conan_problem(creq, host, multiarch)
            else:
                cp = None if request.conan_remote else (
                    f"{creq.ref} comes from a Conan remote and none was given",
                    "pass --conan-remote NAME (a remote configured in the project's Conan "
                    "home)")
            if cp:
                problems.append(cp)
        if recipe.enabled_by and options.get(recipe.enabled_by) is False:
            problems.insert(0, (f"disabled: option {recipe.enabled_by} is false",
                                f"-o {recipe.name}:{recipe.enabled_by}=true to build it"))
            hard = True
        wanted = _pythons_for(recipe, request, host)
        if not wanted and request.pythons and request.pythons != ("all",):
            problems.append((f"Python {', '.join(request.pythons)} is not among the versions "
                             f"{recipe.name} supports ({', '.join(recipe.python.versions)})",
                             "ask for a supported version with --python"))
        # a Python-independent build (abi: none) uses the default interpreter when the recipe
        # supports it, so that `plan --all` and `plan NAME` agree on its variant
        py_for_build = python or ((host.default_python if host.default_python in wanted else
                                   (wanted or [host.default_python])[0])
                                  if recipe.python.versions or recipe.requires.python else "")
        if py_for_build and (recipe.requires.python or python):
            p = _python_problem(recipe, py_for_build, host)
            if p:
                problems.append(p)
        deps: list[Variant] = []
        for req in recipe.requires.recipes:
            dep = recipes.by_name[req.name]
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
                dep_py = python or _pythons_for(dep, replace(request, pythons=()), host)[0]
            dv = variant_for(dep, dep_backend, dep_bt, dep_py)
            deps.append(dv)
            if dv.status == SKIP:
                problems.append((f"requires {dep.name}, which is skipped: {dv.reason}", dv.fix))
        file_digests = dict(state.file_digests)
        src_digest = [sources.get(s.location, "") or s.rev or s.sha256 for s in
                      recipe.sources] + [file_digests.get(p, "") for s in recipe.sources
                                         for p in s.patches]
        tools = {t: (host.tool(t).version if host.tool(t) else "")  # type: ignore[union-attr]
                 for t in ("cmake", "cxx", "conan", *([be.tool] if be.tool else []))}
        tools.update(platform.versions if platform else ())  # the cross compilers
        py_info = host.python(py_for_build) if py_for_build else None
        conan_pins = [(c.ref, c.provider, dict(host.system_packages).get(packages_for(
            {"packages": [system_table().get(c.name, {}).get("version_of", "")],
             "build_packages": system_table().get(c.name, {}).get("build_packages", ())},
            multiarch)[0], "")) for c in recipe.requires.conan]
        key = digest(FORMAT, render.templates_digest(), conan_pins, recipe.name, recipe.version,
                   model_digest(recipe), src_digest, backend,
                   build_type, archs, sorted((k, option_text(v)) for k, v in options.items()),
                   python and (py_info.full if py_info else python), tools,
                   [d.key for d in deps])
        vdir = f"{backend}-{build_type}" + (f"-py{python}" if python else "") + f"-{key[:12]}"
        vid = f"{recipe.name}/{vdir}"
        status, reason, fix = BUILD, "", ""
        if problems:
            # everything that is missing at once (one fix line for all of it), unless the
            # first problem rules the variant out on this host whatever else is installed
            shown = problems[:1] if hard else problems
            status = SKIP
            reason = "; ".join(dict.fromkeys(p[0] for p in shown))
            fix = "; ".join(dict.fromkeys(p[1] for p in shown if p[1]))
        elif recipe.build_system == "cmake" and key in state.installed:
            status, reason = CACHED, f"up to date: {ws.install_dir(recipe.name, vdir)}"
        variant = Variant(
            id=vid, recipe=recipe.name, version=recipe.version, backend=backend,
            build_type=build_type, python=python, archs=tuple(archs),
            options=tuple((k, option_text(v)) for k, v in options.items()), key=key,
            prefix=str(ws.install_dir(recipe.name, vdir)), status=status, reason=reason,
            fix=fix, deps=tuple(d.id for d in deps), recipe_file=recipe.display,
            notes=tuple(vnotes),
            pins=tuple(sorted({
                "source": ",".join(src_digest),
                **{f"toolchain.{t}": v for t, v in tools.items()},
                **{f"conan.{ref}": f"{prov} {ver}".strip() for ref, prov, ver in conan_pins},
                **({"python": py_info.full} if python and py_info else {}),
            }.items())))
        memo[memo_key] = variant
        test_pythons = tuple(_pythons_for(recipe, request, host)) if not python else (python,)
        ctx = VariantContext(recipe=recipe, variant=variant, host=host, ws=ws, jobs=jobs,
                             options=options, python=py_info, deps=tuple(
                                 (d, recipes.by_name[d.recipe]) for d in deps),
                             file_digests=file_digests,
                             kernel_artifacts=state.kernel_artifacts, fetched=state.fetched,
                             budget=budget, units=units_by_root, wheels=state.wheels,
                             measured={f: (p, t, c) for f, p, t, c in state.measured},
                             kernel_installs=dict(state.kernel_installs),
                             skipped_archs=tuple(skipped_archs), env=dict(request.env),
                             run_tests=request.run_tests, conan_remote=request.conan_remote,
                             compiler_cache=compiler_cache,
                             cache_remote=request.cache_remote,
                             test_pythons=test_pythons, platform=platform,
                             test_python_problems=tuple(
                                 (p, *problem) for p in test_pythons if p != py_for_build
                                 and recipe.requires.python
                                 for problem in [_python_problem(recipe, p, host)] if problem))
        try:
            new_steps = kernel_steps(ctx) if recipe.build_system == "kernels" \
                else cmake_steps(ctx)
        except SubstitutionError as exc:
            raise _no_value(recipe, exc.name) from None
        if recipe.build_system == "kernels" and status == BUILD and all(
                s.status != BUILD for s in new_steps):
            variant = replace(variant, status=CACHED)
            memo[memo_key] = variant
        elif status == BUILD and request.remote and key in state.remote_keys:
            variant = replace(variant, status=DOWNLOAD,
                              reason=f"published on remote {request.remote}; downloaded, "
                                     f"not built (its tests ran where it was built)")
            memo[memo_key] = variant
            new_steps = download_steps(variant, new_steps, request.remote,
                                       host_tool(host, "conan", "conan"), ws,
                                       cmake=recipe.build_system == "cmake")
        variants[vid] = variant
        steps.extend(new_steps)
        notes.extend(n for n in vnotes if n not in notes)
        return variant

    for recipe in roots:
        backends = [b for b in (request.backends or recipe.backend_names)
                    if recipe.backend(b) is not None]
        if request.backends and not backends:
            raise UsageError(f"recipe '{recipe.name}' has no backend "
                             f"{' or '.join(request.backends)} (it declares "
                             f"{', '.join(recipe.backend_names)})")
        build_types = [t for t in (request.build_types or recipe.build_types[:1])
                       if t in recipe.build_types] or list(recipe.build_types[:1])
        pythons = [p for p in _pythons_for(recipe, request, host)] \
            if recipe.python.abi == "cpython" else [""]
        for b in backends:
            for bt in build_types:
                for py in pythons:
                    variant_for(recipe, b, bt, py)
    if arch_errors:
        raise UnsupportedError(arch_errors)
    ordered = _ordered(list(variants.values()))
    order_index = {v.id: i for i, v in enumerate(ordered)}
    steps.sort(key=lambda s: order_index[s.variant])
    # the budget says where it comes from; the host facts say where they come from
    mem_desc = f"{budget / 2**30:.1f} GiB budget (" + (
        "--memory-budget" if request.memory_budget else
        f"{host.memory.usable() / 2**30:.1f} GiB available less a reserve") + ")"
    return BuildPlan(variants=tuple(ordered), steps=tuple(steps),
                     host=f"{host.os}-{host.arch}, {host.cpus} CPUs ({host.source}), "
                          f"{mem_desc}",
                     cpus=host.cpus, memory_budget=budget, jobs=jobs,
                     notes=tuple(notes + list(state.notes)))


def _ordered(variants: list[Variant]) -> list[Variant]:
    """Dependencies first; ties keep the order of discovery (deterministic)."""
    by_id = {v.id: v for v in variants}
    out: list[Variant] = []
    seen: set[str] = set()

    def visit(v: Variant) -> None:
        if v.id in seen:
            return
        seen.add(v.id)
        for d in v.deps:
            visit(by_id[d])
        out.append(v)

    for v in variants:
        visit(v)
    return out


def env_snapshot(environ: Mapping[str, str], recipes: Sequence[Recipe]) -> tuple[
        tuple[str, str], ...]:
    """The environment variables a plan may depend on (kept small and explicit)."""
    names = {"HOME"}
    for r in recipes:
        names.update(n for o in r.options for n in (o.env, o.legacy_env) if n)
        texts = [r.install.root, r.install.layout, *(v for _, v in r.defines)]
        for t in r.tests:
            texts.extend(t.run)
            texts.extend(v for _, v in t.env)
        for text in texts:
            names.update(n[4:] for n in variables(text) if n.startswith("env."))
    return tuple(sorted((n, environ[n]) for n in names if n in environ))


