"""Can a variant be built on this host, and if not, why and how to fix it.

Each check returns ``(problem, fix)`` pairs; the resolver keeps them in the order they
are found, and the first one becomes the variant's skip reason.  Nothing here looks at
the machine: every fact comes from :class:`~builder.host.facts.HostFacts`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from builder.backends import Backend
from builder.backends import platforms as targets
from builder.errors import Diagnostic, Location, RecipeError, UnsupportedError, UsageError
from builder.host.facts import HostFacts
from builder.recipe.model import BackendSpec, OptionValue, Recipe, option_text
from builder.recipe.subst import SubstitutionError, substitute
from builder.resolve.request import Request
from builder.resolve.system import (
    conan_problem,
    cross_problem,
    missing_system,
    packages_for,
    qualified,
)
from builder.resolve.system import table as system_table

__all__ = ["ArchChoice", "Problem", "arch_choice", "no_value", "platform_problems",
           "python_problem", "pythons_for", "requirement_problems", "tool_problem",
           "tool_problems", "torch_backend_problem"]

#: (what is wrong, what to do about it)
Problem = tuple[str, str]

#: the tools every CMake recipe needs, whatever it declares
CMAKE_TOOLS = (("cmake", ""), ("ninja", ""), ("conan", ""), ("cxx", ""))
XMAKE_TOOLS = (("xmake", ""), ("cxx", ""))
TOOL_FIXES = {"cmake": "pip install cmake", "ninja": "pip install ninja",
              "conan": "pip install conan", "cxx": "apt-get install g++",
              "cc": "apt-get install gcc", "ccache": "apt-get install ccache",
              "xmake": "pip install xmake-wheel==3.0.0 (xmake's PyPI package)"}


def no_value(recipe: Recipe, name: str) -> RecipeError:
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
        "see docs/recipes.md (Substitutions) for where each variable may be used "
        "(${kernel}, ${arch} and ${ext} only in install.layout; ${python} only in recipes "
        "with python.versions; only ${options.NAME} in tool versions)",
        lines[line - 1] if line else "")])


def tool_problem(tool: str, spec: str, host: HostFacts) -> Problem | None:
    info = host.tool(tool)
    # cmake, ninja and conan are on PyPI: pip puts them next to the interpreter, on PATH in
    # an activated virtual environment
    pip = f"python3 -m pip install '{tool}{spec}'" if tool in ("cmake", "ninja", "conan") \
        else ""
    if info is None:
        return f"{tool} not found", pip or TOOL_FIXES.get(tool,
                                                          f"install {tool} and put it on PATH")
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


def python_problem(recipe: Recipe, py: str, host: HostFacts) -> Problem | None:
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
            if req.specifier.contains(Version(have).public, prereleases=True):
                continue
            wrong.append(f"{req.name} {have} {where} does not satisfy '{text}'")
        if req.name.lower() == "torch":
            torch = text
        else:
            to_install.append(text)
    if not missing and not wrong:
        return None
    verb = "is" if len(missing) == 1 else "are"
    reason = "; ".join([*([f"{', '.join(missing)} {verb} not installed {where}"]
                          if missing else []), *wrong])
    return reason, _python_fix(recipe, py, host, info.path, to_install, torch)


def _python_fix(recipe: Recipe, py: str, host: HostFacts, exe: str, to_install: list[str],
                torch: str) -> str:
    """One fix line: pip for what is missing (torch from PyTorch's CPU index: PyPI's Linux
    wheel is the several-GB CUDA build), or an interpreter here that has it all."""
    fixes = [f"{exe} -m pip install {' '.join(shlex.quote(t) for t in to_install)}"] \
        if to_install else []
    if torch:
        fixes.append(f"{exe} -m pip install {shlex.quote(torch)} --index-url "
                     "https://download.pytorch.org/whl/cpu")
    fix = " && ".join(fixes)
    others = [p for p in host.pythons if p.version != py and all(
        p.package(r.name) and r.specifier.contains(Version(p.package(r.name) or "0").public,
                                                   prereleases=True)
        for r in map(Requirement, recipe.requires.python))]
    if others:  # interpreters here that have everything: the fix that needs no download
        fix = " or ".join(f"--python {p.version} ({p.path} has them)" for p in others) + \
            f"; or {fix}"
    return fix


def torch_backend_problem(recipe: Recipe, be: Backend, py: str, host: HostFacts
                          ) -> Problem | None:
    """A python build of a GPU backend against a CPU-only torch (``2.13.0+cpu``): a
    CUDAExtension would compile for minutes and then fail to link (no libc10_cuda)."""
    info = host.python(py)
    if recipe.build_system != "python" or be.tool is None or info is None or not any(
            Requirement(t).name.lower() == "torch" for t in recipe.requires.python):
        return None
    have = info.package("torch") or ""
    if have and Version(have).local == "cpu":
        return (f"torch {have} for Python {py} ({info.path}) is a CPU-only build; the "
                f"{be.name} extension needs torch built for {be.name}",
                f"install a {be.name} build of torch into {info.path}, or build another "
                f"backend")
    return None


def pythons_for(recipe: Recipe, request: Request, host: HostFacts) -> list[str]:
    """The Python versions a recipe is built or tested for under this request."""
    supported = list(recipe.python.versions)
    if request.pythons == ("all",):
        return supported or [host.default_python]
    if request.pythons:
        return [p for p in request.pythons if not supported or p in supported]
    if not supported or host.default_python in supported:
        return [host.default_python]
    available = [p for p in supported if host.python(p)]
    return [available[-1] if available else supported[-1]]


def platform_problems(spec: BackendSpec, be: Backend, host: HostFacts
                      ) -> tuple[targets.Platform | None, list[Problem]]:
    """The backend's target platform and why this host cannot build for it (cross
    compilers, the backend's own toolchain, the recipe's ``os`` list)."""
    problems: list[Problem] = []
    backend = spec.name
    platform, off_target = targets.for_host(spec.target, host, backend) if spec.target \
        else (None, None)
    if off_target:
        problems.append((off_target.reason, off_target.fix))
    elif platform and platform.cross and be.tool:
        problems.append((f"{backend}: cross-compiling the {be.name} backend for "
                         f"{spec.target} is not supported", f"build it on a {spec.target} host"))
    unavailable = be.host_unavailable(host)
    if unavailable:
        problems.append((unavailable.reason, unavailable.fix))
    elif spec.compress_mode and be.compress_mode(spec.compress_mode, host) != \
            spec.compress_mode:
        tool = host.tool(be.tool) if be.tool else None
        problems.append((f"{backend}: compress_mode {spec.compress_mode} needs a toolchain "
                         f"with device-code compression modes ({be.tool} "
                         f"{tool.version if tool else '?'} has none)",
                         f"remove backends.{backend}.compress_mode, or use a newer {be.tool} "
                         f"(nvcc: CUDA 12.8 or later)"))
    if spec.os and host.os not in spec.os:
        problems.append((f"{backend}: this recipe builds {backend} on "
                         f"{', '.join(spec.os)} only", f"use a {spec.os[0]} host"))
    return platform, problems


def tool_problems(recipe: Recipe, spec: BackendSpec, be: Backend, host: HostFacts,
                  options: dict[str, OptionValue]) -> list[Problem]:
    """Missing or too old tools: the build system's and the ones the backend declares (a
    version may come from an option: ``${options.cuda_version}`` pins that version)."""
    problems: list[Problem] = []
    skip_own = be.host_unavailable(host) is not None  # already said by platform_problems
    implied = list(CMAKE_TOOLS) if recipe.build_system == "cmake" else \
        list(XMAKE_TOOLS) if recipe.build_system == "xmake" else []
    for tool, written in [*implied, *spec.tools]:
        if be.tool == tool and skip_own:
            continue
        tspec = written
        if "${" in tspec:
            try:
                tspec = substitute(tspec, {f"options.{k}": option_text(v)
                                           for k, v in options.items()}).strip()
            except SubstitutionError as exc:
                raise no_value(recipe, exc.name) from None
            if tspec and tspec[0].isdigit():
                tspec = f"=={tspec}.*"
        p = tool_problem(tool, tspec, host)
        if p and p not in problems:
            problems.append(p)
    return problems


@dataclass(frozen=True)
class ArchChoice:
    archs: tuple[str, ...]  # what will be built
    skipped: tuple[tuple[str, str, str], ...]  # (arch, reason, fix) left out on request
    errors: tuple[Diagnostic, ...]  # archs in the recipe this host cannot build


def _arch_diag(recipe: Recipe, backend: str, arch: str, message: str, fix: str) -> Diagnostic:
    spec = recipe.backend(backend)
    idx = spec.archs.index(arch) if spec else 0
    path = ("backends", backend, "archs", idx)
    assert recipe.positions is not None
    loc = recipe.positions.location(path)
    return Diagnostic(loc, f"backends.{backend}.archs[{idx}]", message, fix + "; or pass "
                      "--skip-unsupported to leave it out", recipe.positions.line_text(loc.line))


def arch_choice(recipe: Recipe, spec: BackendSpec, be: Backend, host: HostFacts,
                options: dict[str, OptionValue], request: Request) -> ArchChoice:
    """The archs to build: the recipe's (or the arch option's) minus what the installed
    toolchain cannot build — left out with ``--skip-unsupported``, an error otherwise."""
    backend = spec.name
    wanted = list(spec.archs)
    if spec.archs_option and options.get(spec.archs_option):
        override = options[spec.archs_option]
        assert isinstance(override, tuple)
        wanted = [be.normalize_arch(a) for a in override]
        foreign = [a for a in wanted if not be.arch_belongs(a)]
        if foreign:
            raise UsageError(f"{recipe.name}: option {spec.archs_option}: '{foreign[0]}' is "
                             f"not a {backend} architecture")
    unavailable = be.host_unavailable(host)
    archs: list[str] = []
    skipped: list[tuple[str, str, str]] = []
    errors: list[Diagnostic] = []
    for arch in wanted:
        bad = None if unavailable else be.arch_unavailable(arch, host)
        if bad is None:
            archs.append(arch)
        elif request.skip_unsupported:
            skipped.append((arch, bad.reason, bad.fix))
        elif arch in spec.archs:
            errors.append(_arch_diag(recipe, backend, arch, bad.reason, bad.fix))
        else:
            raise UnsupportedError([Diagnostic(
                Location(f"option {spec.archs_option}"), "", bad.reason,
                bad.fix + "; or pass --skip-unsupported")])
    return ArchChoice(tuple(archs), tuple(skipped), tuple(errors))


def _enabled(when: str, options: dict[str, OptionValue]) -> bool:
    """A ``when: ${options.NAME}`` condition (empty: always)."""
    return not when or options.get(when[len("${options."):-1]) is True


def requirement_problems(recipe: Recipe, spec: BackendSpec, host: HostFacts,
                         options: dict[str, OptionValue], request: Request,
                         platform: targets.Platform | None, compiler_cache: str
                         ) -> list[Problem]:
    """The compiler cache, the C++ runtime, Conan and distribution requirements."""
    problems: list[Problem] = []
    backend, multiarch = spec.name, (platform.multiarch if platform else "")
    if compiler_cache != "none" and recipe.build_system == "cmake":
        cc = tool_problem(compiler_cache, "", host)
        if cc:
            problems.append((f"compiler cache {compiler_cache}: {cc[0]}",
                             f"apt-get install {compiler_cache}, or pass --compiler-cache none"))
    cxx = host.tool("cxx")
    from_system = [c.name for c in recipe.requires.conan if c.provider == "system"]
    if cxx is not None and cxx.static_runtime and recipe.build_system == "cmake" and \
            from_system:
        problems.append((
            f"{cxx.path} has no shared libstdc++: it links a private copy into each shared "
            f"library, while the system packages' C++ libraries ({', '.join(from_system)}) "
            "use the system's libstdc++.so; two copies in one process crash (iostreams)",
            "build with the distribution's compiler, e.g. CXX=/usr/bin/g++ CC=/usr/bin/gcc"))
    active_system = [sreq for sreq in recipe.requires.system if _enabled(sreq.when, options)]
    wanted_system = [p for sreq in active_system for p in sreq.packages]
    system_refs = [c for c in recipe.requires.conan if c.provider == "system"]
    cross = bool(platform and platform.cross)
    if cross and (system_refs or wanted_system) and not multiarch:
        problems.append((f"{backend}: this host has no system packages for {spec.target}",
                         "use `provider: remote` for the Conan requirements, or build on a "
                         f"{spec.target} host"))
    elif system_refs or wanted_system:
        # every missing package (the target architecture's when cross compiling) named
        # in one problem whose fix installs all of them
        whys = [sreq.why for sreq in active_system if sreq.why and missing_system(
            [qualified(p, multiarch) for p in sreq.packages], host)]
        xp = cross_problem(system_refs, wanted_system, host, multiarch,
                           spec.target if cross else "", whys)
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
                "pass --conan-remote NAME (a remote configured in the project's Conan home)")
        if cp:
            problems.append(cp)
    return problems
