"""A recipe option that turns the tests off turns off the test steps that depend on it
(``test[].enabled_by``): ``-o build_tests=false`` on llaisys skips its ctest step with the
reason instead of failing the build on "a test step that ran nothing"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from builder.errors import RecipeError
from builder.plan.model import BUILD, SKIP
from builder.recipe.recipeset import load_recipe
from builder.resolve.request import OptionOverride
from tests.unit.test_resolve import plan_for

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def llaisys(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    shutil.copytree(REPO / "recipes", tmp_path / "recipes",
                    ignore=shutil.ignore_patterns("*.yaml"))
    shutil.copy(REPO / "recipes" / "llaisys.yaml", tmp_path / "recipes")
    shutil.copytree(REPO / "sources" / "llaisys", tmp_path / "sources" / "llaisys")
    return tmp_path


def _tests(project: Path, *options: OptionOverride) -> dict[str, tuple[str, str]]:
    plan = plan_for(project, ["llaisys"], "linux-cuda13", backends=("cpu",),
                    options=options)
    return {s.id.rsplit("/test:", 1)[1].split("@")[0]: (s.status, s.reason)
            for s in plan.steps if s.kind == "test"}


def test_build_tests_false_skips_the_ctest_step_only(llaisys: Path) -> None:
    on = _tests(llaisys)
    assert on["ctest"][0] == BUILD and on["ops"][0] == BUILD
    off = _tests(llaisys, OptionOverride("llaisys", "build_tests", "false"))
    assert off["ctest"] == (SKIP, "option build_tests is off: the test is not built")
    assert off["ops"][0] == BUILD  # the Python tests do not depend on it


def test_enabled_by_must_name_a_bool_option(llaisys: Path) -> None:
    recipe = llaisys / "recipes" / "llaisys.yaml"
    recipe.write_text(recipe.read_text().replace("enabled_by: build_tests",
                                                 "enabled_by: no_such_option"))
    with pytest.raises(RecipeError) as e:
        load_recipe(recipe)
    assert "enabled_by names 'no_such_option', which is not a bool option" in e.value.render()
