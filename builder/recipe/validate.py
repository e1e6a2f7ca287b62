"""Validate recipe documents and turn them into :class:`builder.recipe.model.Recipe`.

Two passes: the JSON Schema shipped in ``builder/resources/recipe.schema.json`` (shape
and types), then the checks the schema cannot express (:mod:`builder.recipe.semantic`:
PEP 440 versions and specifiers, option defaults, archs that belong to their
backend, substitution variables, kernel sources).  Every problem becomes a
:class:`Diagnostic` with the file, line and column and a hint; all of them are
reported at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.errors import RecipeError
from builder.recipe import model as m
from builder.recipe.diags import Diags, did_you_mean
from builder.recipe.misplaced import inside_misplaced, misplaced
from builder.recipe.schemapass import SchemaPasses
from builder.recipe.semantic import check_semantics, source_entries
from builder.recipe.subst import interpolated
from builder.recipe.yamlload import PathKey, Positions, format_path
from builder.resources import text as resource_text
from builder.util import units

if TYPE_CHECKING:  # jsonschema is imported only when a file is checked against the schema
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

__all__ = ["build_model", "file_digest", "parse_size", "project_root_of", "schema", "validate"]

def parse_size(text: str) -> int:
    """``1.5GiB`` → bytes (:func:`builder.util.units.parse_size`).  Raises ValueError."""
    return units.parse_size(text)


#: the largest size builder accepts anywhere (1 EiB)
MAX_SIZE = units.MAX_SIZE


@cache
def schema() -> dict[str, Any]:
    text = resource_text("recipe.schema.json")
    result: dict[str, Any] = json.loads(text)
    return result


def _anchored(node: Any) -> Any:
    """The schema with each pattern's final ``$`` made ``\\Z``: Python's ``re.search``
    lets ``$`` match before a trailing newline (ECMA-262's does not), which would let
    ``name: "x\\n"`` through."""
    if isinstance(node, dict):
        return {k: (v[:-1] + "\\Z" if k == "pattern" and isinstance(v, str) and
                    v.endswith("$") and not v.endswith("\\$") else _anchored(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_anchored(v) for v in node]
    return node


@cache
def _validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # lazily: see builder.recipe.schemapass

    return Draft202012Validator(_anchored(schema()))


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a mapping", type(None): "nothing (null)"}.get(
        type(value), type(value).__name__)


_PATTERN_HINTS = {
    "package.name": "use lowercase letters, digits, '-' and '_', starting with a letter",
    "sha256": "give the archive's SHA-256 as 64 lowercase hex digits (`sha256sum FILE`)",
    "versions": "write Python versions as quoted strings such as \"3.11\"",
}


def _schema_diag(err: ValidationError, d: Diags) -> None:
    """One schema error as diagnostics in words a recipe author can act on."""
    path: PathKey = tuple(err.absolute_path)
    v = err.validator
    if v in ("oneOf", "anyOf") and err.context:
        if path and (path[-1] == "source" or (len(path) > 1 and path[-2] == "source")) \
                and isinstance(err.instance, dict):
            d.add(path, "a source needs exactly one of: `path`; `git` with `rev`; `url` with "
                  "`sha256`", "for example `source: {path: ../sources/mylib}`")
            return
        from jsonschema.exceptions import best_match

        sub = best_match(err.context)
        if sub is not None:
            _schema_diag(sub, d)
            return
    if "propertyNames" in err.schema_path and v in ("enum", "pattern"):
        _bad_name(path, str(err.instance), err.validator_value if v == "enum" else None, d)
        return
    handler = _HANDLERS.get(str(v))
    if handler is not None:
        handler(err, path, d)
    else:
        d.add(path, err.message)


def _bad_name(path: PathKey, bad: str, choices: Any, d: Diags) -> None:
    """A mapping key that is not one of the allowed names (or not a valid name at all)."""
    if choices:
        names = [str(c) for c in choices]
        d.add((*path, bad), f"unknown name '{bad}'", did_you_mean(bad, names) or
              f"choose one of: {', '.join(names)}", key=True)
    else:
        d.add((*path, bad), f"invalid name '{bad}'",
              "use lowercase letters, digits and '_', starting with a letter", key=True)


def _extra_keys(err: ValidationError, path: PathKey, d: Diags) -> None:
    if not isinstance(err.instance, dict):
        d.add(path, err.message)
        return
    assert isinstance(err.schema, dict)  # our schema is JSON: every subschema is a dict
    allowed = list(err.schema.get("properties", {}))
    for extra in [k for k in err.instance if k not in allowed]:
        hint = did_you_mean(extra, allowed) or (
            f"allowed keys here: {', '.join(allowed)}" if allowed else "")
        d.add((*path, extra), f"unknown key '{extra}'", hint, key=True)


def _missing_keys(err: ValidationError, path: PathKey, d: Diags) -> None:
    # `required` is a list in our schema and only reports on objects
    assert isinstance(err.validator_value, list) and isinstance(err.instance, dict)
    for k in [k for k in err.validator_value if k not in err.instance]:
        d.add(path, f"missing required key '{k}'",
              f"add `{k}:` here" + (" (a quoted string)" if k == "version" else ""))


def _property_names(err: ValidationError, path: PathKey, d: Diags) -> None:
    bad = err.instance if isinstance(err.instance, str) else str(err.instance)
    names = err.validator_value.get("enum") if isinstance(err.validator_value, dict) else None
    _bad_name(path, bad, names, d)


def _wrong_type(err: ValidationError, path: PathKey, d: Diags) -> None:
    want = err.validator_value
    want_s = " or ".join(want) if isinstance(want, list) else want
    hint = ""
    if path and path[-1] == "version" and isinstance(err.instance, (int, float)):
        hint = f"quote the version: version: \"{err.instance}\" (YAML reads {err.instance} " \
               f"as a number)"
    elif isinstance(err.instance, (int, float)) and want == "string":
        loc = d.pos.location(path)
        raw = d.pos.line_text(loc.line)[max(loc.col - 1, 0):].split("#")[0]
        # the value's own text: up to the next separator of a flow list or mapping
        raw = re.split(r"[,\]}]", raw)[0].strip() or str(err.instance)
        became = f"{raw} as the number {err.instance}" if raw != str(err.instance) else \
            "it as a number"
        hint = f"quote it: \"{raw}\" (YAML reads {became})"
    elif isinstance(err.instance, str) and want == "integer" and path and \
            path[-1] == "timeout":
        with contextlib.suppress(ValueError):
            hint = f"give seconds as a whole number: {path[-1]}: " \
                   f"{round(units.parse_duration(err.instance))}"
        hint = hint or f"give seconds as a whole number, e.g. {path[-1]}: 600"
    d.add(path, f"expected {want_s}, got {_type_name(err.instance)}", hint)


def _not_allowed(err: ValidationError, path: PathKey, d: Diags) -> None:
    assert isinstance(err.validator_value, list)  # `enum` is a list throughout our schema
    choices = [str(c) for c in err.validator_value]
    hint = (did_you_mean(str(err.instance), choices) if isinstance(err.instance, str)
            else "") or f"choose one of: {', '.join(choices)}"
    d.add(path, f"'{err.instance}' is not allowed here", hint)


def _bad_pattern(err: ValidationError, path: PathKey, d: Diags) -> None:
    dotted = format_path(path)
    hint = next((h for k, h in _PATTERN_HINTS.items() if dotted.endswith(k) or
                 (k == "versions" and "versions" in dotted)), "")
    if dotted.startswith("memory.") and isinstance(err.instance, str):  # a size
        try:
            units.parse_size(err.instance)
        except ValueError as exc:
            hint = str(exc)
    d.add(path, f"'{err.instance}' is not valid here", hint)


#: how each kind of schema error is explained (others: jsonschema's own message)
_HANDLERS: dict[str, Callable[[ValidationError, PathKey, Diags], None]] = {
    "additionalProperties": _extra_keys, "required": _missing_keys,
    "propertyNames": _property_names, "type": _wrong_type, "enum": _not_allowed,
    "pattern": _bad_pattern,
}


def project_root_of(recipe_file: Path) -> Path:
    """The nearest folder above the recipe holding ``.git`` (else the recipe's parent's
    parent, so that ``recipes/x.yaml`` may refer to ``../sources``)."""
    here = recipe_file.resolve().parent
    for p in (here, *here.parents):
        if (p / ".git").exists():
            return p
    return here.parent


def _flagset(raw: dict[str, Any] | None) -> m.FlagSet:
    raw = raw or {}
    return m.FlagSet(*(tuple(raw.get(k, ())) for k in m.LANGS))


def _layers(raw: dict[str, Any] | None) -> m.FlagLayers:
    raw = raw or {}
    return m.FlagLayers(*(_flagset(raw.get(k)) for k in ("common", *m.BUILD_TYPES)))


def _define_value(v: Any) -> str:
    if isinstance(v, bool):
        return "ON" if v else "OFF"
    return str(v)


def _defines(raw: dict[str, Any] | None) -> tuple[tuple[str, str], ...]:
    return tuple((k, _define_value(v)) for k, v in (raw or {}).items())


def _option(name: str, spec: dict[str, Any]) -> m.Option:
    def norm(v: Any) -> m.OptionValue:
        return tuple(v) if isinstance(v, list) else v

    return m.Option(name, spec["type"], norm(spec["default"]),
                    tuple(norm(a) for a in spec.get("allowed", ())),
                    spec.get("description", ""), spec.get("cmake", ""), spec.get("env", ""),
                    spec.get("legacy_env", ""), secret=bool(spec.get("secret", False)))


def build_model(data: dict[str, Any], pos: Positions, file: Path, display: str,
                digest: str) -> m.Recipe:
    """The typed recipe of a document that passed the schema and the semantic checks."""
    build = data.get("build") or {}
    py = data.get("python") or {}
    whl = data.get("wheel") or {}
    pkg = data["package"]
    return m.Recipe(
        name=pkg["name"], version=pkg["version"], file=file.resolve(),
        display=display, description=pkg.get("description", ""),
        sources=_sources(data, file.resolve().parent), build_system=build.get("system", "cmake"),
        build_types=tuple(build.get("build_types", ("release",))),
        enabled_by=build.get("enabled_by", ""),
        targets=tuple(build.get("targets", ())),
        compiler_cache=build.get("compiler_cache", ""),
        cxx_standard=str(build.get("cxx_standard", "")),
        license=pkg.get("license", ""), homepage=pkg.get("homepage", ""),
        options=tuple(_option(k, v) for k, v in (data.get("options") or {}).items()),
        backends=tuple(_backend(b, spec) for b, spec in data["backends"].items()),
        flags=_layers(data.get("flags")), defines=_defines(data.get("defines")),
        memory=_memory(data.get("memory") or {}),
        requires=_requires(data.get("requires") or {}),
        python=m.PythonSpec(tuple(py.get("versions", ())), py.get("abi", "none"),
                            py.get("package", "python"), py.get("limited_api", "")),
        wheel=m.WheelSpec(whl.get("manylinux", "auto"), tuple(whl.get("exclude", ())),
                          tuple(whl.get("requires", ())), bool(whl.get("variants", False))),
        tests=tuple(_test(t) for t in data.get("test") or ()),
        install=_install(data.get("install") or {}),
        build_spec=m.BuildSpec(
            frontend=build.get("frontend", "pip"),
            env=_env(build.get("env")), secret_env=_secret_env(build.get("env")),
            secrets=tuple(build.get("secrets") or ()),
            config_settings=tuple((k, _define_value(v)) for k, v in
                                  (build.get("config_settings") or {}).items()),
            configure_args=tuple(build.get("configure_args") or ())),
        kernels=tuple(m.Kernel(k, tuple(v["sources"].items()),
                               tuple((v.get("min_arch") or {}).items()),
                               tuple((b, tuple(f)) for b, f in (v.get("flags") or {}).items()))
                      for k, v in (data.get("kernels") or {}).items()),
        digest=digest, positions=pos,
        substituted=tuple(t for t in interpolated(schema(), data) if not _secret_text(t.path,
                                                                                     data)))


def _sources(data: dict[str, Any], recipe_dir: Path) -> tuple[m.Source, ...]:
    """Path sources and patches resolved against the recipe's folder; a URL's user info
    and token are kept as a secret (stored and shown without them)."""
    from builder.util.secrets import split_url

    name = data["package"]["name"]
    out = []
    for src in source_entries(data):
        patches = tuple(str((recipe_dir / p).resolve()) for p in src.get("patches", ()))
        subdir = src.get("subdir", "")
        exclude = tuple(src.get("exclude", ()))
        if "path" in src:
            out.append(m.Source("path", str((recipe_dir / src["path"]).resolve()),
                                patches=patches, subdir=subdir, exclude=exclude))
        elif "git" in src:
            location, credential = split_url(src["git"], f"{name}/source")
            out.append(m.Source("git", location, rev=src["rev"], patches=patches,
                                subdir=subdir, credential=credential, exclude=exclude))
        else:
            location, credential = split_url(src["url"], f"{name}/source")
            out.append(m.Source("url", location, sha256=src["sha256"], patches=patches,
                                subdir=subdir, credential=credential, exclude=exclude))
    return tuple(out)


def _backend(name: str, spec: dict[str, Any]) -> m.BackendSpec:
    return m.BackendSpec(
        name=name, tools=tuple((spec.get("tools") or {}).items()),
        archs=tuple(spec.get("archs") or ()), os=tuple(spec.get("os") or ()),
        flags=_layers(spec.get("flags")), defines=_defines(spec.get("defines")),
        formats=tuple(spec.get("formats") or ()), archs_option=spec.get("archs_option", ""),
        kind=spec.get("kind", ""), target=spec.get("target", ""),
        compress_mode=spec.get("compress_mode", ""))


def _memory(mem: dict[str, Any]) -> m.Memory:
    unity, pch = mem.get("unity") or {}, mem.get("pch") or {}
    return m.Memory(
        default=parse_size(mem["default"]) if "default" in mem else 0,
        per_file=tuple((g, parse_size(s)) for g, s in (mem.get("per_file") or {}).items()),
        low_memory_flags=tuple(mem.get("low_memory_flags", ())),
        unity=unity.get("enabled", False), unity_batch_size=int(unity.get("batch_size", 8)),
        pch=pch.get("enabled", False), pch_headers=tuple(pch.get("headers", ())))


def _requires(req: dict[str, Any]) -> m.Requires:
    return m.Requires(
        recipes=tuple(m.RecipeRequirement(r["name"], r.get("version", ""))
                      for r in req.get("recipes") or ()),
        conan=tuple(m.ConanRequirement(c) if isinstance(c, str) else
                    m.ConanRequirement(c["ref"], c.get("provider", "system"))
                    for c in req.get("conan") or ()),
        python=tuple(req.get("python") or ()),
        system=tuple(m.SystemRequirement(tuple(x["packages"]), x.get("when", ""),
                                         x.get("why", ""))
                     for x in req.get("system") or ()))


def _test(t: dict[str, Any]) -> m.TestSpec:
    return m.TestSpec(t["name"], tuple(t["run"]), _env(t.get("env")),
                      tuple(t.get("backends", ())), tuple((t.get("devices") or {}).items()),
                      t.get("timeout", 1800), bool(t.get("needs_gpu", False)), t.get("cwd", ""),
                      bool(t.get("allow_empty", False)), t.get("enabled_by", ""),
                      secrets=tuple(t.get("secrets") or ()),
                      secret_env=_secret_env(t.get("env")))


def _env(raw: dict[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """An ``env`` mapping's (name, text): an entry ``{value, secret}`` by its value."""
    return tuple((k, v["value"] if isinstance(v, dict) else _define_value(v))
                 for k, v in (raw or {}).items())


def _secret_env(raw: dict[str, Any] | None) -> tuple[str, ...]:
    """The names of an ``env`` mapping's entries declared ``secret: true``."""
    return tuple(k for k, v in (raw or {}).items() if isinstance(v, dict) and v["secret"])


def _secret_text(path: tuple[str | int, ...], data: dict[str, Any]) -> bool:
    """Whether ``path`` is the value of a ``secret: true`` env entry: substituted from the
    environment when builder runs (its value never enters a key or a plan), not with the
    recipe's other texts (builder.resolve.secretenv)."""
    if len(path) < 2 or path[-1] != "value":
        return False
    node: Any = data
    for part in path[:-1]:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return False
    return isinstance(node, dict) and node.get("secret") is True


def _install(inst: dict[str, Any]) -> m.InstallSpec:
    return m.InstallSpec(inst.get("root", ""), inst.get("layout", m.InstallSpec().layout),
                         tuple(m.InstallFile(f["from"], f["to"]) for f in inst.get("files") or ()),
                         bool(inst.get("project_rules", True)))


def validate(data: Any, pos: Positions, file: Path, display: str, digest: str,
             passes: SchemaPasses | None = None) -> m.Recipe:
    """Schema + semantic checks; returns the model or raises RecipeError with all problems.
    ``passes``: the content digests known to pass the schema (``digest`` is the file's:
    one found there is not checked against the schema again; one that passes is added)."""
    d = Diags(pos)
    if not isinstance(data, dict):
        d.add((), f"a recipe must be a mapping, got {_type_name(data)}",
              "start with `package: {name: ..., version: \"...\"}`")
        raise RecipeError(d.items)
    misplaced(data, d)
    if passes is None or digest not in passes:
        for err in _validator().iter_errors(data):
            if not inside_misplaced(tuple(err.absolute_path), data):  # said by misplaced()
                _schema_diag(err, d)
        if not d.items and passes is not None:
            passes.add(digest)
    if not d.items:
        check_semantics(data, d, file.resolve().parent, project_root_of(file), schema())
    else:
        # the semantic checks too, in the same round, on what the schema errors leave
        # readable: a part they cannot read is skipped, and a finding inside a part the
        # schema already rejected is left out (it would say the same thing twice)
        bad = [x.path for x in d.items]
        sem = Diags(pos)
        with contextlib.suppress(KeyError, TypeError, AttributeError, ValueError, IndexError):
            check_semantics(data, sem, file.resolve().parent, project_root_of(file),
                            schema())
        d.items += [x for x in sem.items if not any(
            not b or x.path == b or x.path.startswith((b + ".", b + "[")) for b in bad)]
    if d.items:
        d.items.sort(key=lambda x: (x.location.line, x.location.col))
        raise RecipeError(d.items)
    return build_model(data, pos, file, display, digest)


def file_digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
