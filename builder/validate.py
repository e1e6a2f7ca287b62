"""Validate recipe documents and turn them into :class:`builder.model.Recipe`.

Two passes: the JSON Schema shipped in ``builder/data/recipe.schema.json`` (shape
and types), then checks the schema cannot express (PEP 440 versions and
specifiers, option defaults, archs that belong to their backend, substitution
variables, kernel sources).  Every problem becomes a :class:`Diagnostic` with the
file, line and column and a hint; all of them are reported at once.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from . import backends as backend_registry
from . import model as m
from .errors import Diagnostic, RecipeError
from .subst import is_known, variables
from .targets import names as target_names
from .yamlload import PathKey, Positions, format_path

KNOWN_TOOLS = ("cmake", "ninja", "conan", "cc", "cxx", "nvcc", "hipcc", "xcrun", "ccache",
               "sccache", "git", "patch")
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


class _Diags:
    def __init__(self, pos: Positions) -> None:
        self.pos = pos
        self.items: list[Diagnostic] = []

    def add(self, path: PathKey, message: str, hint: str = "", *, key: bool = False) -> None:
        loc = self.pos.location(path, key=key)
        self.items.append(Diagnostic(loc, format_path(path), message, hint,
                                     self.pos.line_text(loc.line)))


def _did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else ""


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


def _check_substitutions(text: str, path: PathKey, d: _Diags, option_names: set[str]) -> None:
    for name in variables(text):
        if not is_known(name):
            d.add(path, f"unknown substitution ${{{name}}}",
                  "see the README's substitution table (e.g. ${backend}, ${archs.cmake}, "
                  "${options.NAME}); write $${ for a literal ${")
        elif name.startswith("options.") and name[8:] not in option_names:
            d.add(path, f"${{{name}}} names an option that does not exist",
                  _did_you_mean(name[8:], sorted(option_names)) or
                  f"declared options: {', '.join(sorted(option_names)) or 'none'}")


def _check_option(name: str, spec: dict[str, Any], d: _Diags) -> None:
    typ = spec["type"]
    py = {"bool": bool, "int": int, "str": str, "list": list}[typ]
    base: PathKey = ("options", name)
    default = spec["default"]

    def ok(value: Any, t: type) -> bool:
        return isinstance(value, t) and not (t is int and isinstance(value, bool))

    if not ok(default, py) or (typ == "list" and not all(isinstance(x, str) for x in default)):
        d.add((*base, "default"), f"default {default!r} is not of type {typ}",
              f"give a {typ} value" + (" (a list of strings)" if typ == "list" else ""))
        return
    allowed = spec.get("allowed")
    if allowed is None:
        return
    item_t = str if typ == "list" else py
    for i, a in enumerate(allowed):
        if not ok(a, item_t):
            d.add((*base, "allowed", i), f"allowed value {a!r} is not of type "
                  f"{'str' if typ == 'list' else typ}")
    values = default if typ == "list" else [default]
    for v in values:
        if v not in allowed:
            d.add((*base, "default"), f"default {v!r} is not one of the allowed values",
                  f"allowed: {', '.join(map(str, allowed))}")


def _semantic(data: dict[str, Any], d: _Diags, recipe_dir: Path, project_root: Path) -> None:
    version = data["package"]["version"]
    try:
        Version(version)
    except InvalidVersion:
        d.add(("package", "version"), f"'{version}' is not a valid version",
              "use a PEP 440 version such as \"1.2.0\"")
    options = data.get("options", {})
    for name, spec in options.items():
        _check_option(name, spec, d)
    opt_names = set(options)
    backends = data["backends"]
    builtin = backend_registry.names()
    system = (data.get("build") or {}).get("system", "cmake")
    for bname, spec in backends.items():
        kind = spec.get("kind")
        if kind is None and bname not in builtin:
            d.add(("backends", bname), f"unknown name '{bname}': not a built-in backend "
                  f"({', '.join(builtin)}), so it needs a `kind` saying which one it is",
                  _did_you_mean(bname, list(builtin)) or
                  f"e.g. `{bname}: {{kind: cpu, target: linux-armv8}}`", key=True)
            continue
        if kind is not None and bname in builtin and kind != bname:
            d.add(("backends", bname, "kind"), f"kind {kind} contradicts the name '{bname}', "
                  "which is a built-in backend", "drop `kind`, or give the backend another "
                  "name (e.g. arm)")
            continue
        if kind is not None and bname not in builtin and system == "kernels":
            d.add(("backends", bname), f"a named backend ('{bname}', kind {kind}) is not "
                  "supported with build.system kernels", f"name it {kind}", key=True)
            continue
        target = spec.get("target")
        if target is not None and target not in target_names():
            d.add(("backends", bname, "target"), f"unknown target platform '{target}'",
                  _did_you_mean(target, list(target_names())) or
                  f"known targets (builder/data/targets.json): {', '.join(target_names())}")
        be = backend_registry.get(kind or bname)
        for tool, specifier in (spec.get("tools") or {}).items():
            if tool not in KNOWN_TOOLS:
                d.add(("backends", bname, "tools", tool), f"unknown tool '{tool}'",
                      _did_you_mean(tool, list(KNOWN_TOOLS)) or
                      f"known tools: {', '.join(KNOWN_TOOLS)}", key=True)
            if "${" in specifier:
                _check_substitutions(specifier, ("backends", bname, "tools", tool), d,
                                     opt_names)
                continue
            try:
                SpecifierSet(specifier)
            except InvalidSpecifier:
                d.add(("backends", bname, "tools", tool), f"invalid version specifier "
                      f"'{specifier}'", "use a PEP 440 specifier such as \">=12.0\"")
        for i, arch in enumerate(spec.get("archs") or ()):
            if not be.arch_belongs(arch):
                owner = next((o for o in backend_registry.names() if o != bname and
                              backend_registry.get(o).arch_belongs(arch)), None)
                d.add(("backends", bname, "archs", i),
                      f"'{arch}' is not a {bname} architecture" +
                      (f" (it is a {owner} one)" if owner else ""),
                      f"move it to backends.{owner}.archs" if owner else
                      "cuda archs look like sm_80, rocm like gfx1030, metal like apple-m1")
        for k, v in (spec.get("defines") or {}).items():
            if isinstance(v, str):
                _check_substitutions(v, ("backends", bname, "defines", k), d, opt_names)
        for i, fmt in enumerate(spec.get("formats") or ()):
            if fmt not in be.kernel_formats():
                d.add(("backends", bname, "formats", i), f"'{fmt}' is not a {bname} kernel "
                      f"format", f"{bname} formats: {', '.join(be.kernel_formats()) or 'none'}")
    for k, v in (data.get("defines") or {}).items():
        if isinstance(v, str):
            _check_substitutions(v, ("defines", k), d, opt_names)
    req = data.get("requires") or {}
    for i, r in enumerate(req.get("recipes") or ()):
        if "version" in r:
            try:
                SpecifierSet(r["version"])
            except InvalidSpecifier:
                d.add(("requires", "recipes", i, "version"), f"invalid version specifier "
                      f"'{r['version']}'", "use a PEP 440 specifier such as \">=1.0,<2\"")
    for i, x in enumerate(req.get("system") or ()):
        when = x.get("when", "")
        names = variables(when)
        if when and (len(names) != 1 or not names[0].startswith("options.") or
                     options.get(names[0][8:], {}).get("type") != "bool"):
            d.add(("requires", "system", i, "when"), f"'{when}' must be ${{options.NAME}} "
                  "naming a bool option", "e.g. when: ${options.multinuma}")
    for bname, spec in backends.items():
        opt = spec.get("archs_option")
        if opt and options.get(opt, {}).get("type") != "list":
            d.add(("backends", bname, "archs_option"), f"archs_option names '{opt}', which is "
                  "not a list option", f"declare options.{opt} with type: list")
    for i, text in enumerate(req.get("python") or ()):
        try:
            Requirement(text)
        except InvalidRequirement as exc:
            d.add(("requires", "python", i), f"invalid Python requirement '{text}': {exc}",
                  "use a PEP 508 requirement such as \"torch>=2.0\"")
    for i, t in enumerate(data.get("test") or ()):
        for b in t.get("backends") or ():
            if b not in backends:
                d.add(("test", i, "backends"), f"test '{t['name']}' names backend '{b}' that "
                      f"the recipe does not declare", f"declared: {', '.join(backends)}")
        for j, arg in enumerate(t["run"]):
            _check_substitutions(arg, ("test", i, "run", j), d, opt_names)
        for k, v in (t.get("env") or {}).items():
            _check_substitutions(v, ("test", i, "env", k), d, opt_names)
        if "cwd" in t:
            _check_substitutions(t["cwd"], ("test", i, "cwd"), d, opt_names)
    inst = data.get("install") or {}
    for k in ("root", "layout"):
        if k in inst:
            _check_substitutions(inst[k], ("install", k), d, opt_names)
    if "layout" in inst:
        problem = layout_problem(inst["layout"])
        if problem:
            d.add(("install", "layout"), problem, "write a relative path below the root that "
                  "starts with ${backend}/, e.g. ${backend}/${kernel}/${arch}.${ext}")
    mem = data.get("memory") or {}
    for part in ("unity", "pch"):
        flag = (mem.get(part) or {}).get("enabled")
        if isinstance(flag, str):
            names = variables(flag)
            if len(names) != 1 or not names[0].startswith("options.") or flag != f"${{{names[0]}}}":
                d.add(("memory", part, "enabled"), f"'{flag}' must be true, false or "
                      "${options.NAME}", "name a bool option, e.g. ${options.unity}")
            elif options.get(names[0][8:], {}).get("type") != "bool":
                d.add(("memory", part, "enabled"), f"{flag} must name a bool option",
                      f"declare options.{names[0][8:]} with type: bool")
    enabled_by = (data.get("build") or {}).get("enabled_by")
    if enabled_by and options.get(enabled_by, {}).get("type") != "bool":
        d.add(("build", "enabled_by"), f"enabled_by names '{enabled_by}', which is not a bool "
              "option", f"declare options.{enabled_by} with type: bool")
    kernels = data.get("kernels") or {}
    if system == "kernels" and not kernels:
        d.add(("build", "system"), "build.system is `kernels` but no kernels are declared",
              "add a `kernels:` section")
    if system != "kernels" and kernels:
        d.add(("kernels",), "`kernels` is only used with `build: {system: kernels}`",
              "set build.system to kernels, or remove the section", key=True)
    gpu_backends = [b for b, spec in backends.items() if spec.get("kind", b) in builtin and
                    backend_registry.get(spec.get("kind", b)).kernel_formats()]
    for kname, k in kernels.items():
        for b in k["sources"]:
            if b not in backends:
                d.add(("kernels", kname, "sources", b), f"kernel '{kname}' has a {b} source but "
                      f"the recipe declares no {b} backend", f"add backends.{b} or remove the "
                      f"source", key=True)
        for b in gpu_backends:
            if b not in k["sources"]:
                d.add(("kernels", kname, "sources"), f"kernel '{kname}' has no source for the "
                      f"declared backend '{b}'", f"add sources.{b}: <file>, or remove "
                      f"backends.{b}")
        for b, arch in (k.get("min_arch") or {}).items():
            if not backend_registry.get(b).arch_belongs(arch):
                d.add(("kernels", kname, "min_arch", b), f"'{arch}' is not a {b} architecture")
        for b, rel in k["sources"].items():
            _check_below(rel, ("kernels", kname, "sources", b), "the source root", d)
    _check_below((data.get("python") or {}).get("package"), ("python", "package"),
                 "the install prefix", d)
    for src in _sources(data):
        _check_below(src.get("subdir"), ("source", "subdir"), "the source root", d)
        for j, patch in enumerate(src.get("patches") or ()):
            if not _resolve(recipe_dir / patch).is_relative_to(project_root):
                d.add(("source", "patches", j), f"patch file '{patch}' is outside the "
                      f"recipe's project ({project_root})", "keep patches in the project")
            elif not _fs_check((recipe_dir / patch).is_file):
                d.add(("source", "patches", j), f"patch file '{patch}' does not exist",
                      "patch paths are relative to the recipe file's folder")
        if "path" in src:
            p = _resolve(recipe_dir / src["path"])
            where: PathKey = ("source", "path")
            if not p.is_relative_to(project_root):
                d.add(where, f"'{src['path']}' leaves the recipe's project ({project_root})",
                      "keep path sources inside the project; use git or url sources for "
                      "anything else")
            elif not _fs_check(p.is_dir):
                d.add(where, f"source folder '{src['path']}' does not exist ({p})",
                      "the path is relative to the recipe file's folder")
        if "git" in src and str(src["git"]).startswith("-"):
            d.add(("source", "git"), f"'{src['git']}' is not a repository",
                  "give a URL or a path (a leading '-' would be read as an option)")
        if "git" in src and not _is_full_rev(src.get("rev", "")):
            where = ("source", "rev")
            if not src.get("allow_branch"):
                d.add(where, f"rev '{src.get('rev')}' is not a full commit id",
                      "pin a full 40-hex commit (`git rev-parse BRANCH`); branches and tags "
                      "move. To follow a branch anyway, add `allow_branch: true` (not "
                      "reproducible)")
            elif not is_ref_name(src.get("rev", "")):
                d.add(where, f"rev '{src.get('rev')}' is not a branch or tag name",
                      "use a name such as main or release/1.2 (letters, digits, '.', '_', "
                      "'-', '/'; not starting with '-')")
        elif "git" not in src and "allow_branch" in src:
            d.add(("source", "allow_branch"), "allow_branch only applies to git sources",
                  "remove it", key=True)


def _check_below(rel: Any, path: PathKey, what: str, d: _Diags) -> None:
    """A relative path from a recipe that must stay below ``what``."""
    if not isinstance(rel, str):
        return
    parts = rel.replace("\\", "/").split("/")
    if rel.startswith(("/", "\\", "~")) or ".." in parts:
        d.add(path, f"'{rel}' leaves {what}", f"write a relative path below {what}, "
              "without '..'")


def layout_problem(layout: str) -> str:
    """Why an ``install.layout`` (as written, or after substitution) could put a file
    anywhere but below ``<root>/<backend>/``; empty when it cannot."""
    parts = layout.replace("\\", "/").split("/")
    if layout.startswith(("/", "\\", "~")):
        return f"'{layout}' is absolute; the layout is a path below install.root"
    if ".." in parts:
        return f"'{layout}' contains '..' and would leave the install root"
    if len(parts) < 2 or parts[0] not in ("${backend}", "cpu", "cuda", "rocm", "metal") or \
            "" in parts[1:] or "." in parts:
        return (f"'{layout}' must start with ${{backend}}/ and name a file below it (each "
                f"backend's tree is published as one folder)")
    return ""


def _resolve(path: Path) -> Path:
    """``path.resolve()``; a name the OS refuses (a NUL byte, too long, a symlink loop)
    gives a path that is nowhere, which the checks then report as missing."""
    try:
        return path.resolve()
    except (OSError, ValueError, RuntimeError):
        return Path("/nonexistent/\N{REPLACEMENT CHARACTER}")


def _fs_check(test: Callable[[], bool]) -> bool:
    """``Path.is_file``/``is_dir`` that answers False for a name the OS refuses (too long,
    a NUL byte) instead of raising."""
    try:
        return test()
    except (OSError, ValueError):
        return False


def is_ref_name(rev: str) -> bool:
    """A branch or tag name that git accepts and that cannot be read as an option."""
    return bool(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._/-]*", rev)) and ".." not in rev \
        and "//" not in rev and not rev.endswith(("/", ".", ".lock")) and len(rev) <= 200


def is_full_rev(rev: str) -> bool:
    return _is_full_rev(rev)


def _is_full_rev(rev: str) -> bool:
    return len(rev) == 40 and all(c in "0123456789abcdef" for c in rev)


def _sources(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [data["source"]]


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
    if d.items:
        d.items.sort(key=lambda x: (x.location.line, x.location.col))
        raise RecipeError(d.items)
    return build_model(data, pos, file, display, digest)


def file_digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
