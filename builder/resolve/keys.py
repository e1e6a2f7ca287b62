"""Keys: digests of every input that can change a variant's outputs, in two layers, and
the pins (`builder lock`) that name those inputs one by one.

* The **compile key** covers what changes the compiled files: build, stage and install
  folders, the published install tree (manifest ``key``), the Conan package (option
  ``builder_key``), the package on a remote and the wheel folder are all found by it.
  The compile steps (fetch, render, conan-install, configure, prepare, build, stage,
  collect, export, publish; kernel entries and the kernel tree) are up to date when an
  install (or kernel tree) with that key is complete.
* The **variant key** is the compile key plus what only the tests and the wheel use.
  Test and wheel steps are keyed by it: editing a test command reruns the tests (and
  remakes the wheel), never a compile.

Which side each recipe field (:class:`builder.recipe.model.Recipe`) is on — when in
doubt a field is on the compile side (a needless rebuild, never a stale one):

=========================  =============================================================
compile key                ``name``, ``version``, ``sources`` (their content digest,
                           commit or sha256, and the patches' digests), ``build_system``
                           and ``build.*`` (frontend, env, config_settings,
                           configure_args), ``build_types`` (the variant's build type),
                           ``enabled_by``, ``targets``, ``cxx_standard``, ``options``
                           (declarations and the values), ``backends`` (tools, archs, os,
                           flags, defines, formats, archs_option, kind, target),
                           ``flags``, ``defines``, ``memory`` (unity/PCH change the
                           compile; the rest is kept on this side too), ``requires``
                           (recipes — through their compile keys —, conan pins, system,
                           python: the specifications and the versions installed in the
                           build's interpreter; builder cannot tell a test-only Python
                           requirement from a build one), ``python`` (versions, abi,
                           package, limited_api), ``install`` (root, layout, files,
                           project_rules), ``kernels``; and from outside the recipe: the
                           toolchain versions, the archs, the Python (per-Python
                           variants), each ``${env.X}`` substituted into a compile input,
                           the templates of generated files and :data:`FORMAT`
variant key only           ``tests`` (every field: name, run, env, cwd, backends,
                           devices, timeout, needs_gpu, allow_empty) and each ``${env.X}``
                           they substitute; ``description`` (the wheel's summary) and
                           ``wheel`` (manylinux, exclude, requires)
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
from builder.workspace.state import State

__all__ = ["FORMAT", "KeyInputs", "compile_key", "conan_pins", "model_digest", "pins",
           "python_requirements", "source_digest", "test_digest", "tool_versions",
           "variant_key"]

#: bump when the meaning of a plan or a key changes, so that old caches are not reused
#: (the templates of generated files are hashed into every key as well).  builder-2: the
#: key split in two (compile key, variant key)
FORMAT = "builder-2"

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
    return hashlib.sha256((repr(core) + (repr(named) if named else "") +
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
    deps: list[str]  # the dependencies' compile keys
    env: tuple[tuple[str, str], ...] = ()  # each ${env.X} a compile input substitutes
    test_env: tuple[tuple[str, str], ...] = ()  # each ${env.X} only the tests substitute
    #: python_requirements(): the build interpreter's versions of requires.python
    py_reqs: tuple[tuple[str, str], ...] = ()


def compile_key(k: KeyInputs) -> str:
    """The digest of everything that changes the variant's compiled files."""
    r = k.recipe
    return digest(FORMAT, render.templates_digest(), k.conan, r.name, r.version,
                  model_digest(r), k.sources, k.backend, k.build_type, list(k.archs),
                  sorted((n, option_text(v)) for n, v in k.options.items()),
                  k.python and (k.py_info.full if k.py_info else k.python), k.tools, k.deps,
                  k.env, k.py_reqs)


def variant_key(k: KeyInputs) -> str:
    """The compile key plus what only the tests and the wheel use."""
    return digest(FORMAT, "variant", compile_key(k), test_digest(k.recipe), k.test_env)


def pins(k: KeyInputs) -> tuple[tuple[str, str], ...]:
    """What `builder lock` records for the variant, name by name."""
    return tuple(sorted({
        "source": ",".join(k.sources),
        **{f"toolchain.{t}": v for t, v in k.tools.items()},
        **{f"conan.{ref}": f"{prov} {ver}".strip() for ref, prov, ver in k.conan},
        **({"python": k.py_info.full} if k.python and k.py_info else {}),
    }.items()))
