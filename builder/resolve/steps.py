"""Turn one resolved variant into its steps (pure, like the resolver).

* CMake recipes: render the Conan files → ``conan install`` → ``cmake`` configure →
  build → install into a stage folder → tests → ``conan export-pkg`` (so that
  dependents find it in the Conan cache) → publish the stage atomically.
* Kernel recipes: one compile step per (kernel, arch), each cached under its own
  key (source, flags, toolchain, arch), then one publish step that lays out
  ``<root>/<backend>/<kernel>/<arch>.<ext>`` with a manifest (:mod:`builder.resolve.kernelsteps`).

This module holds the steps every kind shares (fetch, tests, wheels); the CMake steps are in
:mod:`builder.resolve.cmakesteps`.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypedDict

from builder import backends as registry
from builder.backends.platforms import Platform
from builder.errors import Diagnostic, Location, RecipeError
from builder.host.facts import HostFacts, PythonInfo
from builder.memory.remote import Pool
from builder.plan.model import BUILD, CACHED, SKIP, Step, Variant
from builder.plan.payloads import (
    CollectInstall,
    FetchSource,
    MemoryConfig,
    TestRun,
)
from builder.recipe.model import FlagSet, OptionValue, Recipe, TestSpec, digest, option_text
from builder.recipe.subst import substitute
from builder.recipe.yamlload import format_path
from builder.resolve.keyinputs import env_values
from builder.resolve.secretenv import env_reference, test_secrets
from builder.source.fetch import source_key
from builder.workspace.paths import Workspace

__all__ = ["BUILD_TIMEOUT", "VARIANT_KINDS", "StepCommon", "VariantContext", "collect_step",
           "common_of", "fetch_steps", "memory_config", "passed", "refetch_for_tests",
           "step_hash",
           "test_steps", "tool", "up_to_date", "variant_status", "with_hash"]

BUILD_TIMEOUT = 4 * 3600

#: the steps keyed by the variant key (the compile key keys every other step)
VARIANT_KINDS = frozenset({"test", "wheel"})


#: ``${build}`` below the variant's build folder: CMake's binary dir, xmake's ``-o``; a
#: python build's own folders (setuptools', ``build-dir`` settings) are below the folder itself
_BUILD_SUBDIR = {"python": ".", "xmake": "build"}


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
    #: the distributed pool the forecast gives jobs to (None: none)
    remote: Pool | None = None
    #: (Python version, reason, fix) for test Pythons that lack the recipe's requires.python
    test_python_problems: tuple[tuple[str, str, str], ...] = ()
    #: path source → its content digest (a patched path source is copied under that key)
    source_digests: dict[str, str] = field(default_factory=dict)
    #: State.name_digests: path source folder → digest of its file names
    name_digests: dict[str, str] = field(default_factory=dict)
    #: State.kernel_records: artifact config → the key of a kernel cache entry whose
    #: record of what its compile read still holds
    kernel_records: dict[str, str] = field(default_factory=dict)
    #: the one GPU arch of a variant wheel's build ("" for the ordinary, all-arch one)
    wheel_variant: str = ""
    #: State.done: test and wheel steps that succeeded, variant keys published
    done: frozenset[str] = frozenset()
    #: an install with the variant's compile key is complete: its compile steps are
    #: up to date, and its tests run against the install (the stage is gone)
    compiled: bool = False
    #: the compile key less the dependencies' outputs (resolve.keys.own_key)
    own_key: str = ""

    def flags(self) -> FlagSet:
        """The recipe's flags for the build type, then the backend's, layered; then the
        device-code flags builder adds (``--compress-mode``), so that every build system
        (CMake, Python, xmake, kernels) compiles with them."""
        return self._flags

    @functools.cached_property
    def _flags(self) -> FlagSet:
        """:meth:`flags`, layered once per variant (its steps and its memory forecast
        each ask)."""
        spec = self.recipe.backend(self.variant.backend)
        bt = self.variant.build_type
        own = self.recipe.flags.for_build_type(bt)
        if spec is None:
            return own
        be = registry.get(spec.backend_kind)
        added = be.code_flags(self.compress_mode())
        extra = FlagSet(**{be.flags_lang: added}) if added and be.flags_lang else FlagSet()
        return own + spec.flags.for_build_type(bt) + extra

    def compress_mode(self) -> str:
        """The device-code compression the variant's build uses ("" = no flag)."""
        spec = self.recipe.backend(self.variant.backend)
        if spec is None:
            return ""
        return registry.get(spec.backend_kind).compress_mode(spec.compress_mode, self.host)

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
        """Where a git/url source is fetched to, and a patched (or ``exclude``-filtered)
        local folder copied to (its patches are applied to the copy, never to the folder
        itself); None for an unpatched local folder, which is built where it is."""
        src = self.recipe.sources[0]
        if src.kind == "path" and not src.patches and not src.exclude:
            return None
        digests = tuple(self.file_digests.get(p, "") for p in src.patches) + \
            tuple(f"exclude:{g}" for g in src.exclude)
        # a local folder's copy is named by the folder and its patches, not its content:
        # it is kept in step with the folder (the fetch step rewrites what differs), so
        # that a CMake build folder can follow it and recompile only what changed
        content = "in step" if src.kind == "path" else src.sha256
        return self.ws.sources / source_key(src.kind, src.location, src.rev,
                                          content, digests)

    def source_root(self) -> str:
        src = self.recipe.sources[0]
        fetched = self.fetched_dir()
        base = src.location if fetched is None else str(fetched)
        return str(Path(base) / src.subdir) if src.subdir else base

    @functools.cached_property
    def build_folder(self) -> str:
        """The variant's build folder (:meth:`Workspace.build_dir`), as text: its steps
        name files below it by appending ``/name``, a path object made per file being
        a large part of planning thousands of variants."""
        return str(self.ws.build_dir(self.variant.recipe, self.vdir))

    @functools.cached_property
    def stage_folder(self) -> str:
        """The variant's stage folder (:meth:`Workspace.stage_dir`), as text."""
        return str(self.ws.stage_dir(self.variant.recipe, self.vdir))

    def values(self, **extra: str) -> dict[str, str]:
        """What ``${...}`` substitutes for this variant (``extra`` added: a test's
        ``${device}``, a kernel's ``${arch}``): a new dict each call."""
        return {**self._values, **extra} if extra else dict(self._values)

    @functools.cached_property
    def _values(self) -> dict[str, str]:
        v = self.variant
        be = registry.get(self.kind)
        out = {"package.name": v.recipe, "package.version": v.version, "backend": v.backend,
               "build_type": v.build_type, "archs": ";".join(v.archs),
               "archs.cmake": be.archs_cmake(v.archs), "source": self.source_root(),
               "build": _below(self.build_folder,
                               _BUILD_SUBDIR.get(self.recipe.build_system, "cmake")),
               "prefix": self.stage_folder}
        if self.python:
            out["python"] = self.python.path
            out["python.version"] = self.python.version
        for k, val in self.options.items():
            out[f"options.{k}"] = ("ON" if val else "OFF") if isinstance(val, bool) \
                else option_text(val)
        # only the variables the recipe's substituted texts name, which are keyed
        out.update(env_values(self.recipe, self.env))
        return out


def _below(folder: str, name: str) -> str:
    """``str(Path(folder) / name)`` for a folder other than ``/`` and a plain name or
    ``.`` (which names the folder itself), without making a path."""
    return folder if name == "." else f"{folder}/{name}"


def variant_status(v: Variant) -> tuple[str, str, str]:
    return v.status, v.reason, v.fix


class StepCommon(TypedDict):
    """What every step of a variant shares."""

    variant: str
    status: str
    reason: str
    fix: str


def common_of(v: Variant) -> StepCommon:
    return StepCommon(variant=v.id, status=v.status, reason=v.reason, fix=v.fix)


def tool(host: HostFacts, name: str, fallback: str) -> str:
    t = host.tool(name)
    return t.path if t else fallback




def up_to_date(step: Step, prefix: str) -> Step:
    """A compile step of a variant whose install (by compile key) is complete."""
    if step.status != BUILD or step.kind in VARIANT_KINDS:
        return step
    return replace(step, status=CACHED, reason=f"up to date: {prefix}")


def refetch_for_tests(steps: list[Step], fetched: frozenset[str]) -> list[Step]:
    """The steps of a variant whose install is up to date, with its fetch step run again
    when a test will run and the source folder it reads is not as it must be: a recorded
    build of a patched local folder stays up to date while builder's copy of the folder
    falls out of step on an edit that nothing compiled reads (the copy is brought in step
    only when something reads it)."""
    if not any(s.kind == "test" and s.status == BUILD for s in steps):
        return steps
    return [replace(s, status=BUILD, reason="") if s.kind == "fetch" and
            s.status != BUILD and s.outputs and Path(s.outputs[0]).name not in fetched
            else s for s in steps]


def passed(ctx: VariantContext, inputs_hash: str) -> bool:
    """Did the step with ``inputs_hash`` succeed, or was the variant published with its
    variant key (its tests passed then, or were not asked for)?"""
    return inputs_hash in ctx.done or ctx.variant.key in ctx.done


def test_steps(ctx: VariantContext, after: str, prefix_value: str,
               compiled: bool | None = None) -> tuple[list[Step], str]:
    """The recipe's test steps for this variant, chained, and the id the next step
    should wait for (a GPU-only test skipped here is not waited for).  ``compiled``
    (default: ``ctx.compiled``): what they test is up to date, so a test that passed
    with the same variant key is too."""
    v = ctx.variant
    status, reason, fix = variant_status(v)
    compiled = ctx.compiled if compiled is None else compiled
    if ctx.compiled:  # the stage was published into the install folder
        prefix_value = v.prefix
    out: list[Step] = []
    prev = after
    for index, t in enumerate(ctx.recipe.tests):
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
            env = tuple((k, env_reference(ctx.recipe.name, f"test/{t.name}", k)
                         if k in t.secret_env else substitute(e, vals)) for k, e in t.env)
            sid = f"{v.id}/test:{t.name}" + (f"@py{py}" if py and len(ctx.test_pythons) > 1
                                                else "")
            st, rs, fx = (status, reason, fix)
            optional = False
            inputs_hash = digest(v.key, sid.rpartition("/")[2])
            if uses_python and info is None:
                st, rs, fx = SKIP, f"no Python {py} interpreter found", f"pyenv install {py}"
            elif st == BUILD and compiled and passed(ctx, inputs_hash):
                st, rs = CACHED, "up to date: passed with the same variant key"
            elif st == BUILD and (skip := _optional_skip(ctx, t, py if uses_python else "")):
                st, (rs, fx), optional = SKIP, skip, True  # the build goes on without it
            out.append(Step(id=sid, kind="test", variant=v.id, commands=(argv,), env=env,
                            cwd=substitute(t.cwd, vals) if t.cwd else vals["build"]
                            if ctx.recipe.build_system == "cmake" else vals["source"],
                            deps=(prev,), status=st, reason=rs, fix=fx,
                            timeout=t.timeout, inputs_hash=inputs_hash,
                            secrets=test_secrets(ctx.recipe, index),
                            payload=TestRun(allow_empty=True) if t.allow_empty else None))
            if not optional:  # a GPU-only test skipped here does not hold the build back
                prev = sid
    return out, prev


def _optional_skip(ctx: VariantContext, t: TestSpec, py: str) -> tuple[str, str] | None:
    """(reason, fix) when the test step is skipped here without holding the build back:
    its option is off, tests were not asked for, this Python lacks what it imports, it
    runs on a cross target, or it needs a GPU this host lacks."""
    v = ctx.variant
    if t.enabled_by and ctx.options.get(t.enabled_by) is False:
        return (f"option {t.enabled_by} is off: the test is not built",
                f"-o {v.recipe}:{t.enabled_by}=true to build and run it")
    if not ctx.run_tests:
        return "tests not requested (--no-tests)", "drop --no-tests"
    problem = next((x for x in ctx.test_python_problems if py and x[0] == py), None)
    if problem:  # the build serves every Python; this one lacks what the tests import
        return problem[1], problem[2]
    if ctx.platform is not None and ctx.platform.cross:
        return ctx.platform.test_skip()  # they run on the target
    if t.needs_gpu and registry.get(ctx.kind).tool and not ctx.host.gpus:
        return (f"needs a {v.backend} GPU; none is visible on this host",
                "run the build on a machine with a GPU")
    return None


def collect_step(ctx: VariantContext, vals: dict[str, str], stage: Path, after: str,
                 common: StepCommon, clean: bool = False, wheel_from: str = "",
                 wheel_to: str = "") -> Step:
    """What builder puts into the stage itself: the wheel a python build made (unpacked,
    unless the recipe turns the project's rules off) and the recipe's ``install.files``
    — from the build and source trees, for projects whose install rules are missing or
    wrong."""
    r = ctx.recipe
    files = tuple((substitute(f.src, vals), substitute(f.dest, vals)) for f in r.install.files)
    for i, (src, _) in enumerate(files):
        whole = os.path.normpath(os.path.join(vals["source"], src.strip() or "."))
        if not src.strip() or whole in (os.path.normpath(vals["source"]), os.sep):
            raise _whole_tree(r, i, src)
    return Step(id=f"{ctx.variant.id}/collect", kind="collect", deps=(after,),
                outputs=(str(stage), *([wheel_to] if wheel_to else [])), **common,
                payload=CollectInstall(stage=str(stage), source=vals["source"], files=files,
                                       wheel_from=wheel_from, wheel_to=wheel_to,
                                       unpack=r.install.project_rules, clean=clean))


def _whole_tree(r: Recipe, i: int, src: str) -> RecipeError:
    """``install.files[i].from`` that names the whole source tree (or nothing)."""
    path = ("install", "files", i, "from")
    loc = r.positions.location(path) if r.positions else Location(r.display)
    return RecipeError([Diagnostic(
        Location(r.display, loc.line, loc.col), format_path(path),
        f"install.files from {r.install.files[i].src!r} is {src!r} once substituted: "
        f"{'nothing' if not src.strip() else 'the whole tree'}; builder never copies the "
        f"whole source tree into an install",
        "name the files or folder to collect (e.g. include, ${build}/libx.so)",
        r.positions.line_text(loc.line) if r.positions else "")])


def fetch_steps(ctx: VariantContext) -> list[Step]:
    """The step that brings a git or url source into ``.builder/sources/<key>``."""
    dest = ctx.fetched_dir()
    if dest is None:
        return []
    src, v, host = ctx.recipe.sources[0], ctx.variant, ctx.host
    partial = str(dest) + ".partial"
    commands: list[tuple[str, ...]] = []
    from builder.util.secrets import header_reference

    if src.kind == "git":
        from builder.recipe.semantic import is_full_rev

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
    status, reason, fix = variant_status(v)
    # a path source (patched, or it would not be here) is copied: its content digest is
    # what the copy must hold (State.fetched holds a copy only while it holds that)
    sha = ctx.source_digests.get(src.location, "") if src.kind == "path" else src.sha256
    if status == BUILD and dest.name in ctx.fetched:
        status = CACHED
    # git's credentials: an HTTP header from the environment (a reference the runner fills
    # in), never the URL on its command line
    env = (("GIT_CONFIG_COUNT", "1"), ("GIT_CONFIG_KEY_0", "http.extraHeader"),
           ("GIT_CONFIG_VALUE_0", header_reference(src.credential))) \
        if src.kind == "git" and src.credential else ()
    return [Step(id=f"{v.id}/fetch", kind="fetch", variant=v.id, commands=tuple(commands),
                 cwd=str(ctx.ws.state), outputs=(str(dest),), status=status, reason=reason,
                 fix=fix, inputs_hash=f"{dest.name}:{sha}" if src.kind == "path" else dest.name,
                 timeout=1800, env=env,
                 payload=FetchSource(kind=src.kind, location=src.location, rev=src.rev,
                                     sha256=sha, dest=str(dest), partial=partial,
                                     credential=src.credential,
                                     exclude=src.exclude, patches=len(src.patches)))]


def step_hash(key: str, name: str) -> str:
    """The inputs hash of a compile step: the compile key covers every input of a compile
    step; the step's name (``configure``) tells the steps apart.  (Paths in the commands
    are left out so that the same build in another folder hashes alike.)"""
    return digest(key, name)


def with_hash(step: Step, key: str) -> Step:
    """``step`` with its :func:`step_hash` (a step that has an inputs hash keeps it; one
    made with it is not copied again)."""
    if step.inputs_hash:
        return step
    return replace(step, inputs_hash=step_hash(key, step.id.rsplit("/", 1)[-1]))


def memory_config(ctx: VariantContext, source_root: str, build_dir: str) -> MemoryConfig:
    """How the build's memory broker admits the variant's compile jobs."""
    r = ctx.recipe
    return MemoryConfig(
        budget=ctx.budget, slots=ctx.jobs, source_root=source_root, build_dir=build_dir,
        recipe_default=r.memory.default, recipe_globs=r.memory.per_file,
        lowmem_flags=r.memory.low_memory_flags, history_path=str(ctx.ws.memory_history),
        scope=r.name)
