"""The two keys (builder.resolve.keys): a test or wheel edit changes the variant key only;
an edit of anything that is compiled changes both."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.plan.model import Variant
from builder.recipe.recipeset import RecipeSet
from builder.resolve.request import OptionOverride, Request
from builder.resolve.resolver import resolve
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import host

ENV = (("HOME", "/home/user"), ("APP_T", "one"))

APP_TEST = '''test:
  - name: run
    run: ["${prefix}/bin/app", "tester"]
'''


def app(project: Path, edit: tuple[str, str] | None = None,
        options: tuple[OptionOverride, ...] = (), env: tuple[tuple[str, str], ...] = ENV
        ) -> tuple[Variant, Variant]:
    """(app, greet) planned for cpu after ``edit`` (old, new) of app.yaml."""
    recipe = project / "recipes" / "app.yaml"
    if edit is not None:
        text = recipe.read_text()
        assert edit[0] in text
        recipe.write_text(text.replace(edit[0], edit[1], 1))
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select(["app"], ws.recipes_dir)
    plan = resolve(roots, rs, Request(env=env, backends=("cpu",), options=options),
                   host("linux-cuda13"), read_state(ws, rs.closure(roots)), ws)
    by = {v.recipe: v for v in plan.variants}
    return by["app"], by["greet"]


VARIANT_ONLY = {
    "test argv": (APP_TEST, APP_TEST.replace('"tester"]', '"tester", "--verbose"]')),
    "test env": (APP_TEST, APP_TEST + "    env:\n      LEVEL: \"2\"\n"),
    "test env value from ${env.X}": (APP_TEST, APP_TEST + '    env:\n      X: "${env.APP_T}"\n'),
    "test cwd": (APP_TEST, APP_TEST + '    cwd: "${source}"\n'),
    "test timeout": (APP_TEST, APP_TEST + "    timeout: 60\n"),
    "test allow_empty": (APP_TEST, APP_TEST + "    allow_empty: true\n"),
    "a new test": (APP_TEST, APP_TEST + '  - name: again\n    run: ["true"]\n'),
    "description": ('  version: "2.0.0"\n', '  version: "2.0.0"\n  description: An app.\n'),
}

BOTH = {
    "flag": ("backends:\n", "flags:\n  release:\n    cxx: [-O3]\nbackends:\n"),
    "define": ("backends:\n", "defines:\n  APP_X: \"1\"\nbackends:\n"),
    "define from ${env.X}": ("backends:\n", 'defines:\n  APP_X: "${env.APP_T}"\nbackends:\n'),
    "backend define": ("  cpu: {}\n", "  cpu:\n    defines:\n      APP_Y: \"2\"\n"),
    "version": ('"2.0.0"', '"2.0.1"'),
    "install layout": ("backends:\n", "install:\n  files:\n    - {from: README, to: doc}\n"
                                      "backends:\n"),
    "cxx standard": ("backends:\n", "build:\n  cxx_standard: \"20\"\nbackends:\n"),
}


@pytest.mark.parametrize("what", sorted(VARIANT_ONLY))
def test_a_test_or_wheel_edit_changes_the_variant_key_only(project: Path, what: str) -> None:
    before, greet = app(project)
    after, greet_after = app(project, VARIANT_ONLY[what])
    assert after.key != before.key, f"{what} is not in the variant key"
    assert after.compile_key == before.compile_key, f"{what} changed the compile key"
    assert after.prefix == before.prefix  # the same install, build and stage folders
    assert (greet_after.key, greet_after.compile_key) == (greet.key, greet.compile_key)


@pytest.mark.parametrize("what", sorted(BOTH))
def test_a_compile_edit_changes_both_keys(project: Path, what: str) -> None:
    before, _ = app(project)
    after, _ = app(project, BOTH[what])
    assert after.compile_key != before.compile_key, f"{what} is not in the compile key"
    assert after.key != before.key
    assert after.prefix != before.prefix


def test_env_values_go_to_the_key_of_their_use(project: Path) -> None:
    """${env.X} in a test changes the variant key only; in a define, both."""
    app(project, VARIANT_ONLY["test env value from ${env.X}"])
    a, _ = app(project)
    b, _ = app(project, env=(("HOME", "/home/user"), ("APP_T", "two")))
    assert (a.key != b.key, a.compile_key == b.compile_key) == (True, True)
    app(project, BOTH["define from ${env.X}"])
    c, _ = app(project)
    d, _ = app(project, env=(("HOME", "/home/user"), ("APP_T", "two")))
    assert (c.key != d.key, c.compile_key != d.compile_key) == (True, True)


def test_an_option_or_source_edit_changes_both_keys_and_the_dependents(project: Path
                                                                       ) -> None:
    before, greet = app(project)
    loud, greet_loud = app(project, options=(OptionOverride("greet", "loud", "true"),))
    assert greet_loud.compile_key != greet.compile_key and greet_loud.key != greet.key
    assert loud.compile_key != before.compile_key  # a dependency's compile key is an input
    src = project / "sources" / "app"
    f = next(p for p in sorted(src.rglob("*")) if p.is_file())
    f.write_text(f.read_text() + "\n// edited\n")
    edited, _ = app(project)
    assert edited.compile_key != before.compile_key and edited.key != before.key


def test_a_dependency_test_edit_does_not_move_the_dependent(project: Path) -> None:
    """greet's tests are greet's: app compiles against greet's compiled files only."""
    before, greet = app(project)
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text() + 'test:\n  - name: t\n    run: ["true"]\n')
    after, greet_after = app(project)
    assert greet_after.key != greet.key and greet_after.compile_key == greet.compile_key
    assert (after.key, after.compile_key) == (before.key, before.compile_key)
