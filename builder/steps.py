"""Turn one resolved variant into its steps (pure, like the resolver).

* CMake recipes: render the Conan files → ``conan install`` → ``cmake`` configure →
  build → install into a stage folder → tests → ``conan export-pkg`` (so that
  dependents find it in the Conan cache) → publish the stage atomically.
* Kernel recipes: one compile step per (kernel, arch), each cached under its own
  key (source, flags, toolchain, arch), then one publish step that lays out
  ``<root>/<backend>/<kernel>/<arch>.<ext>`` with a manifest (:mod:`builder.kernelsteps`).

This module holds the CMake steps and the steps both kinds share (fetch, tests, wheels).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

from . import backends as registry
from . import render
from .fetch import source_key
from .host import HostFacts, PythonInfo
from .memory.estimate import estimate
from .memory.policy import simulate
from .model import CMAKE_BUILD_TYPE, OptionValue, Recipe, digest, option_text
from .plan import BUILD, CACHED, SKIP, Step, Variant
from .subst import substitute
from .system import platform_ref
from .system import table as system_table
from .targets import Platform
from .wheel import dist_name, wheel_tag
from .workspace import Workspace

BUILD_TIMEOUT = 4 * 3600


@dataclass(frozen=True)
class VariantContext:
    recipe: Recipe
    variant: Variant
    host: HostFacts
    ws: Workspace
    jobs: int
    options: dict[str, OptionValue]
    python: PythonInfo | None
    deps: tuple[tuple[Variant, Recipe], ...]
    file_digests: dict[str, str]
    kernel_artifacts: frozenset[str]
    kernel_installs: dict[str, str]
    fetched: frozenset[str]
    wheels: frozenset[str]
    budget: int
    units: dict[str, tuple[tuple[str, tuple[str, ...]], ...]]
    measured: dict[str, tuple[int, float, tuple[float, ...]]]
    skipped_archs: tuple[tuple[str, str, str], ...]
    env: dict[str, str]
    test_pythons: tuple[str, ...]
    run_tests: bool = True
    conan_remote: str = ""
    compiler_cache: str = "none"
    cache_remote: str = ""
    platform: Platform | None = None  # the backend's target platform (None: the host's)
    #: (Python version, reason, fix) for test Pythons that lack the recipe's requires.python
    test_python_problems: tuple[tuple[str, str, str], ...] = ()

    @property
    def kind(self) -> str:
        """The registry backend of the variant's backend (``arm`` is a ``cpu``)."""
        spec = self.recipe.backend(self.variant.backend)
        return spec.backend_kind if spec else self.variant.backend

    @property
    def cross(self) -> bool:
        return self.platform is not None and self.platform.cross

    @property
    def vdir(self) -> str:
        return self.variant.id.split("/", 1)[1]

    def fetched_dir(self) -> Path | None:
        """Where a git/url source is fetched to (None for a local folder)."""
        src = self.recipe.sources[0]
        if src.kind == "path":
            return None
        digests = tuple(self.file_digests.get(p, "") for p in src.patches)
        return self.ws.state / "sources" / source_key(src.kind, src.location, src.rev,
                                                      src.sha256, digests)

    def source_root(self) -> str:
        src = self.recipe.sources[0]
        fetched = self.fetched_dir()
        base = src.location if fetched is None else str(fetched)
        return str(Path(base) / src.subdir) if src.subdir else base

    def values(self, **extra: str) -> dict[str, str]:
        v = self.variant
        be = registry.get(self.kind)
        out = {"package.name": v.recipe, "package.version": v.version, "backend": v.backend,
               "build_type": v.build_type, "archs": ";".join(v.archs),
               "archs.cmake": be.archs_cmake(v.archs), "source": self.source_root(),
               "build": str(self.ws.build_dir(v.recipe, self.vdir) / "cmake"),
               "prefix": str(self.ws.stage_dir(v.recipe, self.vdir))}
        if self.python:
            out["python"] = self.python.path
            out["python.version"] = self.python.version
        for k, val in self.options.items():
            out[f"options.{k}"] = ("ON" if val else "OFF") if isinstance(val, bool) \
                else option_text(val)
        for k, val in self.env.items():
            out[f"env.{k}"] = val
        out.update(extra)
        return out


def _status(v: Variant) -> tuple[str, str, str]:
    return v.status, v.reason, v.fix


def tool(host: HostFacts, name: str, fallback: str) -> str:
    t = host.tool(name)
    return t.path if t else fallback




def _test_steps(ctx: VariantContext, after: str, prefix_value: str
                ) -> tuple[list[Step], str]:
    """The recipe's test steps for this variant, chained, and the id the next step
    should wait for (a GPU-only test skipped here is not waited for)."""
    v = ctx.variant
    status, reason, fix = _status(v)
    out: list[Step] = []
    prev = after
    for t in ctx.recipe.tests:
        if t.backends and v.backend not in t.backends:
            continue
        uses_python = any("${python" in a for a in (*t.run, *(e for _, e in t.env)))
        for py in (ctx.test_pythons if uses_python else ("",)):
            info = ctx.host.python(py) if py else ctx.python
            extra = {"device": t.device_for(v.backend), "prefix": prefix_value}
            if info:
                extra.update({"python": info.path, "python.version": info.version})
            vals = ctx.values(**extra)
            argv = tuple(substitute(a, vals) for a in t.run)
            env = tuple((k, substitute(e, vals)) for k, e in t.env)
            sid = f"{v.id}/test:{t.name}" + (f"@py{py}" if py and len(ctx.test_pythons) > 1
                                                else "")
            st, rs, fx = (status, reason, fix)
            optional = False
            if uses_python and info is None:
                st, rs, fx = SKIP, f"no Python {py} interpreter found", f"pyenv install {py}"
            elif st == BUILD and not ctx.run_tests:
                st, rs, fx = SKIP, "tests not requested (--no-tests)", "drop --no-tests"
                optional = True
            elif st == BUILD and uses_python and py and any(
                    p == py for p, _, _ in ctx.test_python_problems):
                # the build serves every Python; this one lacks what the tests import
                _, rs, fx = next(x for x in ctx.test_python_problems if x[0] == py)
                st, optional = SKIP, True
            elif st == BUILD and ctx.platform is not None and ctx.platform.cross:
                st, (rs, fx) = SKIP, ctx.platform.test_skip()
                optional = True  # they run on the target; the build goes on without them
            elif st == BUILD and t.needs_gpu and registry.get(ctx.kind).tool and \
                    not ctx.host.gpus:
                st, rs, fx = (SKIP, f"needs a {v.backend} GPU; none is visible on this host",
                              "run the build on a machine with a GPU")
                optional = True
            out.append(Step(id=sid, kind="test", variant=v.id, commands=(argv,), env=env,
                            cwd=substitute(t.cwd, vals) if t.cwd else vals["build"]
                            if ctx.recipe.build_system == "cmake" else vals["source"],
                            deps=(prev,), status=st, reason=rs, fix=fx,
                            timeout=t.timeout, inputs_hash=digest(v.key, sid.rpartition("/")[2])))
            if not optional:  # a GPU-only test skipped here does not hold the build back
                prev = sid
    return out, prev


def fetch_steps(ctx: VariantContext) -> list[Step]:
    """The step that brings a git or url source into ``.builder/sources/<key>``."""
    dest = ctx.fetched_dir()
    if dest is None:
        return []
    src, v, host = ctx.recipe.sources[0], ctx.variant, ctx.host
    partial = str(dest) + ".partial"
    commands: list[tuple[str, ...]] = []
    if src.kind == "git":
        from .semantic import is_full_rev

        git = tool(host, "git", "git")
        if is_full_rev(src.rev):
            commands += [(git, "clone", "--quiet", "--no-checkout", "--", src.location,
                          partial),
                         (git, "-C", partial, "checkout", "--quiet", "--detach", src.rev)]
        else:  # a branch or tag the recipe opted in to (allow_branch): its tip, now
            commands += [(git, "clone", "--quiet", "--branch", src.rev, "--", src.location,
                          partial)]
    patch = tool(host, "patch", "patch")
    commands += [(patch, "-p1", "--forward", "--batch", "-d", partial, "-i", p)
                 for p in src.patches]
    status, reason, fix = _status(v)
    if status == BUILD and dest.name in ctx.fetched:
        status = CACHED
    return [Step(id=f"{v.id}/fetch", kind="fetch", variant=v.id, commands=tuple(commands),
                 cwd=str(ctx.ws.state), outputs=(str(dest),), status=status, reason=reason,
                 fix=fix, inputs_hash=dest.name, timeout=1800,
                 params=(("kind", src.kind), ("location", src.location), ("rev", src.rev),
                         ("sha256", src.sha256), ("dest", str(dest)), ("partial", partial)))]


def cmake_steps(ctx: VariantContext) -> list[Step]:
    r, v, host, ws = ctx.recipe, ctx.variant, ctx.host, ctx.ws
    be = registry.get(ctx.kind)
    spec = r.backend(v.backend)
    assert spec is not None
    status, reason, fix = _status(v)
    bdir = ws.build_dir(r.name, ctx.vdir)
    stage = ws.stage_dir(r.name, ctx.vdir)
    vals = ctx.values()
    flags = r.flags.for_build_type(v.build_type) + spec.flags.for_build_type(v.build_type)

    def sub(xs: tuple[str, ...]) -> list[str]:
        return [substitute(x, vals) for x in xs]

    defines: dict[str, str] = dict(be.cmake_defines(v.archs))
    if ctx.python and (r.python.versions or r.requires.python):
        defines["Python_EXECUTABLE"] = ctx.python.path
        defines["Python3_EXECUTABLE"] = ctx.python.path
        # CMake config files shipped by required Python packages (torch, pybind11), taken
        # from the interpreter the build targets — never whatever python3 is on PATH
        wanted = {Requirement(t).name.lower() for t in r.requires.python}
        prefixes = [where for name, where in ctx.python.cmake_prefixes if name in wanted]
        if prefixes:
            defines["CMAKE_PREFIX_PATH"] = ";".join(prefixes)
        triplet = ctx.platform.toolchain.triplet if ctx.cross and ctx.platform and \
            ctx.platform.toolchain else ""
        if triplet:  # extension modules named for the target's interpreter, not this one
            cp = ctx.python.version.replace(".", "")
            defines["PYTHON_MODULE_EXTENSION"] = f".cpython-{cp}-{triplet}.so"
    for o in r.options:
        if o.cmake:
            defines[o.cmake] = vals[f"options.{o.name}"]
    for k, val in (*r.defines, *spec.defines):
        defines[k] = substitute(val, vals)
    if switch(r.memory.unity, vals):
        defines["CMAKE_UNITY_BUILD"] = "ON"
        defines["CMAKE_UNITY_BUILD_BATCH_SIZE"] = str(r.memory.unity_batch_size)
    pch_file = bdir / "conan" / "builder_pch.cmake"
    use_pch = switch(r.memory.pch, vals) and bool(r.memory.pch_headers)
    if use_pch:
        defines["CMAKE_PROJECT_INCLUDE"] = str(pch_file)
    for lang, var in (("cuda", "CMAKE_CUDA_FLAGS"), ("hip", "CMAKE_HIP_FLAGS")):
        if flags.get(lang):
            defines[var] = " ".join(sub(flags.get(lang)))

    # Every compile goes through the memory launcher, which asks the build's broker.
    # (chained with a compiler cache: the memory launcher admits, then runs ccache/sccache)
    chain = [host.builder_python or "python3", "-m", "builder.memory.launcher"]
    cache_env: list[tuple[str, str]] = []
    if ctx.compiler_cache != "none":
        chain.append(tool(host, ctx.compiler_cache, ctx.compiler_cache))
        cache_env = compiler_cache_env(ctx)
    launcher = ";".join(chain)
    for lang in ("C", "CXX", *([be.cmake_language] if be.cmake_language else [])):
        defines.setdefault(f"CMAKE_{lang}_COMPILER_LAUNCHER", launcher)
    prediction = memory_prediction(ctx)

    compilers = {"c": tool(host, "cc", "cc"), "cpp": tool(host, "cxx", "c++")}
    build_compilers = dict(compilers)
    if be.tool and be.cmake_language == "CUDA":
        compilers["cuda"] = tool(host, "nvcc", "nvcc")
    cross = cross_target(ctx)
    if ctx.platform is not None and cross is not None:
        compilers.update(ctx.platform.compilers)
    system_refs = [c for c in r.requires.conan if c.provider == "system"]
    multiarch = ctx.platform.multiarch if ctx.platform is not None else ""
    platform = [platform_ref(c, host, multiarch) for c in system_refs]
    platform_tools = [platform_ref(c, host) for c in system_refs
                      if system_table().get(c.name, {}).get("tool")]
    files = {
        str(bdir / "conan" / "conanfile.py"): render.conanfile(
            name=r.name, version=r.version, options=[k for k, _ in conan_options(v)],
            requires=[f"{d.recipe}/{d.version}" for d, _ in ctx.deps] + [
                c.ref for c in r.requires.conan]),
        str(bdir / "conan" / "profile"): render.profile(
            host=host, build_type=v.build_type, jobs=ctx.jobs, cflags=sub(flags.c),
            cxxflags=sub(flags.cxx), ldflags=sub(flags.ld), compilers=compilers,
            platform_requires=platform, platform_tool_requires=platform_tools, target=cross),
    }
    profile = str(bdir / "conan" / "profile")
    profile_args: tuple[str, ...] = ("-pr:a", profile)
    if cross is not None:  # -pr:h: the target, -pr:b: this machine (its tools run here)
        build_profile = str(bdir / "conan" / "profile-build")
        files[build_profile] = render.profile(
            host=host, build_type=v.build_type, jobs=ctx.jobs, cflags=[], cxxflags=[],
            ldflags=[], compilers=build_compilers)
        profile_args = ("-pr:h", profile, "-pr:b", build_profile)
    if use_pch:
        files[str(pch_file)] = render.pch_cmake(r.memory.pch_headers)
    conan = tool(host, "conan", "conan")
    cmake = tool(host, "cmake", "cmake")
    conan_env = (("CONAN_HOME", str(ws.conan_home)),)
    option_args = conan_args(v, [d for d, _ in ctx.deps])
    # Ninja may start more jobs than there are cores: launchers beyond the broker's
    # admission wait cheaply, which lets the broker choose the largest job that fits.
    build_argv: tuple[str, ...] = (cmake, "--build", vals["build"], "--parallel",
                                   str(ctx.jobs * 2),
                                   *(a for t in r.targets for a in ("--target", t)))
    if host.memory.cgroup_writable and ctx.budget:
        build_argv = (host.builder_python or "python3", "-m", "builder.memory.cgroup",
                      "--limit", str(ctx.budget), "--name", ctx.vdir, "--", *build_argv)
    fetch = fetch_steps(ctx)
    pre = tuple(f"{d.id}/publish" for d, _ in ctx.deps) + tuple(f.id for f in fetch)
    sid = v.id
    steps = [*fetch,
        Step(id=f"{sid}/render", kind="render", variant=sid, deps=pre,
             outputs=tuple(files), status=status, reason=reason, fix=fix,
             params=(("files", json.dumps(files, sort_keys=True)),)),
        Step(id=f"{sid}/conan-install", kind="conan-install", variant=sid,
             commands=((conan, "install", str(bdir / "conan"), "--output-folder",
                        str(bdir / "gen"), *profile_args, *option_args,
                        *(("-r", ctx.conan_remote) if ctx.conan_remote and any(
                            c.provider == "remote" for c in r.requires.conan) else ("-nr",))),),
             env=conan_env, cwd=str(bdir), deps=(f"{sid}/render",),
             outputs=(str(bdir / "gen" / "conan_toolchain.cmake"),), status=status,
             reason=reason, fix=fix, timeout=600),
        Step(id=f"{sid}/configure", kind="configure", variant=sid,
             commands=((cmake, "-S", vals["source"], "-B", vals["build"], "-G", "Ninja",
                        f"-DCMAKE_TOOLCHAIN_FILE={bdir / 'gen' / 'conan_toolchain.cmake'}",
                        f"-DCMAKE_BUILD_TYPE={CMAKE_BUILD_TYPE[v.build_type]}",
                        f"-DCMAKE_INSTALL_PREFIX={stage}",
                        *(f"-D{k}={val}" for k, val in defines.items())),),
             cwd=str(bdir), deps=(f"{sid}/conan-install",), status=status, reason=reason,
             fix=fix, timeout=1800),
        Step(id=f"{sid}/build", kind="build", variant=sid,
             commands=(build_argv,), env=tuple(cache_env),
             cwd=str(bdir), deps=(f"{sid}/configure",), status=status, reason=reason, fix=fix,
             memory=prediction["peak"], timeout=BUILD_TIMEOUT,
             params=(("prediction", json.dumps(prediction, sort_keys=True)),
                     ("memory", json.dumps({
                         "budget": ctx.budget, "slots": ctx.jobs, "source_root": vals["source"],
                         "build_dir": vals["build"], "recipe_default": r.memory.default,
                         "recipe_globs": [list(g) for g in r.memory.per_file],
                         "lowmem_flags": list(r.memory.low_memory_flags),
                         "history_path": str(ws.state / "memory-history.json")},
                         sort_keys=True)))),
        Step(id=f"{sid}/stage", kind="stage", variant=sid,
             commands=((cmake, "--install", vals["build"], "--prefix", str(stage)),),
             cwd=str(bdir), deps=(f"{sid}/build",), outputs=(str(stage),), status=status,
             reason=reason, fix=fix, params=(("clean", str(stage)),), timeout=600),
    ]
    tests, last = _test_steps(ctx, f"{sid}/stage", str(stage))
    steps.extend(tests)
    steps.append(Step(id=f"{sid}/export", kind="export", variant=sid,
                      commands=((conan, "export-pkg", str(bdir / "conan"), *profile_args,
                                 *option_args, "-c", f"user.builder:stage={stage}", "-nr"),),
                      env=conan_env, cwd=str(bdir), deps=(last,), status=status, reason=reason,
                      fix=fix, timeout=600))
    steps.append(Step(id=f"{sid}/publish", kind="publish", variant=sid,
                      deps=(f"{sid}/export",), outputs=(v.prefix,), status=status,
                      reason=reason, fix=fix,
                      params=(("stage", str(stage)), ("prefix", v.prefix),
                              ("meta", json.dumps(_meta(ctx), sort_keys=True))),
                      inputs_hash=v.key))
    steps.extend(wheel_steps(ctx, str(Path(v.prefix) / r.python.package), f"{sid}/publish",
                             native=True))
    return [_with_hash(s, v.key) for s in steps]


def conan_options(v: Variant) -> list[tuple[str, str]]:
    """The Conan options of a variant's package: backend, archs, the recipe's options
    and the variant key (so a package — here or on a remote — is found by its key)."""
    return [("backend", v.backend), ("archs", ";".join(v.archs)), *v.options,
            ("builder_key", v.key)]


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
        env = [("CCACHE_DIR", str(ctx.ws.state / "ccache")), ("CCACHE_BASEDIR", root),
               ("CCACHE_NOHASHDIR", "1"), ("CCACHE_COMPILERCHECK", "content")]
        if ctx.cache_remote:
            env.append(("CCACHE_REMOTE_STORAGE", ctx.cache_remote))
        return env
    env = [("SCCACHE_DIR", str(ctx.ws.state / "sccache")), ("SCCACHE_BASEDIRS", root)]
    if ctx.cache_remote:
        env.append(("SCCACHE_REDIS_ENDPOINT", ctx.cache_remote))
    return env


def switch(value: bool | str, vals: dict[str, str]) -> bool:
    """A memory switch: a bool, or ``${options.NAME}`` naming a bool option."""
    if isinstance(value, bool):
        return value
    return substitute(value, vals) == "ON"


def memory_prediction(ctx: VariantContext) -> dict[str, Any]:
    """Estimate every translation unit and simulate the admission policy: predicted
    wall time, peak reserved memory, parallelism and the heaviest jobs."""
    root = ctx.source_root()
    jobs = []
    heavy = []
    for rel, includes in ctx.units.get(root, ()):
        hist = ctx.measured.get(str(Path(root) / rel))
        est = estimate(rel, includes, recipe_default=ctx.recipe.memory.default,
                       recipe_globs=ctx.recipe.memory.per_file,
                       history_file={"peak": hist[0], "seconds": hist[1], "cpu": hist[1],
                                     "curve": hist[2]} if hist else None)
        jobs.append((rel, est.reserve, est.seconds, est.cpu, est.curve))
        heavy.append((est.peak, rel, est.source))
    pred = simulate(jobs, ctx.budget, ctx.jobs)
    heavy.sort(reverse=True)
    return {"jobs": pred.jobs, "wall": round(pred.wall, 1), "peak": pred.peak,
            "parallelism": round(pred.parallelism, 2), "budget": ctx.budget,
            "heaviest": [{"file": f, "peak": p, "source": src} for p, f, src in heavy[:5]]}


def wheel_steps(ctx: VariantContext, src: str, after: str, native: bool) -> list[Step]:
    """A wheel of the recipe's Python package, once per variant: per Python version for
    ``abi: cpython``, else one ``py3-none`` wheel that every Python version installs."""
    r, v, host = ctx.recipe, ctx.variant, ctx.host
    if not r.python.versions:
        return []
    target = ctx.platform.target if ctx.platform else None
    tag = wheel_tag(r.python.abi, v.python, target.os if target else host.os,
                    target.machine if target else host.arch, native)
    out_dir = ctx.ws.state / "wheels" / v.backend / v.key[:12]
    out = out_dir / f"{dist_name(r.name)}-{r.version}-{tag}.whl"
    status, reason, fix = _status(v)
    if status == BUILD and str(out) in ctx.wheels:
        status = CACHED
    return [Step(id=f"{v.id}/wheel", kind="wheel", variant=v.id, deps=(after,),
                 outputs=(str(out),), status=status, reason=reason, fix=fix,
                 inputs_hash=digest(v.key, "wheel"),
                 params=(("src", src), ("name", r.name), ("version", r.version), ("tag", tag),
                         ("summary", r.description), ("out_dir", str(out_dir))))]


def _meta(ctx: VariantContext) -> dict[str, object]:
    """What the manifest records about how a variant was built."""
    v, host = ctx.variant, ctx.host
    be = registry.get(ctx.kind)
    cross = [exe for exe, _ in ctx.platform.versions] if ctx.platform else []
    tools = {name: f"{t.version} ({t.path})" for name in ("cmake", "ninja", "conan", "cxx",
                                                          *([be.tool] if be.tool else []),
                                                          *cross)
             if (t := host.tool(name))}
    return {"recipe": v.recipe, "version": v.version, "variant": v.id, "backend": v.backend,
            "build_type": v.build_type, "python": v.python, "archs": list(v.archs),
            "options": dict(v.options), "toolchains": tools,
            "python_interpreter": ctx.python.full if ctx.python else "",
            **({"target": ctx.platform.target.name, "cross": ctx.platform.cross}
               if ctx.platform else {})}


def _with_hash(step: Step, key: str) -> Step:
    if step.inputs_hash:
        return step
    # The variant key covers every input; the step's name tells the steps apart.  (Paths
    # in the commands are left out so that the same build in another folder hashes alike.)
    return replace(step, inputs_hash=digest(key, step.id.rsplit("/", 1)[-1]))
