"""Substitution is total: ``${env.X}`` is allowed in every text the schema marks
(``"x-substitute"``), always enters the key, and an unset variable is an error at its
place (or takes its declared default ``${env.X:-text}``), never an empty string.  Which
texts are substituted is said once, in the schema; a field the code substitutes without
the mark finds no value for ``${env.X}`` and fails the plan instead of building unkeyed."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from builder.errors import RecipeError
from builder.recipe import validate
from builder.recipe.validate import schema
from tests.conftest import FIXTURES, CliResult
from tests.unit.test_recipe_format import _paths_node, _resolve, schema_paths
from tests.unit.test_resolve import plan_for

#: schema leaves whose description shows ``${...}`` but whose text is not substituted as
#: a recipe text (each is evaluated by its own rule, with options only)
NOT_SUBSTITUTED = {
    "backends.*.tools.*": "a version specifier; only ${options.NAME}, resolved by the checks",
    "requires.system[].when": "a condition naming a bool option, not a text",
    "test[].devices.*": "the value ${device} takes, not a text that is substituted",
    "options.*.secret": "a boolean; its description names the ${secret:...} reference form",
}


def _marked(spath: str) -> bool:
    parts = spath.replace("[]", ".[]").split(".")
    return any("x-substitute" in _resolve(_paths_node(".".join(parts[:i]).replace(".[]", "[]")))
               for i in range(1, len(parts) + 1))


def test_every_field_documented_as_substituted_is_marked() -> None:
    """A new field whose description promises ``${...}`` must carry the mark (and so be
    keyed); one that does not promise it is not substituted."""
    unmarked = sorted(p for p in schema_paths() if "${" in str(_resolve(_paths_node(p)).get(
        "description", "")) and not _marked(p) and p not in NOT_SUBSTITUTED)
    assert not unmarked, f"described as substituted but not marked x-substitute: {unmarked}"
    text = json.dumps(schema())
    assert text.count('"x-substitute": "test"') == 3  # run, env, cwd of a test


def _write(project: Path, name: str, text: str) -> None:
    (project / "recipes" / f"{name}.yaml").write_text(text)


def _greet_with(project: Path, extra: str) -> None:
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text() + extra)


def _key(project: Path, names: list[str], value: str | None, recipe: str = "greet") -> str:
    env = (("HOME", "/h"),) + ((("GREET_X", value),) if value is not None else ())
    plan = plan_for(project, names, "linux-cuda13", env=env)
    return next(v.compile_key for v in plan.variants if v.recipe == recipe)


PY_RECIPE = """package: {name: pyx, version: "1.0"}
source: {path: ../sources/greet}
build:
  system: python
  env: {GX: "${env.GREET_X}"}
backends: {cpu: {}}
python: {versions: ["3.11"], abi: cpython}
"""


def test_python_build_env_is_keyed(project: Path) -> None:
    _write(project, "pyx", PY_RECIPE)
    assert _key(project, ["pyx"], "a", "pyx") != _key(project, ["pyx"], "b", "pyx")
    plan = plan_for(project, ["pyx"], "linux-cuda13", env=(("HOME", "/h"), ("GREET_X", "a")))
    assert any(("GX", "a") in s.env for s in plan.steps), "the value reached no step"


def test_install_files_source_is_keyed(project: Path) -> None:
    _greet_with(project, 'install:\n  files:\n    - {from: "include/${env.GREET_X}", '
                         'to: include}\n')
    assert _key(project, ["greet"], "a") != _key(project, ["greet"], "b")


@pytest.mark.parametrize("src", ["${env.GREET_X}", ".", "${source}", "${env.GREET_X}/."])
def test_install_files_naming_the_whole_tree_is_refused(project: Path, src: str) -> None:
    _greet_with(project, f'install:\n  files:\n    - {{from: "{src}", to: include}}\n')
    with pytest.raises(RecipeError) as e:
        plan_for(project, ["greet"], "linux-cuda13", env=(("HOME", "/h"), ("GREET_X", "")))
    text = e.value.diagnostics[0].render()
    assert "greet.yaml:" in text and "install.files[0].from" in text
    assert "never copies the whole source tree" in text, text


def test_unset_is_an_error_at_its_place_and_a_default_applies(project: Path) -> None:
    _greet_with(project, 'defines:\n  GREET_X: "${env.GREET_X}"\n')
    with pytest.raises(RecipeError) as e:
        _key(project, ["greet"], None)
    d = e.value.diagnostics[0]
    recipe = project / "recipes" / "greet.yaml"
    lines = recipe.read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "${env.GREET_X}" in t)
    col = lines[line - 1].index("${env") + 1
    assert (d.location.line, d.location.col, d.path) == (line, col, "defines.GREET_X")
    assert "${env.GREET_X:-VALUE}" in d.render()
    recipe.write_text(recipe.read_text().replace("${env.GREET_X}", "${env.GREET_X:-dflt}"))
    unset = _key(project, ["greet"], None)
    assert unset != _key(project, ["greet"], "other")
    plan = plan_for(project, ["greet"], "linux-cuda13", env=(("HOME", "/h"),))
    assert any("-DGREET_X=dflt" in a for s in plan.steps for c in s.commands for a in c)


def test_a_dependencys_env_is_read_and_keyed(project: Path, cli: Callable[..., CliResult],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``builder plan app``: greet (a dependency) substitutes ${env.GREET_X}."""
    _greet_with(project, 'defines:\n  GREET_X: "${env.GREET_X}"\n')
    facts = str(FIXTURES / "hosts" / "linux-cuda13.json")

    def greet_key(value: str) -> str:
        monkeypatch.setenv("GREET_X", value)
        r = cli("plan", "app", "--host-facts", facts, "--format", "json", cwd=project)
        assert r.code == 0, r.err
        return next(v["compile_key"] for v in json.loads(r.out)["variants"]
                    if v["recipe"] == "greet")

    assert greet_key("a") != greet_key("b")


def test_a_substituted_field_without_the_mark_fails_instead_of_building_unkeyed(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Forgetting the mark on a field the code substitutes is loud: the value is never
    given to substitution, so the plan stops at the variable."""
    unmarked: dict[str, Any] = copy.deepcopy(schema())
    del unmarked["$defs"]["defines"]["x-substitute"]
    monkeypatch.setattr(validate, "schema", lambda: unmarked)
    _greet_with(project, 'defines:\n  GREET_X: "${env.GREET_X}"\n')
    with pytest.raises(RecipeError) as e:
        _key(project, ["greet"], "a")
    assert "${env.GREET_X} has no value here" in e.value.diagnostics[0].render()


def test_only_a_variant_that_is_built_needs_its_variables(project: Path) -> None:
    """Another backend's variable is neither an error nor an input of this variant."""
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text().replace(
        "  cpu: {}\n", '  cpu: {}\n  cuda:\n    defines:\n      GX: "${env.GREET_X}"\n'))
    plan = plan_for(project, ["greet"], "linux-cuda13", env=(("HOME", "/h"),),
                    backends=("cpu",))
    assert [v.backend for v in plan.variants] == ["cpu"]
    with pytest.raises(RecipeError):
        plan_for(project, ["greet"], "linux-cuda13", env=(("HOME", "/h"),),
                 backends=("cuda",))
    keys = {plan_for(project, ["greet"], "linux-cuda13", backends=("cpu",), env=env)
            .variants[0].compile_key for env in ((("HOME", "/h"),),
                                                 (("HOME", "/h"), ("GREET_X", "x")))}
    assert len(keys) == 1, "the cuda backend's variable rebuilt the cpu variant"
    cuda = {plan_for(project, ["greet"], "linux-cuda13", backends=("cuda",), env=env)
            .variants[0].compile_key for env in ((("HOME", "/h"), ("GREET_X", "")),
                                                 (("HOME", "/h"), ("GREET_X", "x")))}
    assert len(cuda) == 2, "the cuda variant's own variable is its input"
