"""The steps of a ``build.system: xmake`` variant (pure, like the resolver), as LLAISYS
upstream builds: ``xmake f`` (configure) → ``xmake build`` → ``xmake install -o`` — with
the recipe's build type, flags, backend compiler, ``defines`` (the recipe's and the
backend's, as ``--NAME=value`` xmake options) and ``build.configure_args`` (options
substituted, bools as ``y``/``n``), every compiler a wrapper that runs
``python -m builder.memory.launcher`` so that the broker admits each compile by memory
while xmake runs ``-j`` at twice the CPUs.

xmake keeps its configuration in the project (``.xmake/``) and builds into ``build/``;
``XMAKE_CONFIGDIR`` and ``-o`` move both into the variant's build folder, so variants
never share them and the source tree stays clean.  As root, xmake needs ``XMAKE_ROOT=y``.
"""

from __future__ import annotations

from pathlib import Path

from builder import backends as registry
from builder.plan.model import Step
from builder.plan.payloads import CleanStage, PrepareBuild, PublishInstall
from builder.recipe.model import FlagSet
from builder.recipe.subst import substitute
from builder.resolve.cmakesteps import install_meta
from builder.resolve.pysteps import (
    launched_record,
    launcher_chain,
    record_env,
    scheduled_build,
    wrapper_env,
)
from builder.resolve.secretenv import env_reference
from builder.resolve.steps import (
    VariantContext,
    collect_step,
    common_of,
    fetch_steps,
    test_steps,
    tool,
    with_hash,
)
from builder.resolve.wheelsteps import wheel_steps

__all__ = ["XMAKE_MODES", "xmake_steps"]

#: builder's build types → xmake's modes
XMAKE_MODES = {"release": "release", "debug": "debug", "relwithdebinfo": "releasedbg"}


def _xmake_value(value: str) -> str:
    """A define's value as xmake reads options: booleans (ON/OFF from YAML) as y/n."""
    return {"ON": "y", "OFF": "n"}.get(value, value)


def _configure(ctx: VariantContext, xmake: str, flags: FlagSet, vals: dict[str, str],
               out: str, wrappers: tuple[str, str, str]) -> tuple[str, ...]:
    """``xmake f``: mode, compilers (the launcher wrappers), flags; the recipe's and the
    backend's defines as xmake options (bools as y/n)."""
    r, v = ctx.recipe, ctx.variant
    spec = r.backend(v.backend)
    assert spec is not None
    cc_wrap, cxx_wrap, own = wrappers  # own: the backend tool's wrapper (nvcc), if any
    yn = {**vals, **{f"options.{k}": ("y" if x else "n") for k, x in ctx.options.items()
                     if isinstance(x, bool)}}
    # --ccache=n: xmake's own compile cache preprocesses first and compiles the result in
    # the build folder, which would hide the source file from the memory history
    return (xmake, "f", "-P", vals["source"], "-y", "-m", XMAKE_MODES[v.build_type],
            "--ccache=n", "-o", out, f"--cc={cc_wrap}", f"--cxx={cxx_wrap}",
            f"--ld={cxx_wrap}", f"--sh={cxx_wrap}", *([f"--cu={own}"] if own else []),
            *(f"--{opt}={' '.join(substitute(x, vals) for x in flags.get(lang))}"
              for opt, lang in (("cflags", "c"), ("cxxflags", "cxx"), ("cuflags", "cuda"),
                                ("ldflags", "ld"), ("shflags", "ld"))
              if flags.get(lang)),
            *(f"--{k}={_xmake_value(substitute(x, yn))}"
              for k, x in (*r.defines, *spec.defines)),
            *(substitute(a, yn) for a in r.build_spec.configure_args))


def _xmake_env(ctx: VariantContext, bdir: Path, env: dict[str, str], vals: dict[str, str]
               ) -> dict[str, str]:
    """xmake's own folders in the variant's build folder (``XMAKE_ROOT``: as root too),
    the job count and CUDA of the wrappers' environment, and the recipe's ``build.env``."""
    r = ctx.recipe
    return {"XMAKE_ROOT": "y", "XMAKE_CONFIGDIR": str(bdir / "xmake-config"),
            "XMAKE_GLOBALDIR": str(ctx.ws.state / "xmake-global"),
            **{k: x for k, x in env.items() if k in ("MAX_JOBS", "CUDA_HOME")},
            **{k: env_reference(r.name, "build", k) if k in r.build_spec.secret_env
               else substitute(x, vals) for k, x in r.build_spec.env}}


def xmake_steps(ctx: VariantContext) -> list[Step]:
    r, v, ws = ctx.recipe, ctx.variant, ctx.ws
    be = registry.get(ctx.kind)
    spec = r.backend(v.backend)
    assert spec is not None
    common = common_of(v)
    bdir, stage = ws.build_dir(r.name, ctx.vdir), ws.stage_dir(r.name, ctx.vdir)
    vals = ctx.values()
    src = vals["source"]
    flags = ctx.flags()
    env, wrappers = wrapper_env(ctx, be, bdir / "bin", flags, vals)
    # xmake tells compilers apart by their names: wrappers named like gcc/g++ get gcc's flags
    cc_wrap, cxx_wrap = str(bdir / "bin" / "gcc"), str(bdir / "bin" / "g++")
    wrappers = (*wrappers, (cc_wrap, dict(wrappers)[env["CC"]]),
                (cxx_wrap, dict(wrappers)[env["CXX"]]))
    xenv = _xmake_env(ctx, bdir, env, vals)
    build_env = {**xenv, **record_env(ctx, bdir, xenv, python=False)}
    xmake = tool(ctx.host, "xmake", "xmake")
    configure = _configure(ctx, xmake, flags, vals, str(bdir / "build"),
                           (cc_wrap, cxx_wrap, env.get("PYTORCH_NVCC", "")))
    fetch = fetch_steps(ctx)
    sid = v.id
    pre = tuple(f"{d.id}/publish" for d, _ in ctx.deps) + tuple(f.id for f in fetch)
    steps = [*fetch,
             Step(id=f"{sid}/prepare", kind="prepare", deps=pre, outputs=(str(bdir / "bin"),),
                  # a dependent compiles from scratch: xmake does not see a dependency's
                  # install change (its folders outlive it: early cutoff keeps them)
                  payload=PrepareBuild(clean=(str(bdir / "build"),) if ctx.deps else (),
                                       files=(), wrappers=wrappers,
                                       python=ctx.host.builder_python or "python3",
                                       chain=launcher_chain(ctx)[3:]),
                  **common),
             Step(id=f"{sid}/configure", kind="configure", commands=(configure,),
                  env=tuple(xenv.items()), cwd=src, deps=(f"{sid}/prepare",), timeout=1800,
                  **common),
             scheduled_build(ctx, (xmake, "build", "-P", src, "-v", "-j", str(ctx.jobs * 2)),
                             build_env, src, (f"{sid}/configure",), str(bdir / "build"),
                             common),
             Step(id=f"{sid}/stage", kind="stage",
                  commands=((xmake, "install", "-P", src, "-o", str(stage)),)
                  if r.install.project_rules else (),
                  env=tuple(xenv.items()), cwd=src, deps=(f"{sid}/build",),
                  outputs=(str(stage),), payload=CleanStage(str(stage)), timeout=600,
                  **common)]
    installed = f"{sid}/stage"
    if r.install.files:
        steps.append(collect_step(ctx, vals, stage, installed, common))
        installed = steps[-1].id
    tests, last = test_steps(ctx, installed, str(stage))
    steps.extend(tests)
    steps.append(Step(id=f"{sid}/publish", kind="publish", deps=(last,),
                      outputs=(v.prefix,), inputs_hash=v.compile_key, **common,
                      payload=PublishInstall(stage=str(stage), prefix=v.prefix,
                                             meta={**install_meta(ctx),
                                                   "build_system": "xmake"},
                                             record=launched_record(ctx, vals, bdir / "build",
                                                                    stage, python=False))))
    steps.extend(wheel_steps(ctx, str(Path(v.prefix) / r.python.package), f"{sid}/publish",
                             native=True))
    return [with_hash(s, v.compile_key) for s in steps]
