"""Finding, loading and cross-checking recipes.

A recipe is named on the command line by its package name (looked up in the
project's ``recipes/`` folder) or by a path to a ``.yaml`` file anywhere.  The
whole set is then checked for what no single file can show: duplicate names,
requirements on unknown recipes or on versions that do not exist, dependency
cycles and conflicting Conan references.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from builder.errors import Diagnostic, Location, RecipeError, UsageError
from builder.recipe.model import Recipe
from builder.recipe.schemapass import SchemaPasses
from builder.recipe.validate import file_digest, validate
from builder.recipe.yamlload import load_text, read_text

__all__ = ["RecipeSet", "check_set", "display_path", "load_all", "load_recipe", "recipe_files"]


def display_path(path: Path) -> str:
    """Relative to the current folder when below it, else absolute (never ``../..``)."""
    full = path.resolve()
    try:
        return str(full.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(full)


def load_recipe(path: Path, passes: SchemaPasses | None = None) -> Recipe:
    """``passes``: the files known to pass the schema (:mod:`builder.recipe.schemapass`)."""
    display = display_path(path)
    text, raw = read_text(path, display)
    data, pos = load_text(text, display)
    return validate(data, pos, path, display, file_digest(raw), passes)


def recipe_files(recipes_dir: Path) -> list[Path]:
    if not recipes_dir.is_dir():
        return []
    return sorted(p for p in recipes_dir.iterdir() if p.suffix in (".yaml", ".yml"))


def _looks_like_path(arg: str) -> bool:
    return arg.endswith((".yaml", ".yml")) or os.sep in arg or arg.startswith(".")


def load_all(paths: Iterable[Path]) -> list[Recipe]:
    """Load every file, collecting the problems of all of them into one error."""
    recipes, problems, _ = _load_each(paths)
    if problems:
        raise RecipeError(problems)
    return recipes


def _load_each(paths: Iterable[Path], passes: SchemaPasses | None = None
               ) -> tuple[list[Recipe], list[Diagnostic], set[str]]:
    """The recipes that load, the problems of those that do not, and the package names those
    declare (as far as they can be read), so that the set's checks run on the rest."""
    recipes: list[Recipe] = []
    problems: list[Diagnostic] = []
    names: set[str] = set()
    for p in paths:
        try:
            recipes.append(load_recipe(p, passes))
        except RecipeError as exc:
            problems.extend(exc.diagnostics)
            try:
                data, _ = load_text(read_text(p, str(p))[0], str(p))
                name = data.get("package", {}).get("name") if isinstance(data, dict) else None
                if isinstance(name, str):
                    names.add(name)
            except (RecipeError, AttributeError):
                pass
    return recipes, problems, names


class RecipeSet:
    """The recipes of a project plus any named by path, checked together."""

    def __init__(self, recipes: list[Recipe], problems: Iterable[Diagnostic] = (),
                 unloaded: Iterable[str] = ()) -> None:
        """``problems``: those of files that did not load (reported together with the set's
        own); ``unloaded``: their package names (not "unknown" to a requirement)."""
        self.recipes = recipes
        self.by_name: dict[str, Recipe] = {}
        problems = [*problems, *check_set(recipes, set(unloaded))]
        if problems:
            raise RecipeError(problems)
        for r in recipes:
            self.by_name[r.name] = r

    @staticmethod
    def load(recipes_dir: Path, extra_paths: Iterable[Path] = (),
             schema_passes: Path | None = None) -> RecipeSet:
        """``schema_passes``: the file that remembers which recipe files passed the
        schema (:mod:`builder.recipe.schemapass`); None checks every file."""
        seen: set[Path] = set()
        paths: list[Path] = []
        for p in [*recipe_files(recipes_dir), *extra_paths]:
            rp = p.resolve()
            if rp not in seen:
                seen.add(rp)
                paths.append(p)
        passes = SchemaPasses(schema_passes) if schema_passes is not None else None
        recipes, problems, unloaded = _load_each(paths, passes)
        if passes is not None:
            passes.save()
        return RecipeSet(recipes, problems, unloaded)

    def select(self, args: Iterable[str], recipes_dir: Path) -> list[Recipe]:
        """Recipes named by ``args`` (names or paths)."""
        out: list[Recipe] = []
        for a in args:
            if _looks_like_path(a):
                rp = Path(a).resolve()
                match = [r for r in self.recipes if r.file == rp]
                if not match:
                    raise UsageError(f"no recipe file {a}")
                out.extend(match)
            elif a in self.by_name:
                out.append(self.by_name[a])
            else:
                import difflib

                close = difflib.get_close_matches(a, list(self.by_name), n=1)
                known = ", ".join(sorted(self.by_name)) or "none"
                raise UsageError(f"unknown recipe '{a}'" +
                                 (f" — did you mean '{close[0]}'?" if close else "") +
                                 f" (recipes in {display_path(recipes_dir)}: {known})")
        return out

    def closure(self, roots: Iterable[Recipe]) -> list[Recipe]:
        """``roots`` and everything they require, dependencies first (deterministic)."""
        order: list[Recipe] = []
        done: set[str] = set()

        def visit(r: Recipe) -> None:
            if r.name in done:
                return
            done.add(r.name)
            for req in r.requires.recipes:
                visit(self.by_name[req.name])
            order.append(r)

        for r in roots:
            visit(r)
        return order


def _loc(r: Recipe, path: tuple[str | int, ...]) -> tuple[Location, str]:
    if r.positions is None:
        return Location(r.display), ""
    loc = r.positions.location(path)
    return loc, r.positions.line_text(loc.line)


def check_set(recipes: list[Recipe], unloaded: AbstractSet[str] = frozenset()
              ) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    by_name: dict[str, Recipe] = {}
    for r in recipes:
        if r.name in by_name:
            loc, line = _loc(r, ("package", "name"))
            problems.append(Diagnostic(loc, "package.name", f"recipe name '{r.name}' is also "
                                       f"used by {by_name[r.name].display}",
                                       "give each recipe a unique package.name", line))
        else:
            by_name[r.name] = r
    conan_refs: dict[str, tuple[str, Recipe]] = {}
    for r in recipes:
        for i, req in enumerate(r.requires.recipes):
            loc, line = _loc(r, ("requires", "recipes", i))
            other = by_name.get(req.name)
            if other is None and req.name in unloaded:
                continue  # its file has errors of its own, reported with these
            if other is None:
                import difflib

                close = difflib.get_close_matches(req.name, list(by_name), n=1)
                problems.append(Diagnostic(loc, f"requires.recipes[{i}]", f"requires unknown "
                                           f"recipe '{req.name}'",
                                           f"did you mean '{close[0]}'?" if close else
                                           "add its recipe to the recipes folder", line))
            elif req.spec and Version(other.version) not in SpecifierSet(req.spec):
                problems.append(Diagnostic(loc, f"requires.recipes[{i}]", f"requires "
                                           f"{req.name}{req.spec} but {other.display} has "
                                           f"version {other.version}",
                                           "relax the specifier or change that recipe", line))
        for i, creq in enumerate(r.requires.conan):
            ref = creq.ref
            name, _, version = ref.partition("/")
            if name in conan_refs and conan_refs[name][0] != version:
                loc, line = _loc(r, ("requires", "conan", i))
                first_v, first_r = conan_refs[name]
                problems.append(Diagnostic(loc, f"requires.conan[{i}]", f"version conflict: "
                                           f"{ref} here, {name}/{first_v} in {first_r.display}",
                                           "require the same version everywhere", line))
            else:
                conan_refs.setdefault(name, (version, r))
    problems.extend(_backend_meanings(recipes))
    problems.extend(_cycles(by_name))
    return problems


def _backend_meanings(recipes: list[Recipe]) -> list[Diagnostic]:
    """A backend name means one thing in every recipe (``--backend arm``, the nox session
    ``build-arm-3.11`` and dependencies select by name): the same kind and target."""
    first: dict[str, tuple[str, str, Recipe]] = {}
    problems: list[Diagnostic] = []
    for r in recipes:
        for b in r.backends:
            seen = first.setdefault(b.name, (b.backend_kind, b.target, r))
            if seen[:2] != (b.backend_kind, b.target):
                loc, line = _loc(r, ("backends", b.name))
                other = f"kind {seen[0]}" + (f", target {seen[1]}" if seen[1] else "")
                here = f"kind {b.backend_kind}" + (f", target {b.target}" if b.target else "")
                problems.append(Diagnostic(loc, f"backends.{b.name}", f"backend '{b.name}' is "
                                           f"{here} here but {other} in {seen[2].display}",
                                           "give it the same kind and target everywhere, or "
                                           "another name", line))
    return problems


def _cycles(by_name: dict[str, Recipe]) -> list[Diagnostic]:
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []
    found: list[Diagnostic] = []

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for req in by_name[name].requires.recipes:
            if req.name not in by_name:
                continue
            if state.get(req.name) == 1:
                cycle = [*stack[stack.index(req.name):], req.name]
                r = by_name[name]
                idx = [q.name for q in r.requires.recipes].index(req.name)
                loc, line = _loc(r, ("requires", "recipes", idx))
                found.append(Diagnostic(loc, f"requires.recipes[{idx}]", "dependency cycle: " +
                                        " → ".join(cycle), "remove one of these requirements",
                                        line))
            elif req.name not in state:
                visit(req.name)
        stack.pop()
        state[name] = 2

    for n in sorted(by_name):
        if n not in state:
            visit(n)
    return found
