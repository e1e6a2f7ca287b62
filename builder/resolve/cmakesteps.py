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
from builder.host.facts import HostFacts
from builder.plan.model import Step, Variant
from builder.plan.payloads import (
    CleanStage,
    CompileJobs,
    PublishInstall,
    RecordInputs,
    RenderFiles,
)
from builder.recipe.model import CMAKE_BUILD_TYPE, FlagSet
from builder.recipe.subst import substitute
from builder.resolve import keys, render
from builder.resolve.prediction import memory_prediction, switch
from builder.resolve.steps import (
    BUILD_TIMEOUT,
    StepCommon,
    VariantContext,
    collect_step,
    common_of,
    fetch_steps,
    memory_config,
    step_hash,
    test_steps,
    tool,
    with_hash,
)
from builder.resolve.system import platform_ref
from builder.resolve.system import table as system_table
from builder.resolve.wheelsteps import wheel_steps
from builder.workspace.paths import Workspace

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
    bdir, stage = ctx.build_folder, ctx.stage_folder  # as text: files named below them
    vals, flags = ctx.values(), ctx.flags()
    pch_file = f"{bdir}/conan/builder_pch.cmake"
    use_pch = switch(r.memory.pch, vals) and bool(r.memory.pch_headers)
    defines = cmake_defines(ctx, be, flags, vals, pch_file if use_pch else None)
    cache_env = _launchers(ctx, be, defines)
    conan_files = _conan_files(ctx, be, flags, vals, bdir)
    if use_pch:
        conan_files.files[pch_file] = render.pch_cmake(r.memory.pch_headers)
    fetch = fetch_steps(ctx)
    pre = tuple(f"{d.id}/publish" for d, _ in ctx.deps) + tuple(f.id for f in fetch)
    conan, cmake = tool(ctx.host, "conan", "conan"), tool(ctx.host, "cmake", "cmake")
    conan_env = (("CONAN_HOME", str(ws.conan_home)),)
    option_args = conan_args(v, [d for d, _ in ctx.deps])
    profile_args = conan_files.profile_args
    sid, common, key = v.id, common_of(v), v.compile_key
    remote = ("-r", ctx.conan_remote) if ctx.conan_remote and any(
        c.provider == "remote" for c in r.requires.conan) else ("-nr",)
    steps = [*fetch,
        Step(id=f"{sid}/render", kind="render", deps=pre,
             outputs=tuple(conan_files.files), inputs_hash=step_hash(key, "render"),
             payload=RenderFiles(tuple(sorted(conan_files.files.items()))), **common),
        Step(id=f"{sid}/conan-install", kind="conan-install",
             commands=((conan, "install", f"{bdir}/conan", "--output-folder",
                        f"{bdir}/gen", *profile_args, *option_args, *remote),),
             env=conan_env, cwd=bdir, deps=(f"{sid}/render",),
             outputs=(f"{bdir}/gen/conan_toolchain.cmake",), timeout=600,
             inputs_hash=step_hash(key, "conan-install"), **common),
        _configure_step(ctx, cmake, vals, defines, stage, common),
        _build_step(ctx, cmake, vals, cache_env, bdir, common),
        _stage_step(ctx, cmake, vals, common),
    ]
    installed = f"{sid}/stage"
    if r.install.files:  # what the project's own install rules miss
        steps.append(collect_step(ctx, vals, Path(stage), installed, common))
        installed = steps[-1].id
    tests, last = test_steps(ctx, installed, stage)
    steps.extend(tests)
    steps.append(Step(id=f"{sid}/export", kind="export",
                      commands=((conan, "export-pkg", f"{bdir}/conan", *profile_args,
                                 *option_args, "-c", f"user.builder:stage={stage}", "-nr"),),
                      env=conan_env, cwd=bdir, deps=(last,), timeout=600,
                      inputs_hash=step_hash(key, "export"), **common))
    steps.append(Step(id=f"{sid}/publish", kind="publish", deps=(f"{sid}/export",),
                      outputs=(v.prefix,), inputs_hash=key, **common,
                      payload=PublishInstall(stage=stage, prefix=v.prefix,
                                             meta=install_meta(ctx),
                                             record=record_inputs(ctx, vals))))
    if r.python.versions:  # a wheel of the recipe's Python package (wheel_steps)
        steps.extend(wheel_steps(ctx, str(Path(v.prefix) / r.python.package),
                                 f"{sid}/publish", native=True))
    return [with_hash(s, key) for s in steps]


def _stage_step(ctx: VariantContext, cmake: str, vals: dict[str, str],
                common: StepCommon) -> Step:
    """``cmake --install`` into the variant's stage folder, emptied first."""
    sid, stage = ctx.variant.id, ctx.stage_folder
    return Step(id=f"{sid}/stage", kind="stage",
                commands=((cmake, "--install", vals["build"], "--prefix", stage),)
                if ctx.recipe.install.project_rules else (),
                cwd=ctx.build_folder, deps=(f"{sid}/build",), outputs=(stage,),
                payload=CleanStage(stage), timeout=600,
                inputs_hash=step_hash(ctx.variant.compile_key, "stage"), **common)


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
                        own_key="" if ctx.own_key == ctx.variant.compile_key else ctx.own_key,
                        mapped=((str(copy), r.sources[0].location),)
                        if (copy := ctx.fetched_dir()) is not None and
                        r.sources[0].kind == "path" else ())


def _configure_step(ctx: VariantContext, cmake: str, vals: dict[str, str],
                    defines: dict[str, str], stage: str, common: StepCommon) -> Step:
    """``cmake -G Ninja`` with Conan's toolchain, the build type, the stage as the install
    prefix and the recipe's defines.  A dependent's build folder outlives its
    dependencies' Conan packages (it is named by their identity, not their content: a
    dependency rebuilt to the same bytes leaves the dependent as it is), so the package
    folders CMake cached (``<Package>_DIR``) are forgotten: ``find_package`` finds the
    dependencies' packages of this build through Conan's toolchain again."""
    v = ctx.variant
    bdir = ctx.build_folder
    forget = ("-U", "*_DIR") if ctx.deps else ()
    return Step(id=f"{v.id}/configure", kind="configure",
                commands=((cmake, *forget, "-S", vals["source"], "-B", vals["build"],
                           "-G", "Ninja",
                           f"-DCMAKE_TOOLCHAIN_FILE={bdir}/gen/conan_toolchain.cmake",
                           f"-DCMAKE_BUILD_TYPE={CMAKE_BUILD_TYPE[v.build_type]}",
                           f"-DCMAKE_INSTALL_PREFIX={stage}", *_make_program(ctx),
                           *(f"-D{k}={val}" for k, val in defines.items())),),
                cwd=bdir, deps=(f"{v.id}/conan-install",), timeout=1800,
                inputs_hash=step_hash(v.compile_key, "configure"), **common)


def _make_program(ctx: VariantContext) -> tuple[str, ...]:
    """The ninja builder found (next to its interpreter first, like every tool): CMake
    would look on PATH only, where a virtual environment's ninja may not be."""
    ninja = ctx.host.tool("ninja")
    return (f"-DCMAKE_MAKE_PROGRAM={ninja.path}",) if ninja else ()


def cmake_defines(ctx: VariantContext, be: Backend, flags: FlagSet, vals: dict[str, str],
                  pch_file: str | None) -> dict[str, str]:
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
        defines["CMAKE_PROJECT_INCLUDE"] = pch_file
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
                 bdir: str) -> _ConanFiles:
    """The conanfile and the profile(s): the host's (or the cross target's) and, for a
    cross build, this machine's (its tools run here)."""
    r, v, host = ctx.recipe, ctx.variant, ctx.host

    def sub(xs: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(substitute(x, vals) for x in xs)

    compilers = {"c": tool(host, "cc", "cc"), "cpp": tool(host, "cxx", "c++")}
    build_compilers = dict(compilers)
    if be.tool and be.conan_compiler:
        compilers[be.conan_compiler] = tool(host, be.tool, be.tool)
    cross = cross_target(ctx)
    if ctx.platform is not None and cross is not None:
        compilers.update(ctx.platform.compilers)
    system_refs = [c for c in r.requires.conan if c.provider == "system"]
    multiarch = ctx.platform.multiarch if ctx.platform is not None else ""
    profile = f"{bdir}/conan/profile"
    files = {
        f"{bdir}/conan/conanfile.py": _conanfile(
            r.name, r.version, tuple(k for k, _ in conan_options(v)),
            tuple(f"{d.recipe}/{d.version}" for d, _ in ctx.deps) + tuple(
                c.ref for c in r.requires.conan)),
        profile: _profile(
            host, v.build_type, ctx.jobs, sub(flags.c), sub(flags.cxx), sub(flags.ld),
            tuple(compilers.items()), r.cxx_standard,
            tuple(platform_ref(c, host, multiarch) for c in system_refs),
            tuple(platform_ref(c, host) for c in system_refs
                  if system_table().get(c.name, {}).get("tool")),
            cross),
    }
    if cross is None:
        return _ConanFiles(files, ("-pr:a", profile))
    build_profile = f"{bdir}/conan/profile-build"
    files[build_profile] = _profile(host, v.build_type, ctx.jobs, (), (), (),
                                    tuple(build_compilers.items()))
    return _ConanFiles(files, ("-pr:h", profile, "-pr:b", build_profile))


@functools.lru_cache(maxsize=256)
def _conanfile(name: str, version: str, options: tuple[str, ...],
               requires: tuple[str, ...]) -> str:
    """:func:`render.conanfile`, rendered once per recipe: every variant has the same."""
    return render.conanfile(name=name, version=version, options=options, requires=requires)


@functools.lru_cache(maxsize=256)
def _profile(host: HostFacts, build_type: str, jobs: int, cflags: tuple[str, ...],
             cxxflags: tuple[str, ...], ldflags: tuple[str, ...],
             compilers: tuple[tuple[str, str], ...], cppstd: str = "",
             platform_requires: tuple[str, ...] = (),
             platform_tool_requires: tuple[str, ...] = (),
             target: render.CrossTarget | None = None) -> str:
    """:func:`render.profile`, rendered once per distinct input: the variants of a recipe
    share a profile per build type and flags (made per variant, it was a large part of
    planning a recipe of thousands of variants)."""
    return render.profile(host=host, build_type=build_type, jobs=jobs, cflags=cflags,
                          cxxflags=cxxflags, ldflags=ldflags, compilers=dict(compilers),
                          cppstd=cppstd, platform_requires=platform_requires,
                          platform_tool_requires=platform_tool_requires, target=target)


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
                timeout=BUILD_TIMEOUT, inputs_hash=step_hash(ctx.variant.compile_key, "build"),
                **common,
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


