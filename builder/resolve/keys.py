"""Variant keys: a digest of every input that can change a variant's outputs, and the
pins (`builder lock`) that name those inputs one by one.

Two variants with the same key build the same files, so a complete install under that
key is reused ("cached") and a key published on a remote is downloaded.
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
from builder.workspace.state import State

__all__ = ["FORMAT", "KeyInputs", "conan_pins", "model_digest", "pins", "source_digest",
           "tool_versions", "variant_key"]

#: bump when the meaning of a plan changes, so that old caches are not reused
#: (the templates of generated files are hashed into every key as well)
FORMAT = "builder-1"

#: (Conan reference, provider, the system package's installed version or "")
ConanPin = tuple[str, str, str]


def model_digest(recipe: Recipe) -> str:
    """What in a recipe changes its builds: the model without its description, file
    name and positions — so editing a comment or moving the file rebuilds nothing."""
    # source folders are covered by their content digest, not by where they are
    sources = tuple(replace(src, location="" if src.kind == "path" else src.location,
                            patches=()) for src in recipe.sources)
    core = replace(recipe, description="", digest="", display="", positions=None,
                   file=Path("/"), sources=sources)
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
    empty = [t.name for t in recipe.tests if t.allow_empty]
    if empty:
        extra.append(("allow_empty", empty))
    if recipe.python.limited_api:  # it becomes BUILDER_PY_LIMITED_API, a compile define
        extra.append(("limited_api", recipe.python.limited_api))
    text = repr(extra) if extra else ""
    return text + (f"cxx_standard={recipe.cxx_standard}" if recipe.cxx_standard else "")


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
    deps: list[str]  # the dependencies' keys
    env: tuple[tuple[str, str], ...] = ()  # each ${env.X} the recipe substitutes, its value


def variant_key(k: KeyInputs) -> str:
    r = k.recipe
    return digest(FORMAT, render.templates_digest(), k.conan, r.name, r.version,
                  model_digest(r), k.sources, k.backend, k.build_type, list(k.archs),
                  sorted((n, option_text(v)) for n, v in k.options.items()),
                  k.python and (k.py_info.full if k.py_info else k.python), k.tools, k.deps,
                  *([k.env] if k.env else []))  # (recipes using no ${env.X} keep their keys)


def pins(k: KeyInputs) -> tuple[tuple[str, str], ...]:
    """What `builder lock` records for the variant, name by name."""
    return tuple(sorted({
        "source": ",".join(k.sources),
        **{f"toolchain.{t}": v for t, v in k.tools.items()},
        **{f"conan.{ref}": f"{prov} {ver}".strip() for ref, prov, ver in k.conan},
        **({"python": k.py_info.full} if k.python and k.py_info else {}),
    }.items()))
