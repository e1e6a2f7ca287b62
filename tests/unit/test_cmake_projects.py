"""Real CMake projects (issue 22), planned purely against fixture host facts: the C++
standard is the recipe's or the project's, never forced by builder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from builder.plan.model import BuildPlan
from builder.recipe.recipeset import RecipeSet
from builder.resolve.request import Request
from builder.resolve.resolver import resolve
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import FIXTURES, host

ENV = (("HOME", "/home/user"),)


@pytest.fixture
def modern(tmp_path: Path) -> Path:
    """A private copy of tests/fixtures/modern (C++20, forced unity, own CXX flags)."""
    dst = tmp_path / "modern"
    shutil.copytree(FIXTURES / "modern", dst,
                    ignore=shutil.ignore_patterns(".builder", "__pycache__"))
    return dst


def plan_of(project: Path, names: list[str], facts: str = "linux-cuda13",
            **req: object) -> BuildPlan:
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select(names, ws.recipes_dir)
    req.setdefault("env", ENV)
    return resolve(roots, rs, Request(**req), host(facts),  # type: ignore[arg-type]
                   read_state(ws, rs.closure(roots)), ws)


def profile_of(plan: BuildPlan) -> str:
    [v] = plan.variants
    files = dict(plan.step(f"{v.id}/render").payload.files)  # type: ignore[union-attr]
    return next(t for p, t in files.items() if p.endswith("/profile"))


def set_standard(project: Path, value: str) -> None:
    recipe = project / "recipes" / "modern.yaml"
    recipe.write_text(recipe.read_text().replace(
        "source:\n", f"build:\n  cxx_standard: {value}\nsource:\n", 1))


# ---------------------------------------------------------------------- C++ standard


def test_without_a_recipe_standard_the_profile_leaves_it_to_the_project(modern: Path) -> None:
    profile = profile_of(plan_of(modern, ["modern"]))
    # Conan would turn compiler.cppstd into CMAKE_CXX_STANDARD, whose -std= comes after
    # the project's own -std=c++20 in CMAKE_CXX_FLAGS and wins
    assert "compiler.cppstd=" not in profile
    assert "compiler.libcxx=libstdc++11\n# compiler.cppstd: not set" in profile


@pytest.mark.parametrize("value", ["20", "gnu20", "23"])
def test_the_recipe_standard_reaches_the_profile_and_the_key(modern: Path, value: str) -> None:
    before = plan_of(modern, ["modern"]).variants[0].key
    set_standard(modern, value)
    plan = plan_of(modern, ["modern"])
    assert f"\ncompiler.cppstd={value}\n" in profile_of(plan)
    assert plan.variants[0].key != before


def test_a_standard_conan_does_not_know_is_a_located_error(modern: Path) -> None:
    from builder.errors import RecipeError

    set_standard(modern, "19")
    with pytest.raises(RecipeError) as err:
        plan_of(modern, ["modern"])
    text = err.value.render()
    assert "modern.yaml:" in text and "cxx_standard" in text, text
