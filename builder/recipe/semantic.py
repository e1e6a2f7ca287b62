"""The semantic pass: recipe checks that the JSON Schema cannot express.

It runs after the schema pass (:mod:`builder.recipe.validate`) on a document whose shape is
already right, and checks what needs values, other parts of the recipe or the file
system:

* PEP 440 versions and specifiers (``package.version``, ``tools``, ``requires``) and
  PEP 508 Python requirements;
* options: defaults and allowed values of the declared type; options named by
  ``archs_option``, ``enabled_by``, ``memory.*.enabled`` and ``requires.system[].when``
  exist and have the right type;
* backends: a built-in name or a ``kind``, a known target platform and known tools,
  archs that belong to their backend, kernel formats of that backend;
* substitutions: in every text the schema marks as substituted
  (:func:`builder.recipe.subst.interpolated`), every ``${name}`` is a known variable and
  ``${options.NAME}`` a declared option;
* kernels: ``build.system: kernels`` has kernels (and only it does), one source per
  declared GPU backend, ``min_arch`` of the right backend;
* paths: kernel sources, ``source.subdir``, ``python.package`` and ``install.layout``
  stay below their root; path sources and patches exist inside the recipe's project;
  git sources are pinned to a full commit (or, with ``allow_branch``, name a branch).

Every problem is added to a :class:`~builder.recipe.diags.Diags`; nothing is raised here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from builder import backends as backend_registry
from builder.backends.platforms import names as target_names
from builder.recipe.devicecode import check_device_code
from builder.recipe.diags import Diags, did_you_mean
from builder.recipe.giturl import git_url_problems
from builder.recipe.misplaced import misplaced_keys
from builder.recipe.subst import interpolated, is_known, variables
from builder.recipe.yamlload import PathKey

__all__ = ["KNOWN_TOOLS", "check_semantics", "is_full_rev", "is_ref_name", "layout_problem",
           "source_entries"]

#: tools a backend may ask for by version: the build tools and each backend's own
KNOWN_TOOLS = ("cmake", "ninja", "conan", "cc", "cxx", "ccache", "sccache", "git", "patch",
               "xmake",
               *(be.tool for be in backend_registry.backends() if be.tool))


def _check_substitutions(text: str, path: PathKey, d: Diags, option_names: set[str]) -> None:
    for name in variables(text):
        if not is_known(name):
            d.add(path, f"unknown substitution ${{{name}}}",
                  "see docs/recipes.md (Substitutions; e.g. ${backend}, ${archs.cmake}, "
                  "${options.NAME}); write $${ for a literal ${")
        elif name.startswith("options.") and name[8:] not in option_names:
            d.add(path, f"${{{name}}} names an option that does not exist",
                  did_you_mean(name[8:], sorted(option_names)) or
                  f"declared options: {', '.join(sorted(option_names)) or 'none'}")


def _check_option(name: str, spec: dict[str, Any], d: Diags) -> None:
    typ = spec["type"]
    py = {"bool": bool, "int": int, "str": str, "list": list}[typ]
    base: PathKey = ("options", name)
    default = spec["default"]
    if spec.get("secret") and typ != "str":
        d.add((*base, "secret"), f"a secret option holds text, not a {typ}", "use type: str")

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


def check_semantics(data: dict[str, Any], d: Diags, recipe_dir: Path, project_root: Path,
                    schema: dict[str, Any]) -> None:
    """Every rule the schema cannot say, each problem added to ``d`` (nothing raised).
    ``schema``: the recipe schema, whose marks say which texts are substituted."""
    version = (data.get("package") or {}).get("version")
    try:
        if isinstance(version, str):  # else a schema error says so
            Version(version)
    except InvalidVersion:
        d.add(("package", "version"), f"'{version}' is not a valid version",
              "use a PEP 440 version such as \"1.2.0\"")
    options = data.get("options") or {}
    for name, spec in options.items():
        _check_option(name, spec, d)
    opt_names = set(options)
    for text in interpolated(schema, data):
        _check_substitutions(text.text, text.path, d, opt_names)
    system = (data.get("build") or {}).get("system", "cmake")
    for bname, spec in (data.get("backends") or {}).items():
        _check_backend(bname, spec, system, opt_names, d)
    _check_requires(data, options, d)
    _check_tests(data, opt_names, d)
    _check_install(data, opt_names, d)
    _check_build_settings(data, d, opt_names)
    _check_switches(data, options, d)
    _check_kernels(data, system, d)
    _check_below((data.get("python") or {}).get("package"), ("python", "package"),
                 "the install prefix", d)
    _check_wheel(data, d)
    for src in source_entries(data):
        _check_source(src, recipe_dir, project_root, d)


def _check_backend(bname: str, spec: dict[str, Any], system: str, opt_names: set[str],
                   d: Diags) -> None:
    """A backend's kind and target, tools, archs, defines and kernel formats."""
    builtin = backend_registry.names()
    kind = spec.get("kind")
    if kind is None and bname in misplaced_keys():
        return  # a mis-indented key: said by recipe.misplaced
    if kind is None and bname not in builtin:
        d.add(("backends", bname), f"unknown name '{bname}': not a built-in backend "
              f"({', '.join(builtin)}), so it needs a `kind` saying which one it is",
              did_you_mean(bname, list(builtin)) or
              f"e.g. `{bname}: {{kind: cpu, target: linux-armv8}}`", key=True)
        return
    if kind is not None and bname in builtin and kind != bname:
        d.add(("backends", bname, "kind"), f"kind {kind} contradicts the name '{bname}', "
              "which is a built-in backend", "drop `kind`, or give the backend another "
              "name (e.g. arm)")
        return
    if kind is not None and bname not in builtin and system == "kernels":
        d.add(("backends", bname), f"a named backend ('{bname}', kind {kind}) is not "
              "supported with build.system kernels", f"name it {kind}", key=True)
        return
    target = spec.get("target")
    if target is not None and target not in target_names():
        d.add(("backends", bname, "target"), f"unknown target platform '{target}'",
              did_you_mean(target, list(target_names())) or
              f"known targets (builder/resources/targets.json): {', '.join(target_names())}")
    be = backend_registry.get(kind or bname)
    for tool, specifier in (spec.get("tools") or {}).items():
        if tool not in KNOWN_TOOLS:
            d.add(("backends", bname, "tools", tool), f"unknown tool '{tool}'",
                  did_you_mean(tool, list(KNOWN_TOOLS)) or
                  f"known tools: {', '.join(KNOWN_TOOLS)}", key=True)
        if "${" in specifier:
            _check_substitutions(specifier, ("backends", bname, "tools", tool), d,
                                 opt_names)
            return
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
    check_device_code(bname, spec, be, d)



def _check_requires(data: dict[str, Any], options: dict[str, Any], d: Diags) -> None:
    """Version specifiers of required recipes, ``when`` conditions of system packages,
    ``archs_option`` types and PEP 508 Python requirements."""
    backends = data.get("backends") or {}
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


def _check_tests(data: dict[str, Any], opt_names: set[str], d: Diags) -> None:
    backends = data.get("backends") or {}
    for i, t in enumerate(data.get("test") or ()):
        for b in t.get("backends") or ():
            if b not in backends:
                d.add(("test", i, "backends"), f"test '{t['name']}' names backend '{b}' that "
                      f"the recipe does not declare", f"declared: {', '.join(backends)}")


def _check_install(data: dict[str, Any], opt_names: set[str], d: Diags) -> None:
    inst = data.get("install") or {}
    for i, f in enumerate(inst.get("files") or ()):
        src = f.get("from") if isinstance(f, dict) else None
        if isinstance(src, str):  # below ${source} or ${build}, never elsewhere
            rest = re.sub(r"^\$\{(source|build)\}/?", "", src)
            _check_below(rest, ("install", "files", i, "from"),
                         "the source and build trees", d)
    if "layout" in inst:
        problem = layout_problem(inst["layout"])
        if problem:
            d.add(("install", "layout"), problem, "write a relative path below the root that "
                  "starts with ${backend}/, e.g. ${backend}/${kernel}/${arch}.${ext}")


def _check_switches(data: dict[str, Any], options: dict[str, Any], d: Diags) -> None:
    """``memory.unity/pch.enabled``, ``build.enabled_by`` and ``test[].enabled_by`` name
    bool options."""
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
    switches: list[tuple[PathKey, Any]] = [
        (("build", "enabled_by"), (data.get("build") or {}).get("enabled_by")),
        *((("test", i, "enabled_by"), t.get("enabled_by"))
          for i, t in enumerate(data.get("test") or ()) if isinstance(t, dict))]
    for path, enabled_by in switches:
        if enabled_by and options.get(enabled_by, {}).get("type") != "bool":
            d.add(path, f"enabled_by names '{enabled_by}', which is not a bool option",
                  f"declare options.{enabled_by} with type: bool")


def _check_kernels(data: dict[str, Any], system: str, d: Diags) -> None:
    backends = data.get("backends") or {}
    builtin = backend_registry.names()
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


def _check_source(src: dict[str, Any], recipe_dir: Path, project_root: Path, d: Diags) -> None:
    """Subdir, patches, where a path source is, and how a git source is pinned."""
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
    for problem, fix in git_url_problems(str(src.get("git", ""))):
        d.add(("source", "git"), problem, fix)
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




def _check_wheel(data: dict[str, Any], d: Diags) -> None:
    """``python.abi: abi3`` and its ``limited_api``; ``wheel.requires`` are PEP 508."""
    py = data.get("python") or {}
    versions = py.get("versions") or []
    floor = py.get("limited_api")
    if floor and py.get("abi") != "abi3":
        d.add(("python", "limited_api"), "limited_api applies to abi: abi3 only",
              "set python.abi: abi3 (the extension uses the stable ABI) or drop limited_api")
    elif floor and versions:
        def key(v: str) -> tuple[int, ...]:
            return tuple(int(x) for x in v.split("."))

        low = min(versions, key=key)
        if key(floor) > key(low):
            d.add(("python", "limited_api"), f"limited_api {floor} is above Python {low}, "
                  f"listed in python.versions: a cp{floor.replace('.', '')}-abi3 wheel does "
                  f"not install there", f"limited_api: \"{low}\", or drop {low} from versions")
    for i, text in enumerate((data.get("wheel") or {}).get("requires") or ()):
        try:
            Requirement(text)
        except InvalidRequirement as exc:
            d.add(("wheel", "requires", i), f"invalid requirement '{text}': {exc}",
                  "use a PEP 508 requirement such as \"numpy>=1.24\"")


#: build settings → the build systems that use them
_BUILD_SETTINGS = {"frontend": ("python",), "config_settings": ("python",),
                   "env": ("python", "xmake"), "configure_args": ("xmake",)}


def _check_build_settings(data: dict[str, Any], d: Diags, opt_names: set[str]) -> None:
    """python/xmake build settings: used by their build system only, known substitutions;
    ``install.files`` destinations stay below the prefix."""
    build = data.get("build") or {}
    system = build.get("system", "cmake")
    for key, systems in _BUILD_SETTINGS.items():
        if key in build and system not in systems:
            d.add(("build", key), f"build.{key} is only used with build.system "
                  f"{' or '.join(systems)} (this recipe uses {system})",
                  "remove it, or set build.system", key=True)
    inst = data.get("install") or {}
    for j, f in enumerate(inst.get("files") or ()):
        _check_below(f["to"], ("install", "files", j, "to"), "the install prefix", d)
    if inst.get("project_rules") is False and not inst.get("files"):
        d.add(("install", "project_rules"), "project_rules is false but install.files is "
              "empty: nothing would be installed", "list what to collect under install.files")


def _check_below(rel: Any, path: PathKey, what: str, d: Diags) -> None:
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
    if len(parts) < 2 or parts[0] not in ("${backend}", *backend_registry.names()) or \
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
        return Path("/nonexistent/\ufffd")  # U+FFFD: no file has this name


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


def source_entries(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [data["source"]]
