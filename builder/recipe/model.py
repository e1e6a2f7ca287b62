"""The typed recipe model: what the loader hands to every later phase.

Nothing past :mod:`builder.recipe.validate` sees a raw dict.  All classes are frozen so
that a resolved plan cannot be changed behind the resolver's back, and every
collection is a tuple so that models hash and compare by value.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from builder.recipe.subst import Interpolated
from builder.recipe.yamlload import Positions

__all__ = [
    "BUILD_TYPES",
    "CMAKE_BUILD_TYPE",
    "LANGS",
    "BackendSpec",
    "BuildSpec",
    "ConanRequirement",
    "FlagLayers",
    "FlagSet",
    "InstallFile",
    "InstallSpec",
    "Kernel",
    "Memory",
    "Option",
    "OptionValue",
    "PythonSpec",
    "Recipe",
    "RecipeRequirement",
    "Requires",
    "Source",
    "SystemRequirement",
    "TestSpec",
    "digest",
    "option_text",
]

BUILD_TYPES = ("release", "debug", "relwithdebinfo")
CMAKE_BUILD_TYPE = {"release": "Release", "debug": "Debug", "relwithdebinfo": "RelWithDebInfo"}
LANGS = ("c", "cxx", "cuda", "hip", "metal", "ld")

OptionValue = bool | int | str | tuple[str, ...]


@dataclass(frozen=True)
class FlagSet:
    """Flags per language; ``ld`` is the linker."""

    c: tuple[str, ...] = ()
    cxx: tuple[str, ...] = ()
    cuda: tuple[str, ...] = ()
    hip: tuple[str, ...] = ()
    metal: tuple[str, ...] = ()
    ld: tuple[str, ...] = ()

    def __add__(self, other: FlagSet) -> FlagSet:
        if other == _NO_FLAGS:  # most layers are empty: nothing to copy
            return self
        return FlagSet(self.c + other.c, self.cxx + other.cxx, self.cuda + other.cuda,
                       self.hip + other.hip, self.metal + other.metal, self.ld + other.ld)

    def get(self, lang: str) -> tuple[str, ...]:
        value: tuple[str, ...] = getattr(self, lang)
        return value


_NO_FLAGS = FlagSet()


@dataclass(frozen=True)
class FlagLayers:
    """Flags for every build type (``common``) and for one build type."""

    common: FlagSet = FlagSet()
    release: FlagSet = FlagSet()
    debug: FlagSet = FlagSet()
    relwithdebinfo: FlagSet = FlagSet()

    def for_build_type(self, build_type: str) -> FlagSet:
        layer: FlagSet = getattr(self, build_type)
        return self.common + layer


@dataclass(frozen=True)
class Source:
    """One source: a local folder, a git commit or a verified archive."""

    kind: str  # "path" | "git" | "url"
    location: str  # the path (resolved, absolute), repository, or URL (without secrets)
    rev: str = ""
    sha256: str = ""
    patches: tuple[str, ...] = ()
    subdir: str = ""
    #: ``${secret:NAME}``: the recipe's URL with its user info or token, kept in the
    #: process's vault (builder.util.secrets), never in a plan, log or file; "" without.
    #: Out of the repr, which keys are made from: a new token is not a new source
    credential: str = field(default="", repr=False)
    #: globs of paths left out of the tree (not inputs, not copied); out of the repr so
    #: that sources without them keep their keys — the content digest leaves them out
    exclude: tuple[str, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class Option:
    name: str
    type: str  # bool | str | int | list
    default: OptionValue
    allowed: tuple[OptionValue, ...] = ()
    description: str = ""
    cmake: str = ""
    env: str = ""
    legacy_env: str = ""
    #: a secret's value: the plan holds a ``${secret:…}`` reference (out of the repr, which
    #: keys are made from, so that recipes without it keep their keys)
    secret: bool = field(default=False, repr=False)


@dataclass(frozen=True)
class BackendSpec:
    """What a recipe asks of one backend."""

    name: str
    tools: tuple[tuple[str, str], ...] = ()  # (tool, PEP 440 specifier)
    archs: tuple[str, ...] = ()
    os: tuple[str, ...] = ()
    flags: FlagLayers = FlagLayers()
    defines: tuple[tuple[str, str], ...] = ()
    formats: tuple[str, ...] = ()  # kernel artifact formats; () = the backend's default
    archs_option: str = ""  # a list option that replaces archs when set
    # A named backend (``arm: {kind: cpu, target: linux-armv8}``): the registry backend it
    # is and the target platform it builds for (data/targets.json).  Left out of the repr,
    # which keys are made from, so that backends without them keep their keys;
    # resolve.model_digest adds them when they are set.
    kind: str = field(default="", repr=False)  # "" = the name is the registry backend
    target: str = field(default="", repr=False)  # "" = the host's platform
    #: device-code compression (``nvcc --compress-mode``); "" = the backend's default.
    #: Out of the repr like ``kind``; resolve.model_digest adds it when it is set
    compress_mode: str = field(default="", repr=False)

    @property
    def backend_kind(self) -> str:
        """The registry backend (cpu, cuda, rocm, metal) this backend is."""
        return self.kind or self.name


@dataclass(frozen=True)
class Memory:
    default: int = 0  # bytes; 0 = let the scheduler use its priors
    per_file: tuple[tuple[str, int], ...] = ()
    low_memory_flags: tuple[str, ...] = ()
    unity: bool | str = False  # or "${options.NAME}"
    unity_batch_size: int = 8
    pch: bool | str = False  # or "${options.NAME}"
    pch_headers: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecipeRequirement:
    name: str
    spec: str = ""


@dataclass(frozen=True)
class ConanRequirement:
    ref: str  # name/version
    provider: str = "system"  # system | remote

    @property
    def name(self) -> str:
        return self.ref.split("/", 1)[0]

    @property
    def version(self) -> str:
        return self.ref.split("/", 1)[1]


@dataclass(frozen=True)
class SystemRequirement:
    packages: tuple[str, ...]
    when: str = ""  # "" or "${options.NAME}" (a bool option)
    why: str = ""


@dataclass(frozen=True)
class Requires:
    recipes: tuple[RecipeRequirement, ...] = ()
    conan: tuple[ConanRequirement, ...] = ()
    python: tuple[str, ...] = ()
    system: tuple[SystemRequirement, ...] = ()


@dataclass(frozen=True)
class PythonSpec:
    versions: tuple[str, ...] = ()
    abi: str = "none"  # none | cpython | abi3
    package: str = "python"
    #: abi3: the oldest Python whose limited API the extension uses ("" = lowest version)
    limited_api: str = field(default="", repr=False)

    @property
    def per_python(self) -> bool:
        """Is the native build done once per Python version (an extension built against
        one CPython's ABI)?  ``none`` and ``abi3`` build once for every Python."""
        return self.abi == "cpython"

    @property
    def abi3_floor(self) -> str:
        """The Python an abi3 wheel needs at least (``3.9``)."""
        if self.limited_api:
            return self.limited_api
        return min(self.versions, key=lambda v: tuple(int(x) for x in v.split("."))) \
            if self.versions else ""


@dataclass(frozen=True)
class WheelSpec:
    """How a wheel is made fit for a package index (``wheel:`` in the recipe)."""

    manylinux: str = "auto"  # auto | none | manylinux_2_28 | manylinux2014 ...
    exclude: tuple[str, ...] = ()  # sonames the runtime provides (wildcards allowed)
    requires: tuple[str, ...] = ()  # extra Requires-Dist
    #: one variant wheel per GPU arch besides the all-arch one: it adds variants (each
    #: with its own keys), so it is kept out of the repr that the wheel's key digests
    variants: bool = field(default=False, repr=False)


@dataclass(frozen=True)
class TestSpec:
    name: str
    run: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    backends: tuple[str, ...] = ()
    devices: tuple[tuple[str, str], ...] = ()
    timeout: int = 1800
    needs_gpu: bool = False
    cwd: str = ""
    #: the command may run no test at all (otherwise a run that found none fails); kept
    #: out of the repr, which keys are made from (keys.model_digest adds it when set)
    allow_empty: bool = field(default=False, repr=False)
    #: a bool option that builds the test: off, the test is skipped (out of the repr like
    #: allow_empty; the option's value is in the compile key)
    enabled_by: str = field(default="", repr=False)
    #: environment variables passed from the invoking shell at run time, by name (never
    #: keyed, never in a plan: builder.resolve.stepenv)
    secrets: tuple[str, ...] = field(default=(), repr=False)
    #: the ``env`` entries declared ``secret: true``: the plan holds a reference
    secret_env: tuple[str, ...] = field(default=(), repr=False)

    def device_for(self, backend: str) -> str:
        return dict(self.devices).get(backend, backend)


@dataclass(frozen=True)
class InstallFile:
    """Files the recipe collects into the install prefix itself: ``src`` is a file, a
    folder (copied with its tree) or a glob (matches copied flat), ``${source}``/``${build}``
    substituted, relative to the source root otherwise; ``dest`` a folder below the prefix."""

    src: str
    dest: str


@dataclass(frozen=True)
class InstallSpec:
    root: str = ""
    layout: str = "${backend}/${kernel}/${arch}.${ext}"
    # The two below are kept out of the repr (keys are made from it; keys.model_digest
    # adds them when set), so that recipes without them keep their keys.
    #: collected into the prefix after the project's own install (or instead of it)
    files: tuple[InstallFile, ...] = field(default=(), repr=False)
    #: run the project's own install rules (``cmake --install``, ``xmake install``)
    project_rules: bool = field(default=True, repr=False)


@dataclass(frozen=True)
class BuildSpec:
    """How a ``python`` or ``xmake`` build is driven (unused by cmake and kernels)."""

    #: python: ``pip`` (``pip wheel --no-build-isolation``) or ``build`` (``python -m build``)
    frontend: str = "pip"
    #: environment of the build command; values may use ``${...}`` (options, archs…)
    env: tuple[tuple[str, str], ...] = ()
    #: python: PEP 517 config settings (``-C key=value``), values may use ``${...}``
    config_settings: tuple[tuple[str, str], ...] = ()
    #: xmake: extra ``xmake f`` arguments (bool options substitute as y/n)
    configure_args: tuple[str, ...] = ()
    #: environment variables passed from the invoking shell to the steps that build, at
    #: run time, by name (never keyed, never in a plan: builder.resolve.stepenv)
    secrets: tuple[str, ...] = field(default=(), compare=False)
    #: the ``env`` entries declared ``secret: true``: the plan holds a reference
    secret_env: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Kernel:
    name: str
    sources: tuple[tuple[str, str], ...]  # (backend, file relative to the source root)
    min_arch: tuple[tuple[str, str], ...] = ()
    flags: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def source_for(self, backend: str) -> str | None:
        return dict(self.sources).get(backend)


@dataclass(frozen=True)
class Recipe:
    """A validated recipe."""

    name: str
    version: str
    file: Path  # the recipe file (absolute)
    display: str  # how the file is named in messages
    description: str = ""
    sources: tuple[Source, ...] = ()
    build_system: str = "cmake"
    build_types: tuple[str, ...] = ("release",)
    enabled_by: str = ""  # a bool option that switches the recipe on/off
    targets: tuple[str, ...] = ()
    #: the default compiler cache; it changes how, not what, is built: not in the key
    compiler_cache: str = field(default="", repr=False, compare=False)
    #: informational (wheel metadata); kept out of the repr, so out of the variant key
    license: str = field(default="", repr=False, compare=False)
    homepage: str = field(default="", repr=False, compare=False)
    #: the C++ standard asked of the compiler ("20", "gnu17"); "": the project chooses.
    #: Out of the repr (recipes without it keep their keys); resolve.model_digest adds it
    cxx_standard: str = field(default="", repr=False)
    options: tuple[Option, ...] = ()
    backends: tuple[BackendSpec, ...] = ()
    flags: FlagLayers = FlagLayers()
    defines: tuple[tuple[str, str], ...] = ()
    memory: Memory = Memory()
    requires: Requires = Requires()
    python: PythonSpec = PythonSpec()
    tests: tuple[TestSpec, ...] = ()
    install: InstallSpec = InstallSpec()
    kernels: tuple[Kernel, ...] = ()
    #: out of the repr (which variant keys are made from): it changes the wheel, not the
    #: compiled files; the wheel step's inputs hash holds it
    wheel: WheelSpec = field(default=WheelSpec(), repr=False)
    #: python/xmake build settings; out of the repr like InstallSpec's new fields
    build_spec: BuildSpec = field(default=BuildSpec(), repr=False)
    digest: str = ""  # sha256 of the recipe file's bytes
    positions: Positions | None = field(default=None, compare=False, hash=False, repr=False)
    #: every text substitution applies to, with its place and key side (derived from the
    #: schema by the loader: :func:`builder.recipe.subst.interpolated`); the texts
    #: themselves are keyed as fields, this says which ``${env.X}`` they read
    substituted: tuple[Interpolated, ...] = field(default=(), compare=False, hash=False,
                                                  repr=False)

    def backend(self, name: str) -> BackendSpec | None:
        return self._backends_by_name.get(name)

    @functools.cached_property
    def _backends_by_name(self) -> dict[str, BackendSpec]:
        """Backends by name, made once: a lookup per variant stays O(1) for a recipe of
        thousands of backends (the first of a repeated name wins, as a scan would)."""
        out: dict[str, BackendSpec] = {}
        for b in self.backends:
            out.setdefault(b.name, b)
        return out

    def option(self, name: str) -> Option | None:
        for o in self.options:
            if o.name == name:
                return o
        return None

    @property
    def backend_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.backends)


def option_text(value: OptionValue) -> str:
    """An option value as text: bools True/False, lists ``;``-joined."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, tuple):
        return ";".join(value)
    return str(value)


#: ``json.dumps(x, sort_keys=True, default=str)``, its encoder made once: ``json.dumps``
#: makes a new one per call when given options, and a plan makes a digest per step
_CANONICAL = json.JSONEncoder(sort_keys=True, default=str).encode


def digest(*parts: object) -> str:
    """sha256 of a canonical JSON rendering: the one way keys are made."""
    return hashlib.sha256(_CANONICAL(parts).encode()).hexdigest()
