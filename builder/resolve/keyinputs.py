"""The inputs of a variant's key that are not in the recipe's text: the values of the
environment variables a recipe substitutes.

Every place the README allows ``${...}`` is listed here once (:func:`texts`): defines
(the recipe's and each backend's), flags (every layer, language and backend, and each
kernel's), tests (argv, environment, working folder), ``install.root`` and
``install.layout``, and the ``memory`` switches.  :func:`env_names` is what the command
line snapshots from the environment (so that substitution sees the value everywhere),
and :func:`env_inputs` is what goes into the keys (so that a changed value rebuilds): the
values the compile inputs substitute go into the compile key, those only the tests
substitute (``tests=True``) into the variant key alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from builder.recipe.model import LANGS, FlagLayers, Recipe
from builder.recipe.subst import variables
from builder.util.memo import per_object

__all__ = ["compile_texts", "env_inputs", "env_names", "test_texts", "texts"]


def _flags(layers: FlagLayers) -> Iterator[str]:
    for layer in (layers.common, layers.release, layers.debug, layers.relwithdebinfo):
        for lang in LANGS:
            yield from layer.get(lang)


def texts(recipe: Recipe) -> list[str]:
    """Every text of ``recipe`` in which ``${...}`` is substituted."""
    return compile_texts(recipe) + test_texts(recipe)


def test_texts(recipe: Recipe) -> list[str]:
    """The texts only the tests substitute: their argv, environment and folder."""
    out: list[str] = []
    for t in recipe.tests:
        out.extend(t.run)
        out.extend(v for _, v in t.env)
        out.append(t.cwd)
    return [t for t in out if t]


def compile_texts(recipe: Recipe) -> list[str]:
    """The texts substituted into what is compiled (and where it is installed)."""
    out: list[str] = [recipe.install.root, recipe.install.layout]
    out.extend(v for _, v in recipe.defines)
    out.extend(_flags(recipe.flags))
    for b in recipe.backends:
        out.extend(v for _, v in b.defines)
        out.extend(_flags(b.flags))
    for k in recipe.kernels:
        out.extend(f for _, fs in k.flags for f in fs)
    out.extend(s for s in (recipe.memory.unity, recipe.memory.pch) if isinstance(s, str))
    return [t for t in out if t]


def env_names(recipe: Recipe) -> set[str]:
    """The environment variables ``recipe`` substitutes (``${env.NAME}``)."""
    return set(_env_names(recipe))


@per_object
def _env_names(recipe: Recipe) -> frozenset[str]:
    return frozenset(n[4:] for t in texts(recipe) for n in variables(t)
                     if n.startswith("env."))


@per_object
def _compiled_env_names(recipe: Recipe) -> frozenset[str]:
    return frozenset(n[4:] for t in compile_texts(recipe) for n in variables(t)
                     if n.startswith("env."))


def env_inputs(recipe: Recipe, env: Mapping[str, str], tests: bool = False
               ) -> list[tuple[str, str]]:
    """(name, value) of every variable ``recipe``'s compile inputs substitute (``tests``:
    of those only its tests substitute); unset reads as empty, as substitution does."""
    compiled = _compiled_env_names(recipe)
    names = env_names(recipe) - compiled if tests else compiled
    return sorted((n, env.get(n, "")) for n in names)
