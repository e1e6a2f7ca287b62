"""The inputs of a variant's key that are not in the recipe's text: the values of the
environment variables a recipe substitutes.

Which texts are substituted is said once, by the schema (``"x-substitute"`` marks), and
the loader lists them on the model (:attr:`Recipe.substituted`); everything here is
derived from that list.  :func:`env_names` is what the command line snapshots from the
environment, :func:`env_inputs` what goes into the keys (the values the compile texts
read into the compile key, those only the tests read — ``tests=True`` — into the variant
key alone), and :func:`env_values` the only ``env.X`` values substitution is given: a text
that is substituted without being listed finds no value for its ``${env.X}`` and fails
the plan instead of building with an unkeyed value.

An unset variable without a default (``${env.X:-text}``) is an error naming the recipe's
file, line and column; it never reads as an empty string.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from builder.errors import Diagnostic, Location, RecipeError
from builder.recipe.model import Recipe
from builder.recipe.subst import Interpolated, env_default, variables
from builder.recipe.yamlload import format_path
from builder.util.memo import per_object

__all__ = ["compile_texts", "env_inputs", "env_names", "env_snapshot", "env_values",
           "require_set", "test_texts", "texts"]


def texts(recipe: Recipe) -> list[str]:
    """Every text of ``recipe`` in which ``${...}`` is substituted."""
    return [t.text for t in recipe.substituted]


def test_texts(recipe: Recipe) -> list[str]:
    """The texts only the tests substitute: their argv, environment and folder."""
    return [t.text for t in recipe.substituted if t.scope == "test"]


def compile_texts(recipe: Recipe) -> list[str]:
    """The texts substituted into what is compiled (and where it is installed)."""
    return [t.text for t in recipe.substituted if t.scope != "test"]


@per_object
def _refs(recipe: Recipe) -> list[tuple[str, str | None, Interpolated]]:
    """(NAME, default or None, the text) of each ``${env.NAME}`` the recipe writes."""
    out = []
    for t in recipe.substituted:
        for var in variables(t.text):
            name, default = env_default(var)
            if name.startswith("env."):
                out.append((name[4:], default, t))
    return out


def env_names(recipe: Recipe) -> set[str]:
    """The environment variables ``recipe`` substitutes (``${env.NAME}``)."""
    return {n for n, _, _ in _refs(recipe)}


def env_values(recipe: Recipe, env: Mapping[str, str]) -> dict[str, str]:
    """``env.NAME`` → value for the variables ``recipe`` substitutes and that are set:
    the only environment values its substitution sees."""
    return {f"env.{n}": env[n] for n in env_names(recipe) if n in env}


def _elsewhere(text: Interpolated, backend: str) -> bool:
    """A text of another backend than ``backend`` ("": every backend's is used)."""
    return bool(backend) and len(text.path) > 1 and text.path[0] == "backends" and \
        text.path[1] != backend


def env_inputs(recipe: Recipe, env: Mapping[str, str], tests: bool = False,
               backend: str = "") -> list[tuple[str, str]]:
    """(name, value) of every variable ``recipe``'s compile texts substitute (``tests``:
    of those only its tests substitute).  The raw value: a default is recipe text, keyed
    with its field; an unset variable is keyed as unset (a variant that is built needs it
    set: :func:`require_set`).  ``backend``: the variant's; another backend's texts are
    not its inputs."""
    refs = [r for r in _refs(recipe) if not _elsewhere(r[2], backend)]
    compiled = {n for n, _, t in refs if t.scope != "test"}
    return sorted({name: env.get(name, "\0unset") for name, _, _ in refs
                   if (name in compiled) != tests}.items())


def require_set(recipe: Recipe, env: Mapping[str, str], backend: str) -> None:
    """Raise :class:`RecipeError` at the first ``${env.NAME}`` without a default that is
    unset, among the texts a ``backend`` variant uses (another backend's are its own)."""
    for name, default, text in _refs(recipe):
        if name not in env and default is None and not _elsewhere(text, backend):
            raise _unset(recipe, name, text)


def _unset(recipe: Recipe, name: str, text: Interpolated) -> RecipeError:
    pos = recipe.positions
    loc = pos.location(text.path) if pos else Location(recipe.display)
    loc = Location(recipe.display, loc.line, loc.col)
    line = pos.line_text(loc.line) if pos else ""
    if line and "${env." + name in line:  # point at the variable itself
        loc = Location(loc.file, loc.line, line.index("${env." + name) + 1)
    return RecipeError([Diagnostic(
        loc, format_path(text.path),
        f"${{env.{name}}} is not set, and builder never substitutes an unset variable as "
        f"an empty string",
        f"set {name} in the environment, or write a default: ${{env.{name}:-VALUE}}",
        line)])


def env_snapshot(environ: Mapping[str, str], recipes: Sequence[Recipe]) -> tuple[
        tuple[str, str], ...]:
    """The environment variables a plan may depend on (kept small and explicit)."""
    names = {"HOME"}
    for r in recipes:
        names.update(n for o in r.options for n in (o.env, o.legacy_env) if n)
        names.update(env_names(r))  # every text docs/recipes.md allows ${env.X} in
    return tuple(sorted((n, environ[n]) for n in names if n in environ))
