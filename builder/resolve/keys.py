"""Keys: digests of every input that can change a variant's outputs, in layers, and
the pins (`builder lock`) that name those inputs one by one.

* The **config key** covers everything but the content of the source folders a CMake
  build reads in place: the recipe's compile fields, the toolchains *by content*
  (:mod:`builder.host.identity`: the sha256 of what runs — through symlinks, wrapper
  scripts and compiler caches, and the programs a driver runs — with its version
  output), the dependencies' identities (:func:`identity_key`), the options, archs,
  Python and ``${env.X}``
  values.  It names the variant's build, stage and install folders, so that a source
  edit rebuilds incrementally in the same build folder.
* The **compile key** covers what changes the compiled files: the published install tree
  (manifest ``key``), the Conan package (option ``builder_key``), the package on a remote
  and the wheel folder are all found by it.  The compile steps (fetch, render,
  conan-install, configure, prepare, build, stage, collect, export, publish; kernel
  entries and the kernel tree) are up to date when an install (or kernel tree) with that
  key is complete.  :func:`compile_key` decides it, purely:

  - a **recorded** variant (:func:`recorded`): a CMake, Python (pip / ``python -m
    build``) or xmake build of one local folder, in place or from builder's patched (or
    ``exclude``-filtered) copy of it — a copy kept in step with the folder, where only
    what differs is rewritten, so that a CMake build folder follows it — or a CMake build
    of several unpatched local folders in place.  When an install made
    with the same config key has a **record** of what its build read and nothing
    recorded changed, the key is that install's key: a README edit that nothing reads, or
    a test-data edit, recompiles nothing, and dependents (keyed by this key) nothing
    either.  The record (:mod:`builder.source.inputs`, :mod:`builder.source.launched`)
    holds every file outside builder's folders the build read, by content, and the set
    of file names in each source folder: for CMake, Ninja's deps log, every input of
    ``build.ninja`` including CMake's configure inputs, depfiles, the files the install
    rules and ``install.files`` copy; for pip and xmake builds, the depfile of every
    compile (the memory launcher adds ``-MD -MF`` or copies the compile's own:
    :mod:`builder.memory.depfiles`), every file the build's Python processes opened for
    reading and every module they imported (an audit hook:
    :mod:`builder.source.reads` — ``setup.py``, ``pyproject.toml``, a README read as the
    long description, the Python files copied into the wheel), the ``build.ninja`` inputs
    of the CMake runs they started, every ``*.lua`` of the folder and the files they name
    (xmake), the source files the staged install holds copies of, and ``install.files``;
    a patched copy's files are recorded as the user's files they were made from (the
    patches are in the config key).  No record is taken — the key stays conservative —
    when it cannot be complete: no deps log or depfile, a compile the launcher could not
    name a depfile for, an object older than the depfiles, a build that started a
    program whose reads nobody sees (``make``, a shell, a Python run with ``-I``/``-E``/
    ``-S``, a compiler not run through the wrappers).  Otherwise (no record yet: the
    first build; or a recorded file changed) the key is conservative: a digest of the
    config key, every source folder's whole content and what the recorded files hold
    now;
  - any other variant (git or url sources, several folders one of which is patched):
    the config key with every source folder's whole content.  (Kernel artifacts are
    keyed one by one: :mod:`builder.resolve.kernelsteps`.)

  Guarantee: a published key names content — the config and the whole source folders
  as they were when it was built, which is a superset of what the build read — and a
  later plan reuses it only while every file that build read is unchanged.  So "nothing
  to do" never hides a change to a file the build read, to a file name in a source
  folder, to a toolchain binary or to any recipe compile field.
* The **variant key** is the compile key plus what only the tests use, plus the source
  folders' whole content (test data is read by tests, not compiles).  Test steps are
  keyed by it: editing a test command or a test data file reruns the tests, never a
  compile.  A wheel step is keyed by the compile key and the wheel's settings (its
  *packaging key*, :mod:`builder.resolve.wheelsteps`) — but a kernel recipe's, which packs
  a folder of the source tree, by the variant key.
* **Dependencies** enter a dependent's compile key by what their installs hold (the
  output digest of the install's manifest: each file's sha256, each link's target), not
  by their keys: a dependency rebuilt to byte-identical output leaves its dependents up
  to date ("early cutoff", as Bazel and Shake do).  While a dependency is still to be
  built its output is unknown: the dependent's key is *pending* (:func:`pending`), the
  plan says so, and ``builder build`` plans it again once the dependency is built.

Which side each recipe field (:class:`builder.recipe.model.Recipe`) is on — when in
doubt a field is on the compile side (a needless rebuild, never a stale one):

=========================  =============================================================
compile key                ``name``, ``version``, ``sources`` (their content digest,
                           commit or sha256, and the patches' digests; for recorded
                           variants, what the build recorded reading), ``build_system``
                           and ``build.*`` (frontend, env, config_settings,
                           configure_args), ``build_types`` (the variant's build type),
                           ``enabled_by``, ``targets``, ``cxx_standard``, ``options``
                           (declarations and the values), ``backends`` (tools, archs, os,
                           flags, defines, formats, archs_option, kind, target,
                           compress_mode — and the device-code flags it selects),
                           ``flags``, ``defines``, ``memory`` (unity/PCH change the
                           compile; the rest is kept on this side too), ``requires``
                           (recipes — what their installs hold —, conan pins, system,
                           python: the specifications and the versions installed in the
                           build's interpreter; builder cannot tell a test-only Python
                           requirement from a build one), ``python`` (versions, abi,
                           package, limited_api), ``install`` (root, layout, files,
                           project_rules), ``kernels``; and from outside the recipe: the
                           toolchain versions and identities, the archs, the Python
                           (per-Python variants), each ``${env.X}`` substituted into a
                           compile input, the templates of generated files and
                           :data:`FORMAT`
variant key only           ``tests`` (every field: name, run, env, cwd, backends,
                           devices, timeout, needs_gpu, allow_empty) and each ``${env.X}``
                           they substitute; ``description`` (the wheel's summary) and
                           ``wheel`` (manylinux, exclude, requires); the source folders'
                           whole content (a test may read any file; the wheel's SBOM
                           names the folder's digest)
neither                    ``file``, ``display``, ``digest``, ``positions`` (where the
                           recipe is, not what it says), ``compiler_cache`` (how, not
                           what, is built), ``license`` and ``homepage`` (used by nothing)
=========================  =============================================================
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

from builder.backends import Backend
from builder.backends.platforms import Platform
from builder.host.facts import HostFacts, PythonInfo
from builder.recipe.model import BuildSpec, OptionValue, Recipe, digest, option_text
from builder.resolve import render
from builder.resolve.system import packages_for
from builder.resolve.system import table as system_table
from builder.util.memo import per_object
from builder.workspace.state import InstallRecord, State

__all__ = ["BY_KEY", "FORMAT", "LAUNCHED_RECORDS", "OUTPUT", "PENDING", "KeyInputs",
           "compile_key", "conan_pins", "config_key", "identity_key", "model_digest",
           "own_key", "pending", "pins",
           "python_requirements", "recorded", "source_digest", "test_digest",
           "tool_versions", "toolchain", "variant_key"]

#: bump when the meaning of a plan or a key changes, so that old caches are not reused
#: (the templates of generated files are hashed into every key as well).  builder-2: the
#: key split in two (compile key, variant key); builder-3: toolchains by content, the
#: config key, recorded inputs
FORMAT = "builder-3"

#: (Conan reference, provider, the system package's installed version or "")
ConanPin = tuple[str, str, str]


@per_object
def model_digest(recipe: Recipe) -> str:
    """What in a recipe changes its compiled files: the model without its tests, its
    description, file name and positions — so editing a test, a comment or moving the
    file recompiles nothing (:func:`test_digest` holds the tests)."""
    # source folders are covered by their content digest, not by where they are
    sources = tuple(replace(src, location="" if src.kind == "path" else src.location,
                            patches=()) for src in recipe.sources)
    core = replace(recipe, description="", digest="", display="", positions=None,
                   file=Path("/"), sources=sources, tests=())
    # named backends' kind and target are kept out of the repr (so that recipes without
    # them keep their keys) and added here
    named = [(b.name, b.kind, b.target) for b in recipe.backends if b.kind or b.target]
    compress = [(b.name, b.compress_mode) for b in recipe.backends if b.compress_mode]
    return hashlib.sha256((repr(core) + (repr(named) if named else "") +
                           (repr(compress) if compress else "") +
                           _later_fields(recipe)).encode()).hexdigest()


def _later_fields(recipe: Recipe) -> str:
    """Fields added after keys existed, kept out of the repr: only set ones count, so that
    a recipe that does not use them keeps its key."""
    extra: list[object] = []
    if recipe.build_spec != BuildSpec():
        extra.append(("build", recipe.build_spec.frontend, recipe.build_spec.env,
                      recipe.build_spec.config_settings, recipe.build_spec.configure_args))
    if recipe.install.files or not recipe.install.project_rules:
        extra.append(("install", recipe.install.files, recipe.install.project_rules))
    if recipe.python.limited_api:  # it becomes BUILDER_PY_LIMITED_API, a compile define
        extra.append(("limited_api", recipe.python.limited_api))
    text = repr(extra) if extra else ""
    return text + (f"cxx_standard={recipe.cxx_standard}" if recipe.cxx_standard else "")


@per_object
def test_digest(recipe: Recipe) -> str:
    """What in a recipe only its tests and its wheel use: the tests (every field), the
    description (the wheel's summary) and the wheel settings."""
    tests = [(repr(t), t.allow_empty) for t in recipe.tests]
    return digest("tests", tests, recipe.description, repr(recipe.wheel))


def python_requirements(recipe: Recipe, py: PythonInfo | None) -> list[tuple[str, str]]:
    """(name, version installed in the build's interpreter) of each ``requires.python``:
    a torch extension compiled against another torch is another build."""
    from packaging.requirements import Requirement

    if py is None:
        return []
    names = sorted({Requirement(t).name.lower() for t in recipe.requires.python})
    return [(n, py.package(n) or "") for n in names]


def source_digest(recipe: Recipe, state: State) -> list[str]:
    """Each source's content digest (path), commit (git) or sha256 (url), then each
    patch's digest."""
    sources, files = dict(state.source_digests), dict(state.file_digests)
    return [sources.get(s.location, "") or s.rev or s.sha256 for s in recipe.sources] + \
        [files.get(p, "") for s in recipe.sources for p in s.patches]


def tool_versions(host: HostFacts, be: Backend, platform: Platform | None) -> dict[str, str]:
    """The versions of the tools whose output ends up in the build."""
    tools = {t: (info.version if (info := host.tool(t)) else "")
             for t in ("cmake", "cxx", "conan", *([be.tool] if be.tool else []))}
    tools.update(platform.versions if platform else ())  # the cross compilers
    return tools


def toolchain(host: HostFacts, be: Backend, platform: Platform | None,
              build_system: str = "cmake") -> tuple[tuple[str, str], ...]:
    """The content identity (:attr:`ToolInfo.identity`) of each tool whose output ends up
    in the build: a binary swapped behind the same version string is another build."""
    names = ["cmake", "cc", "cxx", "conan", *([be.tool] if be.tool else []),
             *(["xmake"] if build_system == "xmake" else []),
             *(exe for exe, _ in (platform.versions if platform else ()))]
    return tuple((n, info.identity) for n in dict.fromkeys(names)
                 if (info := host.tool(n)) is not None and info.identity)


#: build systems whose builds leave a record builder reads of what they read, beyond
#: CMake's (Ninja's deps log): the compiles go through the memory launcher (depfiles), and
#: Python processes log their reads (builder.source.reads)
LAUNCHED_RECORDS = ("python", "xmake")


def recorded(recipe: Recipe) -> bool:
    """Whether the variant's compile key comes from the record of what its build read:
    a build of local folders — a CMake build of folders it reads in place, or of one
    folder through builder's copy of it (Ninja keeps the record), or a Python or xmake
    build of one local folder, in place or through the copy (the launcher's depfiles, the
    Python processes' logs); the copy's files are recorded as the user's."""
    if not recipe.sources or not all(s.kind == "path" for s in recipe.sources):
        return False
    if recipe.build_system == "cmake":  # builder's copy of one folder, or folders in place
        return len(recipe.sources) == 1 or not any(s.patches or s.exclude
                                                   for s in recipe.sources)
    return recipe.build_system in LAUNCHED_RECORDS and len(recipe.sources) == 1


def conan_pins(recipe: Recipe, host: HostFacts, multiarch: str) -> list[ConanPin]:
    installed = dict(host.system_packages)
    out = []
    for c in recipe.requires.conan:
        row = system_table().get(c.name, {})
        names = packages_for({"packages": [row.get("version_of", "")],
                              "build_packages": row.get("build_packages", ())}, multiarch)
        out.append((c.ref, c.provider, installed.get(names[0], "")))
    return out


@dataclass(frozen=True)
class KeyInputs:
    """Everything a variant's key is made of, gathered by the resolver."""

    recipe: Recipe
    backend: str
    build_type: str
    python: str  # "" for a Python-independent variant
    py_info: PythonInfo | None
    archs: tuple[str, ...]
    options: dict[str, OptionValue]
    sources: list[str]  # source_digest()
    tools: dict[str, str]  # tool_versions()
    conan: list[ConanPin]  # conan_pins()
    #: each dependency's identity (:func:`identity_key`): which configuration of it is
    #: consumed — names the folders, never the content
    deps: list[str]
    env: tuple[tuple[str, str], ...] = ()  # each ${env.X} a compile input substitutes
    test_env: tuple[tuple[str, str], ...] = ()  # each ${env.X} only the tests substitute
    #: python_requirements(): the build interpreter's versions of requires.python
    py_reqs: tuple[tuple[str, str], ...] = ()
    #: toolchain(): each tool's identity by content
    toolchain: tuple[tuple[str, str], ...] = ()
    #: the flags builder adds to the device code (``--compress-mode=size``): its default
    #: changes with the toolchain, so the flags themselves are keyed (when there are any)
    code_flags: tuple[str, ...] = ()
    #: what each dependency's install holds (:data:`OUTPUT` + its output digest), or
    #: :data:`PENDING` + its compile key while it is still to be built
    dep_outputs: tuple[str, ...] = ()


#: a dependency whose install is there: the dependent is keyed by what that install holds
OUTPUT = "output "
#: a dependency still to be built: the dependent's compile key waits for its output
PENDING = "pending "
#: a dependency whose output is not an install tree builder digests (a kernel tree): the
#: dependent is keyed by its compile key
BY_KEY = "key "


def config_key(k: KeyInputs, sources: bool = True) -> str:
    """Everything that changes the compiled files but the content of source folders a
    recorded build reads (see the module's docstring); ``sources=False``: nor
    the content of any source folder (:func:`identity_key`)."""
    return _config_key(k) if sources else _digest_config(k, sources=False)


@per_object
def _config_key(k: KeyInputs) -> str:
    """:func:`config_key`, made once per key inputs (the compile, own and variant keys
    each start from it)."""
    return _digest_config(k, sources=True)


def _digest_config(k: KeyInputs, sources: bool) -> str:
    r = k.recipe
    return digest(FORMAT, render.templates_digest(), k.conan, r.name, r.version,
                  model_digest(r), "recorded" if not sources else
                  _recorded_sources(k) if recorded(r) else k.sources,
                  k.backend,
                  k.build_type, list(k.archs),
                  sorted((n, option_text(v)) for n, v in k.options.items()),
                  k.python and (k.py_info.full if k.py_info else k.python), k.tools, k.deps,
                  k.env, k.py_reqs, list(k.toolchain),
                  *([list(k.code_flags)] if k.code_flags else []))


def _recorded_sources(k: KeyInputs) -> object:
    """What a recorded variant's config key holds of its sources: not their content (the
    record covers what the build read of it), but each patch's digest, which makes the
    copy it is built from."""
    patches = k.sources[len(k.recipe.sources):]
    return ["recorded", *patches] if patches else "recorded"


def identity_key(k: KeyInputs) -> str:
    """Which configuration of a variant a dependent consumes: the config key without the
    content of any source folder.  A dependent's config key (its folders) holds it, so
    that a dependency's source edit leaves the dependent's folders — and its install,
    reused when the dependency's output comes out identical — where they are."""
    return config_key(k, sources=False)


def own_key(k: KeyInputs, record: InstallRecord | None = None) -> str:
    """The compile key less what the dependencies' installs hold; ``record``: the install
    made with the same config key, checked against the disk (:meth:`State.record`) — its
    own key while nothing its build read changed."""
    cfg = config_key(k)
    if not recorded(k.recipe):
        return cfg
    if record is not None and record.ok and record.config_key == cfg:
        return record.key
    current = record.current if record is not None and record.config_key == cfg else ""
    return digest(FORMAT, "sources", cfg, k.sources, current)


def compile_key(k: KeyInputs, record: InstallRecord | None = None) -> str:
    """The digest of everything that changes the variant's compiled files: its own key
    (:func:`own_key`) and what each dependency's install holds — not the dependency's
    key: a dependency rebuilt to byte-identical output leaves its dependents up to date
    ("early cutoff")."""
    own = own_key(k, record)
    return digest(FORMAT, "deps", own, list(k.dep_outputs)) if k.dep_outputs else own


def pending(k: KeyInputs) -> bool:
    """Whether the compile key waits for a dependency still to be built."""
    return any(d.startswith(PENDING) for d in k.dep_outputs)


def variant_key(k: KeyInputs, record: InstallRecord | None = None) -> str:
    """The compile key plus what only the tests and the wheel use, and — for a recipe with
    tests, or a kernel recipe's wheel (it packs a folder of the source tree) — the whole
    source folders (test data, the wheel's files).  Any other wheel holds what the
    compile key covers (builder.resolve.wheelsteps)."""
    r = k.recipe
    return digest(FORMAT, "variant", compile_key(k, record), test_digest(r), k.test_env,
                  k.sources if r.tests or (r.python.versions and r.build_system == "kernels")
                  else "")


#: model fields added after lockfiles existed: pinned only when set, so that a lockfile of
#: a recipe that does not use them keeps its pins
_PINNED_WHEN_SET = frozenset({"compress_mode"})


@per_object
def _recipe_pins(r: Recipe) -> dict[str, str]:
    """The digest of each field of the recipe that :func:`pins` records, made once per
    recipe (it is the same for each of the recipe's variants, and a recipe of N variants
    holds N backends: made per variant, planning took N² time)."""
    from dataclasses import fields, is_dataclass

    #: a dataclass's field names by type (None: not a dataclass), found once per type
    names: dict[type, tuple[str, ...] | None] = {}

    def plain(x: object) -> object:  # every field, those kept out of a repr too
        t = type(x)
        if t is str:  # most values: said first (a recipe of N backends has N of each)
            return x
        if t not in names:
            names[t] = tuple(f.name for f in fields(x)) \
                if is_dataclass(x) and not isinstance(x, type) else None
        own = names[t]
        if own is not None:
            out = {}
            for n in own:
                v = getattr(x, n)
                if n not in _PINNED_WHEN_SET or v:
                    out[n] = plain(v)
            return out
        return [plain(i) for i in x] if isinstance(x, tuple | list) else x

    where = {"file", "display", "digest", "positions", "substituted", "compiler_cache",
             "sources"}  # sources: "source"; substituted: the texts of other fields
    return {f"recipe.{f.name}": digest(f.name, plain(getattr(r, f.name)))[:16]
            for f in fields(r) if f.name not in where}


def pins(k: KeyInputs) -> tuple[tuple[str, str], ...]:
    """What `builder lock` records for the variant, name by name: the source, the
    toolchains, the Conan references, the Python — and the recipe's own inputs, one digest
    per field of the model (``recipe.flags``, ``recipe.defines``, …, every field but where
    the recipe is and its compiler cache, which changes how, not what, is built), and
    each ``${env.X}`` it substitutes (``env.X``: a digest of the value), so that a changed
    flag or variable is drift a lockfile refuses, by name."""
    r = k.recipe
    recipe_pins = _recipe_pins(r)
    return tuple(sorted({
        "source": ",".join(k.sources),
        **{f"toolchain.{t}": v for t, v in k.tools.items()},
        **{f"conan.{ref}": f"{prov} {ver}".strip() for ref, prov, ver in k.conan},
        **({"python": k.py_info.full} if k.python and k.py_info else {}),
        "recipe": model_digest(r)[:16],
        **recipe_pins,
        **{f"env.{n}": digest("env", v)[:16] for n, v in (*k.env, *k.test_env)},
    }.items()))
