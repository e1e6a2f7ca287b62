"""The steps of a CMake recipe's variant (pure, like the resolver): render the Conan files
→ ``conan install`` → ``cmake`` configure → build (under the memory broker) → install
into a stage folder → tests → ``conan export-pkg`` (so that dependents find it in the
Conan cache) → publish the stage atomically → wheel."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

from builder import backends as registry
from builder.backends import Backend
from builder.memory.estimate import estimate, nvcc_shape
from builder.memory.forecast import simulate
from builder.plan.model import Step, Variant
from builder.plan.payloads import (
    CleanStage,
    CompileJobs,
    HeavyJob,
    Prediction,
    PublishInstall,
    RecordInputs,
    RenderFiles,
)
from builder.recipe.model import CMAKE_BUILD_TYPE, FlagSet
from builder.recipe.subst import substitute
from builder.resolve import keys, render
from builder.resolve.steps import (
    BUILD_TIMEOUT,
    StepCommon,
    VariantContext,
    collect_step,
    common_of,
    fetch_steps,
    memory_config,
    test_steps,
    tool,
    with_hash,
)
from builder.resolve.system import platform_ref
from builder.resolve.system import table as system_table
from builder.resolve.wheelsteps import wheel_steps
from builder.workspace.paths import Workspace

#: the forecast of a set of jobs, made once: the variants of one source folder (a backend,
#: build type or Python apart) often ask for the same one, and it is pure
_forecast = functools.lru_cache(maxsize=256)(simulate)

__all__ = ["cmake_steps", "compiler_cache_env", "conan_args", "conan_options", "cross_target",
           "install_meta", "memory_prediction", "record_inputs", "sccache_env", "switch"]


@dataclass(frozen=True)
class _ConanFiles:
    """The generated Conan files and how ``conan`` commands name the profiles."""

    files: dict[str, str]
    profile_args: tuple[str, ...]


def cmake_steps(ctx: VariantContext) -> list[Step]:
    r, v, ws = ctx.recipe, ctx.variant, ctx.ws
    be = registry.get(ctx.kind)
    spec = r.backend(v.backend)
    assert spec is not None
    bdir, stage = ws.build_dir(r.name, ctx.vdir), ws.stage_dir(r.name, ctx.vdir)
    vals = ctx.values()
    flags = ctx.flags()
    pch_file = bdir / "conan" / "builder_pch.cmake"
    use_pch = switch(r.memory.pch, vals) and bool(r.memory.pch_headers)
    defines = cmake_defines(ctx, be, flags, vals, pch_file if use_pch else None)
    cache_env = _launchers(ctx, be, defines)
    conan_files = _conan_files(ctx, be, flags, vals, bdir)
    if use_pch:
        conan_files.files[str(pch_file)] = render.pch_cmake(r.memory.pch_headers)
    fetch = fetch_steps(ctx)
    pre = tuple(f"{d.id}/publish" for d, _ in ctx.deps) + tuple(f.id for f in fetch)
    conan, cmake = tool(ctx.host, "conan", "conan"), tool(ctx.host, "cmake", "cmake")
    conan_env = (("CONAN_HOME", str(ws.conan_home)),)
    option_args = conan_args(v, [d for d, _ in ctx.deps])
    profile_args = conan_files.profile_args
    sid, common = v.id, common_of(v)
    remote = ("-r", ctx.conan_remote) if ctx.conan_remote and any(
        c.provider == "remote" for c in r.requires.conan) else ("-nr",)
    steps = [*fetch,
        Step(id=f"{sid}/render", kind="render", deps=pre,
             outputs=tuple(conan_files.files),
             payload=RenderFiles(tuple(sorted(conan_files.files.items()))), **common),
        Step(id=f"{sid}/conan-install", kind="conan-install",
             commands=((conan, "install", str(bdir / "conan"), "--output-folder",
                        str(bdir / "gen"), *profile_args, *option_args, *remote),),
             env=conan_env, cwd=str(bdir), deps=(f"{sid}/render",),
             outputs=(str(bdir / "gen" / "conan_toolchain.cmake"),), timeout=600, **common),
        _configure_step(ctx, cmake, vals, defines, stage, common),
        _build_step(ctx, cmake, vals, cache_env, str(bdir), common),
        Step(id=f"{sid}/stage", kind="stage",
             commands=((cmake, "--install", vals["build"], "--prefix", str(stage)),)
             if r.install.project_rules else (),
             cwd=str(bdir), deps=(f"{sid}/build",), outputs=(str(stage),),
             payload=CleanStage(str(stage)), timeout=600, **common),
    ]
    installed = f"{sid}/stage"
    if r.install.files:  # what the project's own install rules miss
        steps.append(collect_step(ctx, vals, stage, installed, common))
        installed = steps[-1].id
    tests, last = test_steps(ctx, installed, str(stage))
    steps.extend(tests)
    steps.append(Step(id=f"{sid}/export", kind="export",
                      commands=((conan, "export-pkg", str(bdir / "conan"), *profile_args,
                                 *option_args, "-c", f"user.builder:stage={stage}", "-nr"),),
                      env=conan_env, cwd=str(bdir), deps=(last,), timeout=600, **common))
    steps.append(Step(id=f"{sid}/publish", kind="publish", deps=(f"{sid}/export",),
                      outputs=(v.prefix,), inputs_hash=v.compile_key, **common,
                      payload=PublishInstall(stage=str(stage), prefix=v.prefix,
                                             meta=install_meta(ctx),
                                             record=record_inputs(ctx, vals))))
    steps.extend(wheel_steps(ctx, str(Path(v.prefix) / r.python.package), f"{sid}/publish",
                             native=True))
    return [with_hash(s, v.compile_key) for s in steps]


def record_inputs(ctx: VariantContext, vals: dict[str, str]) -> RecordInputs | None:
    """What the publish step needs to record the files the build read, for a variant
    whose compile key comes from that record (:func:`builder.resolve.keys.recorded`)."""
    r = ctx.recipe
    if not keys.recorded(r):
        return None
    ninja = ctx.host.tool("ninja")
    collected = tuple(src if Path(src).is_absolute() else str(Path(vals["source"]) / src)
                      for src in (substitute(f.src, vals) for f in r.install.files))
    return RecordInputs(config_key=ctx.variant.config_key,
                        ninja=ninja.path if ninja else "ninja", build=vals["build"],
                        owned=(str(ctx.ws.state),),
                        names=tuple((loc, ctx.name_digests.get(loc, "")) for loc in
                                    dict.fromkeys(s.location for s in r.sources)),
                        collected=collected,
                        own_key="" if ctx.own_key == ctx.variant.compile_key else ctx.own_key)


def _configure_step(ctx: VariantContext, cmake: str, vals: dict[str, str],
                    defines: dict[str, str], stage: Path, common: StepCommon) -> Step:
    """``cmake -G Ninja`` with Conan's toolchain, the build type, the stage as the install
    prefix and the recipe's defines.  A dependent's build folder outlives its
    dependencies' Conan packages (it is named by their identity, not their content: a
    dependency rebuilt to the same bytes leaves the dependent as it is), so the package
    folders CMake cached (``<Package>_DIR``) are forgotten: ``find_package`` finds the
    dependencies' packages of this build through Conan's toolchain again."""
    v = ctx.variant
    bdir = ctx.ws.build_dir(ctx.recipe.name, ctx.vdir)
    forget = ("-U", "*_DIR") if ctx.deps else ()
    return Step(id=f"{v.id}/configure", kind="configure",
                commands=((cmake, *forget, "-S", vals["source"], "-B", vals["build"],
                           "-G", "Ninja",
                           f"-DCMAKE_TOOLCHAIN_FILE={bdir / 'gen' / 'conan_toolchain.cmake'}",
                           f"-DCMAKE_BUILD_TYPE={CMAKE_BUILD_TYPE[v.build_type]}",
                           f"-DCMAKE_INSTALL_PREFIX={stage}", *_make_program(ctx),
                           *(f"-D{k}={val}" for k, val in defines.items())),),
                cwd=str(bdir), deps=(f"{v.id}/conan-install",), timeout=1800, **common)


def _make_program(ctx: VariantContext) -> tuple[str, ...]:
    """The ninja builder found (next to its interpreter first, like every tool): CMake
    would look on PATH only, where a virtual environment's ninja may not be."""
    ninja = ctx.host.tool("ninja")
    return (f"-DCMAKE_MAKE_PROGRAM={ninja.path}",) if ninja else ()


def cmake_defines(ctx: VariantContext, be: Backend, flags: FlagSet, vals: dict[str, str],
                  pch_file: Path | None) -> dict[str, str]:
    """``-D`` values of the configure step, in a stable order: the backend's (archs),
    the target Python's, the options', the recipe's, unity/PCH, device-code flags."""
    r, v = ctx.recipe, ctx.variant
    spec = r.backend(v.backend)
    assert spec is not None
    defines: dict[str, str] = dict(be.cmake_defines(v.archs))
    if ctx.python and (r.python.versions or r.requires.python):
        defines.update(_python_defines(ctx))
    for o in r.options:
        if o.cmake:
            defines[o.cmake] = vals[f"options.{o.name}"]
    for k, val in (*r.defines, *spec.defines):
        defines[k] = substitute(val, vals)
    if switch(r.memory.unity, vals):
        defines["CMAKE_UNITY_BUILD"] = "ON"
        defines["CMAKE_UNITY_BUILD_BATCH_SIZE"] = str(r.memory.unity_batch_size)
    if pch_file is not None:
        defines["CMAKE_PROJECT_INCLUDE"] = str(pch_file)
    for other in registry.backends():  # device-code flags, for each language CMake knows
        lang = other.flags_lang
        if lang and other.cmake_language and flags.get(lang):
            defines[f"CMAKE_{other.cmake_language}_FLAGS"] = " ".join(
                substitute(x, vals) for x in flags.get(lang))
    return defines


def _python_defines(ctx: VariantContext) -> dict[str, str]:
    """The target interpreter, and the CMake config files its required packages ship
    (torch, pybind11) — never whatever python3 is on PATH."""
    assert ctx.python is not None
    r = ctx.recipe
    defines = {"Python_EXECUTABLE": ctx.python.path, "Python3_EXECUTABLE": ctx.python.path}
    wanted = {Requirement(t).name.lower() for t in r.requires.python}
    prefixes = [where for name, where in ctx.python.cmake_prefixes if name in wanted]
    if prefixes:
        defines["CMAKE_PREFIX_PATH"] = ";".join(prefixes)
    triplet = ctx.platform.toolchain.triplet if ctx.cross and ctx.platform and \
        ctx.platform.toolchain else ""
    if r.python.abi == "abi3":  # the project defines Py_LIMITED_API with it
        major, minor = r.python.abi3_floor.split(".")
        defines["BUILDER_PY_LIMITED_API"] = f"0x{int(major):02X}{int(minor):02X}0000"
    if triplet:  # extension modules named for the target's interpreter, not this one
        cp = ctx.python.version.replace(".", "")
        defines["PYTHON_MODULE_EXTENSION"] = f".cpython-{cp}-{triplet}.so"
    return defines


def _launchers(ctx: VariantContext, be: Backend, defines: dict[str, str]
               ) -> list[tuple[str, str]]:
    """Every compile and link goes through the memory launcher, which asks the build's broker
    (chained with a compiler cache: the memory launcher admits, then runs ccache/sccache).
    Returns the compiler cache's environment."""
    host = ctx.host
    chain = [host.builder_python or "python3", "-m", "builder.memory.launcher"]
    cache_env: list[tuple[str, str]] = []
    if ctx.compiler_cache != "none":
        chain.append(tool(host, ctx.compiler_cache, ctx.compiler_cache))
        cache_env = compiler_cache_env(ctx)
    launcher = ";".join(chain)
    for lang in ("C", "CXX", *([be.cmake_language] if be.cmake_language else [])):
        defines.setdefault(f"CMAKE_{lang}_COMPILER_LAUNCHER", launcher)
    # links are admitted too (CMake implements linker launchers for C and C++ only)
    for lang in ("C", "CXX"):
        defines.setdefault(f"CMAKE_{lang}_LINKER_LAUNCHER", ";".join([*chain[:3], "--link"]))
    return cache_env


def _conan_files(ctx: VariantContext, be: Backend, flags: FlagSet, vals: dict[str, str],
                 bdir: Path) -> _ConanFiles:
    """The conanfile and the profile(s): the host's (or the cross target's) and, for a
    cross build, this machine's (its tools run here)."""
    r, v, host = ctx.recipe, ctx.variant, ctx.host

    def sub(xs: tuple[str, ...]) -> list[str]:
        return [substitute(x, vals) for x in xs]

    compilers = {"c": tool(host, "cc", "cc"), "cpp": tool(host, "cxx", "c++")}
    build_compilers = dict(compilers)
    if be.tool and be.conan_compiler:
        compilers[be.conan_compiler] = tool(host, be.tool, be.tool)
    cross = cross_target(ctx)
    if ctx.platform is not None and cross is not None:
        compilers.update(ctx.platform.compilers)
    system_refs = [c for c in r.requires.conan if c.provider == "system"]
    multiarch = ctx.platform.multiarch if ctx.platform is not None else ""
    profile = str(bdir / "conan" / "profile")
    files = {
        str(bdir / "conan" / "conanfile.py"): render.conanfile(
            name=r.name, version=r.version, options=[k for k, _ in conan_options(v)],
            requires=[f"{d.recipe}/{d.version}" for d, _ in ctx.deps] + [
                c.ref for c in r.requires.conan]),
        profile: render.profile(
            host=host, build_type=v.build_type, jobs=ctx.jobs, cflags=sub(flags.c),
            cxxflags=sub(flags.cxx), ldflags=sub(flags.ld), compilers=compilers,
            cppstd=r.cxx_standard,
            platform_requires=[platform_ref(c, host, multiarch) for c in system_refs],
            platform_tool_requires=[platform_ref(c, host) for c in system_refs
                                    if system_table().get(c.name, {}).get("tool")],
            target=cross),
    }
    if cross is None:
        return _ConanFiles(files, ("-pr:a", profile))
    build_profile = str(bdir / "conan" / "profile-build")
    files[build_profile] = render.profile(
        host=host, build_type=v.build_type, jobs=ctx.jobs, cflags=[], cxxflags=[],
        ldflags=[], compilers=build_compilers)
    return _ConanFiles(files, ("-pr:h", profile, "-pr:b", build_profile))


def _build_step(ctx: VariantContext, cmake: str, vals: dict[str, str],
                cache_env: list[tuple[str, str]], bdir: str, common: StepCommon) -> Step:
    """``cmake --build`` under the memory broker (and the build's cgroup, where one can be
    made). Ninja may start more jobs than there are cores: launchers beyond the broker's
    admission wait cheaply, which lets the broker choose the largest job that fits."""
    r, host, sid = ctx.recipe, ctx.host, ctx.variant.id
    argv: tuple[str, ...] = (cmake, "--build", vals["build"], "--parallel", str(ctx.jobs * 2),
                             *(a for t in r.targets for a in ("--target", t)))
    if host.memory.cgroup_writable and ctx.budget:
        argv = (host.builder_python or "python3", "-m", "builder.memory.cgroup",
                "--limit", str(ctx.budget), "--name", ctx.vdir, "--", *argv)
    prediction = memory_prediction(ctx)
    return Step(id=f"{sid}/build", kind="build", commands=(argv,), env=tuple(cache_env),
                cwd=bdir, deps=(f"{sid}/configure",), memory=prediction.peak,
                timeout=BUILD_TIMEOUT, **common,
                payload=CompileJobs(prediction, memory_config(ctx, vals["source"], vals["build"])))


def conan_options(v: Variant) -> list[tuple[str, str]]:
    """The Conan options of a variant's package: backend, archs, the recipe's options
    and the compile key (so a package — here or on a remote — is found by its key, and
    a test edit finds the same one)."""
    return [("backend", v.backend), ("archs", ";".join(v.archs)), *v.options,
            ("builder_key", v.compile_key)]


def conan_args(v: Variant, deps: Sequence[Variant]) -> list[str]:
    """``-o`` arguments giving the values of this package's options (``&:``) and of
    the recipes it requires, pinned to the variants built before it."""
    args = [f"&:{k}={val}" for k, val in conan_options(v)]
    args += [f"{d.recipe}/*:{k}={val}" for d in deps for k, val in conan_options(d)]
    return [a for arg in args for a in ("-o", arg)]


def cross_target(ctx: VariantContext) -> render.CrossTarget | None:
    """The target platform for the host profile of a cross build (None: native)."""
    if ctx.platform is None or not ctx.platform.cross:
        return None
    t = ctx.platform.target
    cxx = next((exe for key, exe in (ctx.platform.toolchain.compilers
                                     if ctx.platform.toolchain else ()) if key == "cpp"), "cxx")
    return render.CrossTarget(name=t.name, os=t.os, conan_os=t.conan_os, arch=t.arch,
                              system_name=t.system_name, system_processor=t.machine,
                              cxx_tool=cxx, sysroot=ctx.platform.toolchain.sysroot
                              if ctx.platform.toolchain else "")


def compiler_cache_env(ctx: VariantContext) -> list[tuple[str, str]]:
    """Settings that make the compiler cache hit across build folders and workspaces:
    paths below the project root are hashed relative to it."""
    root = str(ctx.ws.root)
    if ctx.compiler_cache == "ccache":
        env = [("CCACHE_DIR", str(ctx.ws.compiler_cache_dir("ccache"))), ("CCACHE_BASEDIR", root),
               ("CCACHE_NOHASHDIR", "1"), ("CCACHE_COMPILERCHECK", "content")]
        if ctx.cache_remote:
            env.append(("CCACHE_REMOTE_STORAGE", ctx.cache_remote))
        return env
    return sccache_env(ctx.ws, ctx.cache_remote)


def sccache_env(ws: Workspace, cache_remote: str) -> list[tuple[str, str]]:
    """sccache's settings for a workspace (its server reads them when it starts: the
    build's own server of ``--dist`` is started with them too)."""
    env = [("SCCACHE_DIR", str(ws.compiler_cache_dir("sccache"))),
           ("SCCACHE_BASEDIRS", str(ws.root))]
    if cache_remote:
        env.append(("SCCACHE_REDIS_ENDPOINT", cache_remote))
    return env


def switch(value: bool | str, vals: dict[str, str]) -> bool:
    """A memory switch: a bool, or ``${options.NAME}`` naming a bool option."""
    if isinstance(value, bool):
        return value
    return substitute(value, vals) == "ON"


#: what CMake's unity build merges into one translation unit (C and C++ only)
_UNITY_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++")


def _units(ctx: VariantContext) -> list[tuple[str, tuple[str, ...]]]:
    """The translation units this variant compiles: those of its source folder (a patched
    copy has its original's), less the files only another backend compiles (a CPU build
    never compiles a ``.cu``)."""
    root = ctx.source_root()
    units = ctx.units.get(root)
    src = ctx.recipe.sources[0] if ctx.recipe.sources else None
    if units is None and src is not None and src.kind == "path":
        units = ctx.units.get(str(Path(src.location) / src.subdir) if src.subdir
                              else src.location)
    claimed = {sfx: be.name for be in registry.backends() for sfx in be.source_suffixes}
    return [(rel, inc) for rel, inc in units or ()
            if claimed.get(Path(rel).suffix, ctx.kind) == ctx.kind]


def _unity(jobs: list[tuple[str, int, float, float, tuple[float, ...]]], batch: int
           ) -> list[tuple[str, int, float, float, tuple[float, ...]]]:
    """The jobs of a unity build: C/C++ files merged ``batch`` at a time (as CMake does, in
    order), each batch as heavy as its heaviest file and as long as all of them."""
    merged = [j for j in jobs if j[0].endswith(_UNITY_SUFFIXES)]
    out = [j for j in jobs if not j[0].endswith(_UNITY_SUFFIXES)]
    for n, i in enumerate(range(0, len(merged), max(batch, 1))):
        part = merged[i:i + max(batch, 1)]
        cpu = sum(j[3] for j in part) if all(j[3] for j in part) else 0.0
        out.append((f"unity_{n}_cxx.cxx ({len(part)} files)", max(j[1] for j in part),
                    sum(j[2] for j in part), cpu, ()))
    return out


def memory_prediction(ctx: VariantContext) -> Prediction:
    """Estimate every translation unit and simulate the admission policy: predicted
    wall time, peak reserved memory, parallelism and the heaviest jobs."""
    root = ctx.source_root()
    jobs = []
    heavy = []
    # nvcc compiles each .cu for every arch, --threads of them at a time
    threads, _ = nvcc_shape(ctx.flags().cuda)
    archs = max(len(ctx.variant.archs), 1) if ctx.kind == "cuda" else 1
    for rel, includes in _units(ctx):
        # by recipe and path below the source root (memory.compileid); older histories
        # named files by their absolute path
        hist = ctx.measured.get(f"{ctx.recipe.name}:{rel}") or \
            ctx.measured.get(str(Path(root) / rel))
        est = estimate(rel, includes, recipe_default=ctx.recipe.memory.default,
                       recipe_globs=ctx.recipe.memory.per_file,
                       history_file={"peak": hist[0], "seconds": hist[1], "cpu": hist[1],
                                     "curve": hist[2]} if hist else None,
                       nvcc_threads=threads, nvcc_archs=archs)
        jobs.append((rel, est.reserve, est.seconds, est.cpu, est.curve))
        heavy.append((est.peak, rel, est.source))
    unity = ctx.recipe.memory.unity  # a bool, or ${options.NAME} (then substituted)
    if ctx.recipe.build_system == "cmake" and unity is not False and \
            switch(unity, ctx.values() if isinstance(unity, str) else {}):
        jobs = _unity(jobs, ctx.recipe.memory.unity_batch_size)
    pred = _forecast(tuple(jobs), ctx.budget, ctx.jobs)
    heavy.sort(reverse=True)
    lightest = HeavyJob(heavy[-1][1], heavy[-1][0], heavy[-1][2]) if heavy else None
    return Prediction(jobs=pred.jobs, wall=round(pred.wall, 1), peak=pred.peak,
                      parallelism=round(pred.parallelism, 2), budget=ctx.budget,
                      heaviest=tuple(HeavyJob(f, p, src) for p, f, src in heavy[:5]),
                      lightest=lightest)


def install_meta(ctx: VariantContext) -> dict[str, object]:
    """What the manifest records about how a variant was built."""
    v, host = ctx.variant, ctx.host
    be = registry.get(ctx.kind)
    cross = [exe for exe, _ in ctx.platform.versions] if ctx.platform else []
    tools = {name: f"{t.version} ({t.path})" for name in ("cmake", "ninja", "conan", "cxx",
                                                          *([be.tool] if be.tool else []),
                                                          *cross)
             if (t := host.tool(name))}
    return {"recipe": v.recipe, "version": v.version, "variant": v.id, "backend": v.backend,
            "variant_key": v.key,
            "build_type": v.build_type, "python": v.python, "archs": list(v.archs),
            "options": dict(v.options), "toolchains": tools,
            "python_interpreter": ctx.python.full if ctx.python else "",
            **({"target": ctx.platform.target.name, "cross": ctx.platform.cross}
               if ctx.platform else {})}


