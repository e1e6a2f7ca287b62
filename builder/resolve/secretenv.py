"""Secrets a step needs from the shell that runs builder — by name, never by value.

Two recipe forms, one rule: a secret's value is never in a plan, a key, a lockfile, a
manifest or a log, and every output masks it (:mod:`builder.util.secrets`, the one
redactor).

* ``secrets: [HF_TOKEN]`` on a test (``test[].secrets``) or on the build
  (``build.secrets``): the variable is passed through, unchanged and under its own name,
  to that test or to the steps that build (:data:`BUILD_KINDS`).  The plan holds the
  names and where the recipe declares them (:attr:`Step.secrets`); the executor reads the
  values when the step starts (:func:`builder.resolve.stepenv.compose`).
* an ``env`` entry ``{value: "Bearer ${env.TOKEN}", secret: true}`` (``build.env``,
  ``test[].env``): the plan holds the reference ``${secret:RECIPE/…}``
  (:func:`env_reference`); the command line substitutes the value from the environment
  (:func:`env_values`) and keeps it in the process's vault, and the runner puts it in the
  child's environment only.

Either one unset is an error before anything runs, naming the recipe's line and the fix
(:func:`missing`, :func:`env_values`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from builder.errors import Diagnostic, Location, PlanError, RecipeError
from builder.plan.model import TO_RUN, Step
from builder.recipe.model import Recipe
from builder.recipe.subst import SubstitutionError, substitute, variables
from builder.util.secrets import reference

__all__ = ["BUILD_KINDS", "build_secrets", "cli_names", "env_reference", "env_values",
           "missing", "test_secrets", "with_build_secrets"]

#: the steps that run the project's own build, which ``build.secrets`` are passed to
BUILD_KINDS = frozenset({"configure", "build", "stage", "kernel"})


def _where(recipe: Recipe, path: tuple[str | int, ...]) -> str:
    loc = recipe.positions.location(path) if recipe.positions else Location(recipe.display)
    return str(Location(recipe.display, loc.line, loc.col))


def test_secrets(recipe: Recipe, index: int) -> tuple[tuple[str, str], ...]:
    """(name, where the recipe declares it) of each secret of the recipe's test
    ``index``."""
    t = recipe.tests[index]
    return tuple((n, _where(recipe, ("test", index, "secrets", i)))
                 for i, n in enumerate(t.secrets))


def build_secrets(recipe: Recipe) -> tuple[tuple[str, str], ...]:
    """(name, where) of each ``build.secrets`` entry."""
    return tuple((n, _where(recipe, ("build", "secrets", i)))
                 for i, n in enumerate(recipe.build_spec.secrets))


def with_build_secrets(recipe: Recipe, steps: Sequence[Step],
                       cli: Sequence[str] = ()) -> list[Step]:
    """``steps`` with the recipe's ``build.secrets`` on each step that builds, and the
    ``--secret-env`` names ``cli`` on each step that builds or tests."""
    named = build_secrets(recipe)
    given = tuple((n, "--secret-env") for n in cli)
    if not named and not given:
        return list(steps)
    out = []
    for s in steps:
        extra = (named if s.kind in BUILD_KINDS else ()) + \
            (given if s.kind in BUILD_KINDS or s.kind == "test" else ())
        out.append(replace(s, secrets=tuple(dict(s.secrets + extra).items())) if extra else s)
    return out


def cli_names(names: Sequence[str]) -> tuple[str, ...]:
    """The ``--secret-env`` names, each checked to be an environment variable's name."""
    import re

    from builder.errors import UsageError

    for n in names:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n):
            raise UsageError(f"--secret-env {n}: '{n}' is not an environment variable name; "
                             "give a name such as HF_TOKEN (its value is read from the "
                             "environment when a step starts)")
    return tuple(sorted(set(names)))


def env_reference(recipe: str, where: str, name: str) -> str:
    """The reference a plan holds for the secret ``env`` entry ``name`` of ``where``
    (``build`` or ``test/NAME``)."""
    return reference(_vault_name(recipe, where, name))


def _vault_name(recipe: str, where: str, name: str) -> str:
    return f"{recipe}/{where}/env/{name}"


def env_values(recipe: Recipe, environ: Mapping[str, str]) -> dict[str, str]:
    """{vault name: value} of the recipe's secret ``env`` entries, each substituted from
    ``environ``; a :class:`RecipeError` at the first that names an unset variable without a
    default, or anything but ``${env.X}``."""
    out: dict[str, str] = {}
    groups: list[tuple[str, tuple[str | int, ...], Iterable[tuple[str, str]], Iterable[str]]]
    groups = [("build", ("build", "env"), recipe.build_spec.env, recipe.build_spec.secret_env)]
    groups += [(f"test/{t.name}", ("test", i, "env"), t.env, t.secret_env)
               for i, t in enumerate(recipe.tests)]
    for where, path, env, secret in groups:
        for name, text in env:
            if name not in secret:
                continue
            values = {v: environ[v[4:]] for v in (n.split(":-", 1)[0]
                                                  for n in variables(text))
                      if v.startswith("env.") and v[4:] in environ}
            try:
                out[_vault_name(recipe.name, where, name)] = substitute(text, values)
            except SubstitutionError as exc:
                raise _unset(recipe, (*path, name, "value"), exc.name) from None
    return out


def _unset(recipe: Recipe, path: tuple[str | int, ...], var: str) -> RecipeError:
    loc = recipe.positions.location(path) if recipe.positions else Location(recipe.display)
    loc = Location(recipe.display, loc.line, loc.col)
    line = recipe.positions.line_text(loc.line) if recipe.positions else ""
    if var.startswith("env."):
        why = (f"${{{var}}} is not set: a secret entry's value comes from the environment "
               f"that runs builder")
        fix = f"export {var[4:]}=… before running builder, or write a default: " \
              f"${{{var}:-VALUE}}"
    else:
        why = f"${{{var}}} cannot be used in a secret entry's value (only ${{env.X}})"
        fix = "make the value from environment variables only, or drop `secret: true`"
    return RecipeError([Diagnostic(loc, ".".join(map(str, path)), why, fix, line)])


def missing(steps: Iterable[Step], environ: Mapping[str, str]) -> None:
    """A :class:`PlanError` naming every secret a step that will run needs and that is
    not set in ``environ`` (each with the recipe line that declares it)."""
    gone: dict[str, list[str]] = {}
    for s in steps:
        if s.status in TO_RUN:
            for name, where in s.secrets:
                if name not in environ:
                    gone.setdefault(f"{where}: {name}", []).append(s.id)
    if gone:
        lines = [f"{what} is needed by {ids[0]}" + (f" and {len(ids) - 1} more step(s)"
                                                      if len(ids) > 1 else "")
                 for what, ids in gone.items()]
        names = sorted({w.rsplit(": ", 1)[1] for w in gone})
        raise PlanError("a secret the build needs is not set in the environment:\n  " +
                        "\n  ".join(lines) + "\n  fix: export " +
                        " ".join(f"{n}=…" for n in names) +
                        " in the shell that runs builder (the value is passed to those "
                        "steps only, never stored or shown)")
