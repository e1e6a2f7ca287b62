"""One recipe format: the JSON Schema, the typed model and the loader cannot drift.

``MAPPING`` below says, for every property path of ``builder/resources/recipe.schema.json``,
which attribute of :class:`builder.recipe.model.Recipe` it becomes.  The tests check it
three ways:

* every schema path is in ``MAPPING`` (or in ``NOT_IN_MODEL``, with the reason), and every
  key of those tables is still a schema path;
* every dataclass field reachable from ``Recipe`` lies on some ``MAPPING`` target (or is in
  ``DERIVED``, with the reason), and every target is a real attribute path;
* a round trip: recipes that set every leaf of the schema to a distinctive value are loaded
  with the real loader, and each value is found at the mapped attribute; recipes that leave
  them out get the schema's documented defaults.

Schema paths: ``a.b`` a property, ``*`` an ``additionalProperties`` entry (a path ending in
``*`` whose value has properties of its own is the entry's *name*; otherwise the name and its
value), ``[]`` the items of an array of objects (an array of scalars is one leaf).
Model paths: ``Recipe.field.field``, ``field[]`` iterating a tuple of dataclasses, and
``a/b`` as the last part for a value that becomes two fields.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from builder.recipe import model as m
from builder.recipe.recipeset import load_recipe
from builder.recipe.validate import parse_size, schema

# -- the tables ------------------------------------------------------------------------------

_LAYERS = ("common", "release", "debug", "relwithdebinfo")  # $defs/flaglayers
_LANGS = ("c", "cxx", "cuda", "hip", "metal", "ld")  # $defs/flagset


def _flag_paths(schema_prefix: str, model_prefix: str) -> dict[str, str]:
    """The 24 leaves of a $defs/flaglayers: ``<layer>.<lang>`` → ``FlagLayers.<layer>.<lang>``
    (written out through the two literal tuples above, not read from the schema or model)."""
    return {f"{schema_prefix}.{layer}.{lang}": f"{model_prefix}.{layer}.{lang}"
            for layer in _LAYERS for lang in _LANGS}


#: schema path → the model attribute path it becomes
MAPPING: dict[str, str] = {
    "package.name": "Recipe.name",
    "package.version": "Recipe.version",
    "package.description": "Recipe.description",
    "package.license": "Recipe.license",
    "package.homepage": "Recipe.homepage",
    # the source's kind is which of path/git/url is given; its location is that key's value
    "source.path": "Recipe.sources[].kind/location",
    "source.git": "Recipe.sources[].kind/location",
    "source.url": "Recipe.sources[].kind/location",
    "source.rev": "Recipe.sources[].rev",
    "source.sha256": "Recipe.sources[].sha256",
    "source.patches": "Recipe.sources[].patches",
    "source.subdir": "Recipe.sources[].subdir",
    "source.exclude": "Recipe.sources[].exclude",
    "build.enabled_by": "Recipe.enabled_by",
    "build.system": "Recipe.build_system",
    "build.build_types": "Recipe.build_types",
    "build.targets": "Recipe.targets",
    "build.compiler_cache": "Recipe.compiler_cache",
    "build.cxx_standard": "Recipe.cxx_standard",
    "options.*": "Recipe.options[].name",
    "options.*.type": "Recipe.options[].type",
    "options.*.default": "Recipe.options[].default",
    "options.*.allowed": "Recipe.options[].allowed",
    "options.*.description": "Recipe.options[].description",
    "options.*.cmake": "Recipe.options[].cmake",
    "options.*.env": "Recipe.options[].env",
    "options.*.legacy_env": "Recipe.options[].legacy_env",
    "options.*.secret": "Recipe.options[].secret",
    "backends.*": "Recipe.backends[].name",
    "backends.*.kind": "Recipe.backends[].kind",
    "backends.*.target": "Recipe.backends[].target",
    "backends.*.tools.*": "Recipe.backends[].tools",
    "backends.*.archs": "Recipe.backends[].archs",
    "backends.*.archs_option": "Recipe.backends[].archs_option",
    "backends.*.os": "Recipe.backends[].os",
    "backends.*.formats": "Recipe.backends[].formats",
    "backends.*.compress_mode": "Recipe.backends[].compress_mode",
    **_flag_paths("backends.*.flags", "Recipe.backends[].flags"),
    "backends.*.defines.*": "Recipe.backends[].defines",
    **_flag_paths("flags", "Recipe.flags"),
    "defines.*": "Recipe.defines",
    "memory.default": "Recipe.memory.default",
    "memory.per_file.*": "Recipe.memory.per_file",
    "memory.low_memory_flags": "Recipe.memory.low_memory_flags",
    "memory.unity.enabled": "Recipe.memory.unity",
    "memory.unity.batch_size": "Recipe.memory.unity_batch_size",
    "memory.pch.enabled": "Recipe.memory.pch",
    "memory.pch.headers": "Recipe.memory.pch_headers",
    "requires.recipes[].name": "Recipe.requires.recipes[].name",
    "requires.recipes[].version": "Recipe.requires.recipes[].spec",
    "requires.conan[]": "Recipe.requires.conan[].ref",  # the `name/version` string form
    "requires.conan[].ref": "Recipe.requires.conan[].ref",
    "requires.conan[].provider": "Recipe.requires.conan[].provider",
    "requires.system[].packages": "Recipe.requires.system[].packages",
    "requires.system[].when": "Recipe.requires.system[].when",
    "requires.system[].why": "Recipe.requires.system[].why",
    "requires.python": "Recipe.requires.python",
    "python.versions": "Recipe.python.versions",
    "python.abi": "Recipe.python.abi",
    "python.limited_api": "Recipe.python.limited_api",
    "build.frontend": "Recipe.build_spec.frontend",
    "build.env.*": "Recipe.build_spec.env",
    "build.env.*.value": "Recipe.build_spec.env",
    "build.secrets": "Recipe.build_spec.secrets",
    "build.config_settings.*": "Recipe.build_spec.config_settings",
    "build.configure_args": "Recipe.build_spec.configure_args",
    "install.files[].from": "Recipe.install.files[].src",
    "install.files[].to": "Recipe.install.files[].dest",
    "install.project_rules": "Recipe.install.project_rules",
    "test[].allow_empty": "Recipe.tests[].allow_empty",
    "test[].enabled_by": "Recipe.tests[].enabled_by",
    "wheel.manylinux": "Recipe.wheel.manylinux",
    "wheel.exclude": "Recipe.wheel.exclude",
    "wheel.requires": "Recipe.wheel.requires",
    "wheel.variants": "Recipe.wheel.variants",
    "python.package": "Recipe.python.package",
    "test[].name": "Recipe.tests[].name",
    "test[].run": "Recipe.tests[].run",
    "test[].env.*": "Recipe.tests[].env",
    "test[].env.*.value": "Recipe.tests[].env",
    "test[].secrets": "Recipe.tests[].secrets",
    "test[].cwd": "Recipe.tests[].cwd",
    "test[].backends": "Recipe.tests[].backends",
    "test[].devices.*": "Recipe.tests[].devices",
    "test[].timeout": "Recipe.tests[].timeout",
    "test[].needs_gpu": "Recipe.tests[].needs_gpu",
    "install.root": "Recipe.install.root",
    "install.layout": "Recipe.install.layout",
    "kernels.*": "Recipe.kernels[].name",
    "kernels.*.sources.*": "Recipe.kernels[].sources",
    "kernels.*.min_arch.*": "Recipe.kernels[].min_arch",
    "kernels.*.flags.*": "Recipe.kernels[].flags",
}

#: schema paths the loader accepts but does not carry into the model, and why.  A value
#: written here must appear nowhere in the model (checked): carry it, and move the entry
#: to MAPPING.
NOT_IN_MODEL: dict[str, str] = {
    # not drift: a validation switch; Source.rev keeps the branch name as written and the
    # executor and resolver tell a branch from a commit with is_full_rev
    "source.allow_branch": "lets semantic accept a branch name as source.rev",
    # carried as the entry's name (BuildSpec.secret_env, TestSpec.secret_env: DERIVED)
    "build.env.*.secret": "marks the entry's name secret (BuildSpec.secret_env)",
    "test[].env.*.secret": "marks the entry's name secret (TestSpec.secret_env)",
}

#: model fields set from no schema property, and where they come from
DERIVED: dict[str, str] = {
    "Recipe.file": "the recipe file's absolute path, from the loader's argument",
    "Recipe.display": "how the file is named in messages (display_path)",
    "Recipe.digest": "sha256 of the recipe file's bytes",
    "Recipe.positions": "line/column of every value, from the YAML loader",
    "Source.credential": "a reference to the git/url source's URL when it holds a secret",
    "Recipe.substituted": "the texts the schema marks x-substitute (subst.interpolated)",
    "BuildSpec.secret_env": "the names of the build.env entries with secret: true",
    "TestSpec.secret_env": "the names of a test's env entries with secret: true",
}

# -- the schema's paths ----------------------------------------------------------------------

_COMBINATORS = ("oneOf", "anyOf", "allOf")
_VALUE_KEYS = ("type", "enum", "const", "properties", "items", "additionalProperties", "$ref",
               *_COMBINATORS)


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        assert node["$ref"].startswith("#/$defs/"), node["$ref"]
        node = {**schema()["$defs"][node["$ref"].rsplit("/", 1)[-1]],
                **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _branches(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The oneOf/anyOf/allOf branches that describe a value (not pure constraints such as
    ``{required: [...], not: ...}``)."""
    return [b for k in _COMBINATORS for b in node.get(k, ()) if any(v in b for v in _VALUE_KEYS)]


def _structured(node: dict[str, Any]) -> bool:
    node = _resolve(node)
    return bool(node.get("properties")) or any(_structured(b) for b in _branches(node))


def _paths(node: dict[str, Any], prefix: str) -> set[str]:
    node = _resolve(node)
    out: set[str] = set()
    for name, sub in node.get("properties", {}).items():
        out |= _paths(sub, f"{prefix}.{name}" if prefix else name)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out |= {f"{prefix}.*"} | _paths(extra, f"{prefix}.*")
    items = node.get("items")
    if isinstance(items, dict) and _structured(items):
        out |= _paths(items, f"{prefix}[]")
    for branch in _branches(node):
        out |= _paths(branch, prefix)
    if not out and not _branches(node):
        out.add(prefix)  # a leaf
    return out


def schema_paths() -> set[str]:
    return _paths(schema(), "")


#: keywords that would add properties _paths does not follow
_UNFOLLOWED = {"patternProperties", "prefixItems", "if", "then", "else", "dependentSchemas",
               "unevaluatedProperties", "unevaluatedItems", "$dynamicRef"}


def _unfollowed(node: Any, where: str = "") -> list[str]:
    if isinstance(node, list):
        return [x for i, v in enumerate(node) for x in _unfollowed(v, f"{where}/{i}")]
    if not isinstance(node, dict):
        return []
    here = [f"{where}/{k}" for k in node if k in _UNFOLLOWED]
    return here + [x for k, v in node.items() if k not in ("properties", "$defs")
                   for x in _unfollowed(v, f"{where}/{k}")] + \
        [x for k in ("properties", "$defs") for name, v in node.get(k, {}).items()
         for x in _unfollowed(v, f"{where}/{k}/{name}")]


def _paths_node(spath: str) -> dict[str, Any]:
    """The schema node at a schema path (the first branch that has it, for oneOf)."""
    nodes = [schema()]
    for part in re.findall(r"[^.\[\]]+|\[\]", spath):
        nxt = []
        for node in nodes:
            for n in (_resolve(node), *map(_resolve, _branches(_resolve(node)))):
                if part == "*" and isinstance(n.get("additionalProperties"), dict):
                    nxt.append(n["additionalProperties"])
                elif part == "[]" and isinstance(n.get("items"), dict):
                    nxt.append(n["items"])
                elif part in n.get("properties", {}):
                    nxt.append(n["properties"][part])
        nodes = nxt
    assert nodes, spath
    return nodes[0]


# -- the model's fields ----------------------------------------------------------------------


_hints = cache(typing.get_type_hints)


def _dataclasses_in(hint: Any) -> list[type]:
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return [hint]
    return [c for arg in typing.get_args(hint) for c in _dataclasses_in(arg)]


def model_fields() -> set[str]:
    """``Class.field`` for every field reachable from Recipe (not inside DERIVED fields)."""
    out: set[str] = set()
    todo: list[type] = [m.Recipe]
    seen: set[type] = set()
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        hints = _hints(cls)
        for f in dataclasses.fields(cls):
            out.add(f"{cls.__name__}.{f.name}")
            if f"{cls.__name__}.{f.name}" not in DERIVED:
                todo.extend(_dataclasses_in(hints[f.name]))
    return out


def _walk_types(model_path: str) -> list[str]:
    """The ``Class.field`` names a model path goes through; fails on a path that is not."""
    root, *parts = model_path.split(".")
    assert root == "Recipe", f"{model_path}: model paths start at Recipe"
    cls: type = m.Recipe
    fields: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        names = part.split("/") if last else [part.removesuffix("[]")]
        hints = _hints(cls)
        for name in names:
            assert name in hints, f"{model_path}: {cls.__name__} has no field {name!r}"
            fields.append(f"{cls.__name__}.{name}")
        if not last:
            inner = _dataclasses_in(hints[names[0]])
            assert len(inner) == 1, f"{model_path}: {cls.__name__}.{names[0]} holds no dataclass"
            iterable = typing.get_origin(hints[names[0]]) is tuple
            assert part.endswith("[]") == iterable, \
                f"{model_path}: write {names[0]}[] for a tuple, {names[0]} for a single value"
            cls = inner[0]
    return fields


# -- values ----------------------------------------------------------------------------------


def _leaves(value: Any) -> list[Any]:
    """Scalars in a value: tuples/lists flattened, mappings as their keys and values."""
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _leaves(v)]
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in (*_leaves(k), *_leaves(v))]
    return [value]


def model_values(recipe: m.Recipe, model_path: str) -> list[Any]:
    _, *parts = model_path.split(".")
    values: list[Any] = [recipe]
    for part in parts[:-1]:
        values = [getattr(v, part.removesuffix("[]")) for v in values]
        if part.endswith("[]"):
            values = [x for v in values for x in v]
    return [x for v in values for name in parts[-1].split("/") for x in _leaves(getattr(v, name))]


def written_values(doc: dict[str, Any], path: str, paths: set[str]) -> list[Any]:
    """The scalars a recipe document writes at a schema path (none when it does not)."""
    nodes: list[tuple[Any, Any]] = [(None, doc)]  # (key of the * entry, value)
    for part in re.findall(r"[^.\[\]]+|\[\]", path):
        if part == "*":
            nodes = [(k, v) for _, n in nodes if isinstance(n, dict) for k, v in n.items()]
        elif part == "[]":
            nodes = [(None, v) for _, n in nodes if isinstance(n, list) for v in n]
        else:
            nodes = [(None, n[part]) for _, n in nodes if isinstance(n, dict) and part in n]
    has_children = any(p.startswith((f"{path}.", f"{path}[]")) for p in paths)
    if has_children:  # the entry's name (`*`) or the scalar form of a oneOf (`[]`)
        return [k for k, _ in nodes] if path.endswith("*") else \
            [v for _, v in nodes if not isinstance(v, dict)]
    return [x for k, v in nodes for x in (*_leaves(k), *_leaves(v)) if x is not None]


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b  # True is not 1


# -- the tests -------------------------------------------------------------------------------


def test_every_schema_path_is_mapped() -> None:
    assert not _unfollowed(schema()), (
        f"the schema uses keywords this test does not follow: {_unfollowed(schema())}; "
        "teach _paths them")
    paths = schema_paths()
    unmapped = sorted(paths - MAPPING.keys() - NOT_IN_MODEL.keys())
    assert not unmapped, (
        f"schema properties with no model field: {unmapped}. Add the field to the model "
        "(builder/recipe/model.py), set it in build_model (builder/recipe/validate.py), map "
        "the path in MAPPING here and give it a value in the round-trip recipes; or, if only "
        "validation reads it, list it in NOT_IN_MODEL with the reason")
    stale = sorted((MAPPING.keys() | NOT_IN_MODEL.keys()) - paths)
    assert not stale, f"MAPPING/NOT_IN_MODEL name paths the schema no longer has: {stale}"
    assert not MAPPING.keys() & NOT_IN_MODEL.keys()


def test_every_model_field_comes_from_the_schema() -> None:
    fields = model_fields()
    targets = {f for target in MAPPING.values() for f in _walk_types(target)}
    orphans = sorted(fields - targets - DERIVED.keys())
    assert not orphans, (
        f"model fields set from no schema property: {orphans}. Add the property to "
        "builder/resources/recipe.schema.json (with a description: docs/recipes.md's reference "
        "is generated from it), read it in build_model and map it in MAPPING here; or, if it "
        "is computed, list it in DERIVED with the reason")
    assert not DERIVED.keys() - fields, f"DERIVED names no field: {DERIVED.keys() - fields}"
    assert not DERIVED.keys() & targets, "a DERIVED field is also a MAPPING target"


# The round-trip recipes.  Together they set every leaf of the schema, each to a value that
# differs from its default, free-form ones to SENTINEL-like strings and odd numbers.  The
# three source forms exclude each other, and kernels need build.system: kernels (which
# excludes named backends), hence four documents.

_SHA = "5e" * 32


def _flags(tag: str) -> dict[str, Any]:
    return {layer: {lang: [f"-sentinel-{tag}-{layer}-{lang}"] for lang in _LANGS}
            for layer in _LAYERS}


MAXIMAL: dict[str, Any] = {
    "package": {"name": "sentinel-pkg", "version": "9.8.7",
                "description": "SENTINEL description", "license": "SENTINEL-LICENSE",
                "homepage": "https://sentinel.invalid/home"},
    "source": {"path": "../sentinel_src", "patches": ["../patches/sentinel.patch"],
               "subdir": "sentinel_subdir", "exclude": ["sentinel/*.bin"]},
    "build": {"enabled_by": "sentinel_on", "build_types": ["debug", "relwithdebinfo"],
              "targets": ["sentinel_target"], "compiler_cache": "sccache",
              "cxx_standard": "gnu23"},
    "options": {
        "sentinel_on": {"type": "bool", "default": True, "description": "SENTINEL option",
                        "cmake": "SENTINEL_CMAKE", "env": "SENTINEL_ENV",
                        "legacy_env": "SENTINEL_LEGACY"},
        "sentinel_mode": {"type": "str", "default": "sentinel_a",
                          "allowed": ["sentinel_a", "sentinel_b"], "secret": True},
        "sentinel_count": {"type": "int", "default": 4711},
        "sentinel_archs": {"type": "list", "default": ["sm_89"]},
        "sentinel_unity": {"type": "bool", "default": False},
    },
    "backends": {
        "cuda": {"tools": {"nvcc": ">=12.345"}, "archs": ["sm_86", "sm_90a"],
                 "archs_option": "sentinel_archs", "os": ["macos", "windows"],
                 "formats": ["cubin", "fatbin"], "compress_mode": "balance",
                 "flags": _flags("be"),
                 "defines": {"SENTINEL_BE_STR": "sentinel_be_value", "SENTINEL_BE_BOOL": False,
                             "SENTINEL_BE_INT": 31337}},
        "sentinelarm": {"kind": "cpu", "target": "linux-armv8"},
    },
    "flags": _flags("top"),
    "defines": {"SENTINEL_STR": "sentinel_value", "SENTINEL_BOOL": True, "SENTINEL_INT": 2718},
    "memory": {"default": "1234MiB", "per_file": {"sentinel/**/*.cu": "2.5GiB"},
               "low_memory_flags": ["-sentinel-lowmem"],
               "unity": {"enabled": "${options.sentinel_unity}", "batch_size": 77},
               "pch": {"enabled": True, "headers": ["<sentinel/pch.h>"]}},
    "requires": {
        "recipes": [{"name": "sentinel-dep", "version": ">=1.2.3,<9"}],
        "conan": ["sentinelzlib/1.2.3", {"ref": "sentinelfmt/[>=9 <10]", "provider": "remote"}],
        "system": [{"packages": ["sentinel-dev"], "when": "${options.sentinel_on}",
                    "why": "SENTINEL why"}],
        "python": ["sentinelpy>=1.0"],
    },
    "python": {"versions": ["3.42"], "abi": "abi3", "limited_api": "3.42",
               "package": "sentinel_pydir"},
    "wheel": {"manylinux": "manylinux_2_28", "exclude": ["libsentinel.so.*"], "variants": True,
              "requires": ["sentinelreq>=1.0"]},
    "test": [{"name": "sentinel-test", "run": ["sentinel-run", "${python}"],
              "env": {"SENTINEL_TEST_ENV": "sentinel_env_value",
                      "SENTINEL_TEST_SECRET": {"value": "sentinel_secret_text",
                                               "secret": True}},
              "secrets": ["SENTINEL_TEST_PASSED"], "cwd": "sentinel_cwd",
              "backends": ["sentinelarm"], "devices": {"cuda": "sentinel_device"},
              "timeout": 4321, "needs_gpu": True, "allow_empty": True,
              "enabled_by": "sentinel_on"}],
    "install": {"root": "~/sentinel_root", "layout": "${backend}/sentinel/${kernel}.${ext}"},
}

KERNELS: dict[str, Any] = {
    "package": {"name": "sentinel-kernels", "version": "1.0"},
    "source": {"path": "../sentinel_src"},
    "build": {"system": "kernels"},
    "backends": {"cuda": {"archs": ["sm_80"]}},
    "kernels": {"sentinel_kernel": {"sources": {"cuda": "sentinel_kernel.cu"},
                                    "min_arch": {"cuda": "sm_75"},
                                    "flags": {"cuda": ["-sentinel-kflag"]}}},
}

GIT: dict[str, Any] = {
    "package": {"name": "sentinel-git", "version": "1.0"},
    "source": {"git": "https://sentinel.invalid/repo.git", "rev": "sentinel-branch",
               "allow_branch": True},
    "backends": {"cpu": {}},
}

PYTHON: dict[str, Any] = {
    "package": {"name": "sentinel-py", "version": "1.0"},
    "source": {"path": "../sentinel_src"},
    "build": {"system": "python", "frontend": "build",
              "env": {"SENTINEL_BUILD_ENV": "sentinel_build_env_value",
                      "SENTINEL_BUILD_SECRET": {"value": "sentinel_build_secret_text",
                                                "secret": True}},
              "secrets": ["SENTINEL_BUILD_PASSED"],
              "config_settings": {"sentinel.setting": "sentinel_setting_value"}},
    "backends": {"cpu": {}},
    "python": {"versions": ["3.42"]},
    "install": {"files": [{"from": "sentinel_from/*.h", "to": "sentinel_to"}],
                "project_rules": False},
}

XMAKE: dict[str, Any] = {
    "package": {"name": "sentinel-xmake", "version": "1.0"},
    "source": {"path": "../sentinel_src"},
    "build": {"system": "xmake", "configure_args": ["--sentinel-arg=y"]},
    "backends": {"cpu": {}},
}

URL: dict[str, Any] = {
    "package": {"name": "sentinel-url", "version": "1.0"},
    "source": {"url": "https://sentinel.invalid/src.tar.gz", "sha256": _SHA},
    "backends": {"cpu": {}},
}

#: recipes that leave out whatever has a default, for the defaults check
SPARSE: dict[str, Any] = {
    "package": {"name": "sparse", "version": "1.0"},
    "source": {"path": "../sentinel_src"},
    "backends": {"cpu": {}},
    "memory": {"unity": {}, "pch": {}},
    "requires": {"conan": [{"ref": "zlib/1.3"}]},
    "python": {},
    "test": [{"name": "t", "run": ["true"]}],
}


def _project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()  # the recipes' project root
    (tmp_path / "sentinel_src").mkdir()
    (tmp_path / "patches").mkdir()
    (tmp_path / "patches" / "sentinel.patch").write_text("")
    (tmp_path / "recipes").mkdir()
    return tmp_path / "recipes"


def _load(recipes: Path, name: str, doc: dict[str, Any]) -> m.Recipe:
    path = recipes / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_recipe(path)


def _size(text: Any) -> Any:
    return parse_size(text) if re.fullmatch(schema()["$defs"]["size"]["pattern"], str(text)) \
        else text


def _conversions(recipes: Path) -> dict[str, Any]:
    """How the loader converts a written value on its way into the model (by schema path;
    the others arrive as written, lists as tuples)."""

    def path(v: Any) -> Any:
        return str((recipes / v).resolve())

    def define(v: Any) -> Any:
        return ("ON" if v else "OFF") if isinstance(v, bool) else str(v)

    return {"memory.default": _size, "memory.per_file.*": _size, "source.path": path,
            "source.patches": path, "defines.*": define, "backends.*.defines.*": define}


def _field_default(model_path: str) -> Any:
    """The dataclass default of the (single) field a model path ends at, or MISSING."""
    *_, last = _walk_types(model_path)
    cls_name, name = last.split(".")
    return next(f.default for f in dataclasses.fields(getattr(m, cls_name)) if f.name == name)


def test_the_loader_carries_every_property_into_the_model(tmp_path: Path) -> None:
    recipes = _project(tmp_path)
    paths = schema_paths()
    convert = _conversions(recipes)
    docs = {"maximal": MAXIMAL, "kernels": KERNELS, "git": GIT, "url": URL, "python": PYTHON,
            "xmake": XMAKE}
    covered: set[str] = set()
    for name, doc in docs.items():
        recipe = _load(recipes, name, doc)
        for spath in sorted(paths):
            written = written_values(doc, spath, paths)
            if not written:
                continue
            covered.add(spath)
            default = _resolve(_paths_node(spath)).get("default")
            assert default is None or _leaves(default) != written, \
                f"{name}: {spath} is written with its schema default; choose another value"
            if spath in NOT_IN_MODEL:
                everywhere = _leaves(dataclasses.astuple(replace(recipe, positions=None)))
                for v in written:
                    assert not isinstance(v, str) or v not in everywhere, (
                        f"{spath} ({v!r}) now reaches the model: move it from NOT_IN_MODEL "
                        "to MAPPING")
                continue
            target = MAPPING[spath]
            found = model_values(recipe, target)
            field_default = _field_default(target) if "/" not in target.rsplit(".", 1)[-1] \
                else dataclasses.MISSING
            for v in written:
                want = convert.get(spath, lambda x: x)(v)
                assert any(_same(want, x) for x in found), (
                    f"{name}: {spath} = {v!r} should reach {target} as {want!r}, which holds "
                    f"{found!r}: does build_model read it?")
                assert not _same(want, field_default), \
                    f"{name}: {spath} = {v!r} is {target}'s default; choose another value"
    missing = sorted(paths - covered)
    assert not missing, f"the round-trip recipes set no value at {missing}: add one"


def test_the_schema_defaults_are_the_loaders(tmp_path: Path) -> None:
    recipe = _load(_project(tmp_path), "sparse", SPARSE)
    checked = []
    for spath in sorted(schema_paths()):
        default = _resolve(_paths_node(spath)).get("default")
        if default is None:
            continue
        checked.append(spath)
        got = model_values(recipe, MAPPING[spath])
        assert got == _leaves(default) and all(map(_same, got, _leaves(default))), (
            f"{spath}: the schema documents the default {default!r} but the loader gives "
            f"{MAPPING[spath]} = {got!r}")
    assert len(checked) >= 10, checked
