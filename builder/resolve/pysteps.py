"""The steps of a ``build.system: python`` variant (pure, like the resolver): the project's
own PEP 517 build — ``setup.py`` (setuptools, ``torch.utils.cpp_extension`` with Ninja),
``pyproject.toml`` (scikit-build-core, a CMake run by setup.py…) — run by the target
interpreter, with builder's memory scheduler in front of every compiler.

Steps: fetch (git/url, or a patched path source) → **prepare** (compiler wrappers, the
setuptools build folders) → **build** (``pip wheel --no-build-isolation --no-deps`` or
``python -m build --wheel --no-isolation``, under the memory broker and the build's
cgroup) → **collect** (the wheel's files unpacked into the stage, plus the recipe's
``install.files``) → tests → publish → **wheel** (the project's wheel renamed, pinned and
repaired like a CMake recipe's, into ``.builder/wheels``).

Where the compilers are taken from, and how builder gets in front of them:

* ``CC``/``CXX`` name wrappers (``<build>/bin/cc``, ``c++``) that run
  ``python -m builder.memory.launcher <real compiler>``: setuptools and
  ``torch.utils.cpp_extension`` (whose build.ninja writes ``$CXX``) compile through them;
* the backend's tool gets a wrapper too (``PYTORCH_NVCC`` for cpp_extension's nvcc, with
  ``CUDA_HOME`` set so it is not guessed from the wrapper's folder), and the backend's
  build environment names the archs (``TORCH_CUDA_ARCH_LIST``, ``CUDAARCHS``…);
* ``CMAKE_<LANG>_COMPILER_LAUNCHER`` (CMake ≥ 3.17 reads it from the environment) for
  CMake-driven builds: scikit-build-core, a setup.py that runs CMake;
* ``MAX_JOBS`` and ``CMAKE_BUILD_PARALLEL_LEVEL`` at twice the CPUs: the build runs wide
  and the broker admits by memory (a launcher inside a launched compile runs the
  compiler directly, so a compile is never admitted twice);
* ``DIST_EXTRA_CONFIG`` moves setuptools' ``build/`` and ``.egg-info`` into builder's
  build folder: variants never share objects and the source tree stays clean.

Recipe options reach the build through ``build.env`` and ``build.config_settings``
(substituted, part of the key, shown by ``builder plan``).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from builder import backends as registry
from builder.backends import Backend
from builder.memory import depfiles
from builder.plan.model import Step
from builder.plan.payloads import CompileJobs, PrepareBuild, RecordInputs
from builder.plan.payloads import PublishInstall as Publish
from builder.recipe.model import FlagSet
from builder.recipe.subst import substitute
from builder.resolve import keys
from builder.resolve.cmakesteps import compiler_cache_env, install_meta, record_inputs
from builder.resolve.prediction import memory_prediction
from builder.resolve.secretenv import env_reference
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
from builder.resolve.wheelsteps import wheel_steps
from builder.source.reads import HOOK

__all__ = ["FLAG_ENV", "launched_record", "launcher_chain", "python_steps", "record_env",
           "record_folders", "scheduled_build", "wrapper_env"]

#: the recipe's flag languages → the environment variables build tools read them from
FLAG_ENV = {"c": "CFLAGS", "cxx": "CXXFLAGS", "cuda": "CUDAFLAGS", "hip": "HIPFLAGS",
            "ld": "LDFLAGS"}


def launcher_chain(ctx: VariantContext) -> tuple[str, ...]:
    """``python -m builder.memory.launcher`` [+ the compiler cache]."""
    chain: tuple[str, ...] = (ctx.host.builder_python or "python3", "-m",
                              "builder.memory.launcher")
    if ctx.compiler_cache != "none":
        chain += (tool(ctx.host, ctx.compiler_cache, ctx.compiler_cache),)
    return chain


def wrapper_env(ctx: VariantContext, be: Backend, bin_dir: Path, flags: FlagSet,
                vals: dict[str, str]) -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """The environment that puts the memory launcher in front of every compiler a build
    tool may use, and the wrappers to make ((wrapper, real compiler))."""
    host = ctx.host
    wrappers = [(str(bin_dir / "cc"), tool(host, "cc", "cc")),
                (str(bin_dir / "c++"), tool(host, "cxx", "c++"))]
    env = {"CC": wrappers[0][0], "CXX": wrappers[1][0]}
    own = host.tool(be.tool) if be.tool else None
    if be.tool and own is not None:
        wrappers.append((str(bin_dir / be.tool), own.path))
        env.update(be.build_env(ctx.variant.archs, str(bin_dir / be.tool), own.path))
    launcher = ";".join(launcher_chain(ctx))
    for lang in ("C", "CXX", *([be.cmake_language] if be.cmake_language else [])):
        env[f"CMAKE_{lang}_COMPILER_LAUNCHER"] = launcher
    wide = str(ctx.jobs * 2)  # the broker, not the job count, keeps memory in budget
    env.update({"MAX_JOBS": wide, "CMAKE_BUILD_PARALLEL_LEVEL": wide,
                # cpp_extension would put a ccache it finds in front of CXX on its own;
                # the compiler cache is builder's choice (--compiler-cache), in the wrappers
                "TORCH_NO_COMPILER_WRAPPER": "1"})
    for lang, name in FLAG_ENV.items():
        if flags.get(lang):
            env[name] = " ".join(substitute(x, vals) for x in flags.get(lang))
    env.update(compiler_cache_env(ctx) if ctx.compiler_cache != "none" else ())
    return env, tuple(wrappers)


def record_folders(bdir: Path) -> tuple[Path, Path, Path]:
    """Where a recorded variant's build leaves what it read: the launcher's depfiles, the
    Python processes' logs, and the folder of the audit hook that writes them."""
    return bdir / "inputs" / "depfiles", bdir / "inputs" / "reads", bdir / "inputs" / "hook"


def record_env(ctx: VariantContext, bdir: Path, env: dict[str, str], python: bool
               ) -> dict[str, str]:
    """The build step's variables that make it leave its record (none for a variant that
    is not recorded): the depfile folder, and for a Python build the log folder and the
    audit hook first on ``PYTHONPATH`` (before the recipe's own entries, or builder's)."""
    if not keys.recorded(ctx.recipe):
        return {}
    deps, reads, hook = record_folders(bdir)
    out = {depfiles.DEPFILE_DIR: str(deps)}
    if python:
        rest = env.get("PYTHONPATH", dict(ctx.variant.env).get("PYTHONPATH", ""))
        out.update({depfiles.READS_DIR: str(reads),
                    "PYTHONPATH": os.pathsep.join([str(hook), *([rest] if rest else [])])})
    return out


def launched_record(ctx: VariantContext, vals: dict[str, str], build: Path, stage: Path,
                    python: bool) -> RecordInputs | None:
    """What the publish step needs to record what a pip or xmake build read
    (:func:`builder.source.launched.launched_inputs`); None for a variant that is not
    recorded."""
    base = record_inputs(ctx, vals)
    if base is None:
        return None
    bdir = ctx.ws.build_dir(ctx.recipe.name, ctx.vdir)
    deps, reads, _ = record_folders(bdir)
    copy = ctx.fetched_dir()
    return replace(base, build=str(build), depfiles=str(deps),
                   reads=str(reads) if python else "", stage=str(stage),
                   wrappers=str(bdir / "bin"),
                   mapped=((str(copy), ctx.recipe.sources[0].location),) if copy else (),
                   scripts=() if python else (".lua",))


def scheduled_build(ctx: VariantContext, argv: tuple[str, ...], env: dict[str, str],
                    cwd: str, deps: tuple[str, ...], build_dir: str, common: StepCommon
                    ) -> Step:
    """The build command under the memory broker (``_do_build`` starts it) and, where one
    can be made, the build's memory cgroup — as for CMake recipes."""
    host = ctx.host
    if host.memory.cgroup_writable and ctx.budget:
        argv = (host.builder_python or "python3", "-m", "builder.memory.cgroup",
                "--limit", str(ctx.budget), "--name", ctx.vdir, "--", *argv)
    prediction = memory_prediction(ctx)
    return Step(id=f"{ctx.variant.id}/build", kind="build", commands=(argv,),
                env=tuple(env.items()), cwd=cwd, deps=deps, memory=prediction.peak,
                timeout=BUILD_TIMEOUT, **common,
                payload=CompileJobs(prediction, memory_config(ctx, ctx.source_root(), build_dir)))


def python_steps(ctx: VariantContext) -> list[Step]:
    r, v, ws = ctx.recipe, ctx.variant, ctx.ws
    be = registry.get(ctx.kind)
    spec = r.backend(v.backend)
    assert spec is not None
    common = common_of(v)
    bdir, stage = ws.build_dir(r.name, ctx.vdir), ws.stage_dir(r.name, ctx.vdir)
    vals = ctx.values()
    flags = ctx.flags()
    env, wrappers = wrapper_env(ctx, be, bdir / "bin", flags, vals)
    setup_cfg = bdir / "setuptools.cfg"
    env["DIST_EXTRA_CONFIG"] = str(setup_cfg)
    if ctx.deps:  # required recipes' install trees, for CMake's find_package
        env["CMAKE_PREFIX_PATH"] = ";".join(d.prefix for d, _ in ctx.deps)
    env.update((k, env_reference(r.name, "build", k) if k in r.build_spec.secret_env
                else substitute(x, vals)) for k, x in r.build_spec.env)
    env.update(record_env(ctx, bdir, env, python=True))
    dist = bdir / "dist"
    argv = _frontend(ctx, vals, dist)
    fetch = fetch_steps(ctx)
    sid = v.id
    pre = tuple(f"{d.id}/publish" for d, _ in ctx.deps) + tuple(f.id for f in fetch)
    steps = [*fetch,
             Step(id=f"{sid}/prepare", kind="prepare", deps=pre, outputs=(str(bdir / "bin"),),
                  payload=PrepareBuild(
                      # a dependent's folders outlive its dependencies' installs (early
                      # cutoff keeps them), and setuptools does not see a dependency's
                      # headers or libraries change: a dependent compiles from scratch
                      clean=(str(dist), *((str(bdir / "setuptools"),) if ctx.deps else ())),
                      wrappers=wrappers,
                      python=ctx.host.builder_python or "python3",
                      chain=launcher_chain(ctx)[3:],
                      files=((str(setup_cfg), _setuptools_cfg(bdir)),
                             *_hook_files(ctx, bdir))), **common),
             scheduled_build(ctx, argv, env, str(bdir), (f"{sid}/prepare",), str(bdir), common)]
    wheels = ws.wheel_dir(v.backend, v.compile_key)
    steps.append(collect_step(ctx, vals, stage, f"{sid}/build", common, clean=True,
                              wheel_from=str(dist)))
    tests, last = test_steps(ctx, f"{sid}/collect", str(stage))
    steps.extend(tests)
    steps.append(Step(id=f"{sid}/publish", kind="publish", deps=(last,),
                      outputs=(v.prefix,), inputs_hash=v.compile_key, **common,
                      payload=Publish(stage=str(stage), prefix=v.prefix,
                                      meta={**install_meta(ctx), "build_system": "python",
                                            "wheels": str(wheels)},
                                      record=launched_record(ctx, vals, bdir, stage,
                                                             python=True))))
    # the project's wheel gets what a CMake recipe's gets: its name, pins, repair
    steps.extend(wheel_steps(ctx, str(stage), f"{sid}/publish", native=True,
                             from_wheel=str(dist)))
    return [with_hash(s, v.compile_key) for s in steps]


def _frontend(ctx: VariantContext, vals: dict[str, str], dist: Path) -> tuple[str, ...]:
    """The PEP 517 front end's command: ``python -m build`` or ``pip wheel``, with the
    recipe's config settings, into ``dist``."""
    spec = ctx.recipe.build_spec
    py = ctx.python.path if ctx.python else "python3"
    settings = [f"{k}={substitute(x, vals)}" for k, x in spec.config_settings]
    if spec.frontend == "build":
        return (py, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist),
                *(f"--config-setting={s}" for s in settings), vals["source"])
    return (py, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-v",
            "--disable-pip-version-check", "--wheel-dir", str(dist),
            *(f"--config-settings={s}" for s in settings), vals["source"])


def _hook_files(ctx: VariantContext, bdir: Path) -> tuple[tuple[str, str], ...]:
    """The audit hook that logs the build's reads, for a recorded variant."""
    if not keys.recorded(ctx.recipe):
        return ()
    return ((str(record_folders(bdir)[2] / "sitecustomize.py"), HOOK),)


def _setuptools_cfg(bdir: Path) -> str:
    """setuptools reads ``$DIST_EXTRA_CONFIG`` after the project's setup.cfg: its build
    folders (objects, cpp_extension's build.ninja, the wheel's tree) and egg-info go to
    the variant's build folder, so variants never share objects."""
    return (f"[build]\nbuild_base = {bdir / 'setuptools'}\n\n"
            f"[egg_info]\negg_base = {bdir}\n")

