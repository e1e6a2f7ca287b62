"""Validate recipe documents and turn them into :class:`builder.model.Recipe`.

Two passes: the JSON Schema shipped in ``builder/data/recipe.schema.json`` (shape
and types), then the checks the schema cannot express (:mod:`builder.semantic`:
PEP 440 versions and specifiers, option defaults, archs that belong to their
backend, substitution variables, kernel sources).  Every problem becomes a
:class:`Diagnostic` with the file, line and column and a hint; all of them are
reported at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from . import model as m
from .diags import _Diags, _did_you_mean
from .errors import RecipeError
from .semantic import _semantic, _sources
from .yamlload import PathKey, Positions, format_path

_SIZE_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20,
               "GiB": 2**30, "TiB": 2**40}


def parse_size(text: str) -> int:
    """``1.5GiB`` → bytes.  Raises ValueError on anything else."""
    t = text.strip()
    for unit in sorted(_SIZE_UNITS, key=len, reverse=True):
        if t.endswith(unit):
            return int(float(t[: -len(unit)].strip()) * _SIZE_UNITS[unit])
    raise ValueError(f"not a size: {text!r}")


@cache
def schema() -> dict[str, Any]:
    text = resources.files("builder").joinpath("data", "recipe.schema.json").read_text("utf-8")
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


def _schema_diag(err: ValidationError, d: _Diags) -> None:
    path: PathKey = tuple(err.absolute_path)
    v = err.validator
    if v in ("oneOf", "anyOf") and err.context:
        if path and (path[-1] == "source" or (len(path) > 1 and path[-2] == "source")) \
                and isinstance(err.instance, dict):
            d.add(path, "a source needs exactly one of: `path`; `git` with `rev`; `url` with "
                  "`sha256`", "for example `source: {path: ../sources/mylib}`")
            return
        sub = best_match(err.context)
        if sub is not None:
            _schema_diag(sub, d)
            return
    if v == "additionalProperties" and isinstance(err.instance, dict):
        assert isinstance(err.schema, dict)  # our schema is JSON: every subschema is a dict
        allowed = list(err.schema.get("properties", {}))
        extras = [k for k in err.instance if k not in allowed]
        for extra in extras:
            hint = _did_you_mean(extra, allowed) or (
                f"allowed keys here: {', '.join(allowed)}" if allowed else "")
            d.add((*path, extra), f"unknown key '{extra}'", hint, key=True)
        return
    if v == "required":
        # `required` is a list in our schema and only reports on objects
        assert isinstance(err.validator_value, list) and isinstance(err.instance, dict)
        missing = [k for k in err.validator_value if k not in err.instance]
        for k in missing:
            d.add(path, f"missing required key '{k}'",
                  f"add `{k}:` here" + (" (a quoted string)" if k == "version" else ""))
        return
    if "propertyNames" in err.schema_path and v in ("enum", "pattern"):
        bad = str(err.instance)
        if v == "enum":
            assert isinstance(err.validator_value, list)  # `enum` is a list throughout our schema
            choices = [str(c) for c in err.validator_value]
            d.add((*path, bad), f"unknown name '{bad}'", _did_you_mean(bad, choices) or
                  f"choose one of: {', '.join(choices)}", key=True)
        else:
            d.add((*path, bad), f"invalid name '{bad}'",
                  "use lowercase letters, digits and '_', starting with a letter", key=True)
        return
    if v == "propertyNames":
        bad = err.instance if isinstance(err.instance, str) else str(err.instance)
        names = err.validator_value.get("enum") if isinstance(err.validator_value, dict) else None
        if names:
            hint = _did_you_mean(bad, names) or f"choose one of: {', '.join(names)}"
            d.add((*path, bad), f"unknown name '{bad}'", hint, key=True)
        else:
            d.add((*path, bad), f"invalid name '{bad}'",
                  "use lowercase letters, digits and '_', starting with a letter", key=True)
        return
    if v == "type":
        want = err.validator_value
        want_s = " or ".join(want) if isinstance(want, list) else want
        hint = ""
        if path and path[-1] == "version" and isinstance(err.instance, (int, float)):
            hint = f"quote the version: version: \"{err.instance}\" (YAML reads {err.instance} " \
                   f"as a number)"
        elif isinstance(err.instance, (int, float)) and want == "string":
            loc = d.pos.location(path)
            raw = d.pos.line_text(loc.line)[max(loc.col - 1, 0):].split("#")[0]
            raw = raw.strip().rstrip(",]}").strip() or str(err.instance)
            hint = f"quote it: \"{raw}\" (YAML reads it as a number)"
        d.add(path, f"expected {want_s}, got {_type_name(err.instance)}", hint)
        return
    if v == "enum":
        assert isinstance(err.validator_value, list)  # `enum` is a list throughout our schema
        choices = [str(c) for c in err.validator_value]
        hint = (_did_you_mean(str(err.instance), choices) if isinstance(err.instance, str)
                else "") or f"choose one of: {', '.join(choices)}"
        d.add(path, f"'{err.instance}' is not allowed here", hint)
        return
    if v == "pattern":
        dotted = format_path(path)
        hint = next((h for k, h in _PATTERN_HINTS.items() if dotted.endswith(k) or
                     (k == "versions" and "versions" in dotted)), "")
        d.add(path, f"'{err.instance}' is not valid here", hint)
        return
    d.add(path, err.message)


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
                    spec.get("legacy_env", ""))


def build_model(data: dict[str, Any], pos: Positions, file: Path, display: str,
                digest: str) -> m.Recipe:
    recipe_dir = file.resolve().parent
    sources = []
    for src in _sources(data):
        patches = tuple(str((recipe_dir / p).resolve()) for p in src.get("patches", ()))
        if "path" in src:
            sources.append(m.Source("path", str((recipe_dir / src["path"]).resolve()),
                                    patches=patches,
                                    subdir=src.get("subdir", "")))
        elif "git" in src:
            sources.append(m.Source("git", src["git"], rev=src["rev"],
                                    patches=patches,
                                    subdir=src.get("subdir", "")))
        else:
            sources.append(m.Source("url", src["url"], sha256=src["sha256"],
                                    patches=patches,
                                    subdir=src.get("subdir", "")))
    build = data.get("build") or {}
    mem = data.get("memory") or {}
    req = data.get("requires") or {}
    py = data.get("python") or {}
    inst = data.get("install") or {}
    return m.Recipe(
        name=data["package"]["name"], version=data["package"]["version"], file=file.resolve(),
        display=display, description=data["package"].get("description", ""),
        sources=tuple(sources), build_system=build.get("system", "cmake"),
        build_types=tuple(build.get("build_types", ("release",))),
        enabled_by=build.get("enabled_by", ""),
        targets=tuple(build.get("targets", ())),
        compiler_cache=build.get("compiler_cache", ""),
        options=tuple(_option(k, v) for k, v in (data.get("options") or {}).items()),
        backends=tuple(m.BackendSpec(
            name=b, tools=tuple((spec.get("tools") or {}).items()),
            archs=tuple(spec.get("archs") or ()), os=tuple(spec.get("os") or ()),
            flags=_layers(spec.get("flags")), defines=_defines(spec.get("defines")),
            formats=tuple(spec.get("formats") or ()), archs_option=spec.get("archs_option", ""),
            kind=spec.get("kind", ""), target=spec.get("target", ""))
            for b, spec in data["backends"].items()),
        flags=_layers(data.get("flags")), defines=_defines(data.get("defines")),
        memory=m.Memory(
            default=parse_size(mem["default"]) if "default" in mem else 0,
            per_file=tuple((g, parse_size(s)) for g, s in (mem.get("per_file") or {}).items()),
            low_memory_flags=tuple(mem.get("low_memory_flags", ())),
            unity=(mem.get("unity") or {}).get("enabled", False),
            unity_batch_size=int((mem.get("unity") or {}).get("batch_size", 8)),
            pch=(mem.get("pch") or {}).get("enabled", False),
            pch_headers=tuple((mem.get("pch") or {}).get("headers", ()))),
        requires=m.Requires(
            recipes=tuple(m.RecipeRequirement(r["name"], r.get("version", ""))
                          for r in req.get("recipes") or ()),
            conan=tuple(m.ConanRequirement(c) if isinstance(c, str) else
                        m.ConanRequirement(c["ref"], c.get("provider", "system"))
                        for c in req.get("conan") or ()),
            python=tuple(req.get("python") or ()),
            system=tuple(m.SystemRequirement(tuple(x["packages"]), x.get("when", ""),
                                             x.get("why", ""))
                         for x in req.get("system") or ())),
        python=m.PythonSpec(tuple(py.get("versions", ())), py.get("abi", "none"),
                            py.get("package", "python")),
        tests=tuple(m.TestSpec(t["name"], tuple(t["run"]), tuple((t.get("env") or {}).items()),
                               tuple(t.get("backends", ())),
                               tuple((t.get("devices") or {}).items()), t.get("timeout", 1800),
                               bool(t.get("needs_gpu", False)), t.get("cwd", ""))
                    for t in data.get("test") or ()),
        install=m.InstallSpec(inst.get("root", ""),
                              inst.get("layout", m.InstallSpec().layout)),
        kernels=tuple(m.Kernel(k, tuple(v["sources"].items()),
                               tuple((v.get("min_arch") or {}).items()),
                               tuple((b, tuple(f)) for b, f in (v.get("flags") or {}).items()))
                      for k, v in (data.get("kernels") or {}).items()),
        digest=digest, positions=pos)


def validate(data: Any, pos: Positions, file: Path, display: str, digest: str) -> m.Recipe:
    """Schema + semantic checks; returns the model or raises RecipeError with all problems."""
    d = _Diags(pos)
    if not isinstance(data, dict):
        d.add((), f"a recipe must be a mapping, got {_type_name(data)}",
              "start with `package: {name: ..., version: \"...\"}`")
        raise RecipeError(d.items)
    for err in _validator().iter_errors(data):
        _schema_diag(err, d)
    if not d.items:
        _semantic(data, d, file.resolve().parent, project_root_of(file))
    else:
        # the semantic checks too, in the same round, on what the schema errors leave
        # readable: a part they cannot read is skipped, and a finding inside a part the
        # schema already rejected is left out (it would say the same thing twice)
        bad = [x.path for x in d.items]
        sem = _Diags(pos)
        with contextlib.suppress(KeyError, TypeError, AttributeError, ValueError, IndexError):
            _semantic(data, sem, file.resolve().parent, project_root_of(file))
        d.items += [x for x in sem.items if not any(
            not b or x.path == b or x.path.startswith((b + ".", b + "[")) for b in bad)]
    if d.items:
        d.items.sort(key=lambda x: (x.location.line, x.location.col))
        raise RecipeError(d.items)
    return build_model(data, pos, file, display, digest)


def file_digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
