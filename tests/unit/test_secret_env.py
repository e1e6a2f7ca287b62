"""A ``build.env`` entry declared ``secret: true`` (builder.resolve.secretenv): the plan
holds a reference, the value comes from the environment only when builder runs, and an
unset variable (or anything but ``${env.X}``) is an error naming the recipe line."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.errors import RecipeError
from builder.recipe.recipeset import RecipeSet
from builder.resolve.request import Request
from builder.resolve.resolver import resolve
from builder.resolve.secretenv import env_values
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import host

RECIPE = """\
package: {name: pysecret, version: '1.0'}
source: {path: ../sources/app}
build:
  system: python
  env:
    PLAIN: "x"
    INDEX_AUTH_HEADER: {value: "Bearer ${env.MY_INDEX_KEY}", secret: true}
backends: {cpu: {}}
python: {versions: ['3.11']}
"""


def _recipe(project: Path, text: str = RECIPE) -> RecipeSet:
    (project / "recipes" / "pysecret.yaml").write_text(text)
    return RecipeSet.load(Workspace.at(project).recipes_dir)


def test_the_plan_holds_a_reference_and_the_key_no_value(project: Path) -> None:
    rs = _recipe(project)
    ws = Workspace.at(project)
    roots = rs.select(["pysecret"], ws.recipes_dir)
    plans = [resolve(roots, rs, Request(env=(("HOME", "/h"), ("MY_INDEX_KEY", key)),
                                        backends=("cpu",)),
                     host("linux-cuda13"), read_state(ws, rs.closure(roots)), ws)
             for key in ("first-key-value", "second-key-value")]
    [build] = [s for s in plans[0].steps if s.kind == "build"]
    env = dict(build.env)
    assert env["PLAIN"] == "x"
    assert env["INDEX_AUTH_HEADER"] == "${secret:pysecret/build/env/INDEX_AUTH_HEADER}"
    assert plans[0].variants[0].key == plans[1].variants[0].key  # the value is no input
    assert "key-value" not in repr(plans[0])
    assert env_values(rs.by_name["pysecret"], {"MY_INDEX_KEY": "k1"}) == {
        "pysecret/build/env/INDEX_AUTH_HEADER": "Bearer k1"}


def test_an_unset_variable_names_the_line(project: Path) -> None:
    rs = _recipe(project)
    with pytest.raises(RecipeError) as e:
        env_values(rs.by_name["pysecret"], {})
    text = e.value.render()
    assert "pysecret.yaml:7:" in text and "${env.MY_INDEX_KEY} is not set" in text, text
    assert "export MY_INDEX_KEY=" in text
    other = _recipe(project, RECIPE.replace("${env.MY_INDEX_KEY}", "${prefix}"))
    with pytest.raises(RecipeError) as e:
        env_values(other.by_name["pysecret"], {})
    assert "cannot be used in a secret entry's value (only ${env.X})" in e.value.render()
