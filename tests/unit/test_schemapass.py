"""The schema-pass cache: only files that passed are remembered, by content, in the
environment that judged them; a damaged or foreign cache is ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.errors import RecipeError
from builder.recipe import validate as v
from builder.recipe.recipeset import RecipeSet
from builder.recipe.schemapass import SchemaPasses, environment_key

GOOD = """\
package:
  name: demo
  version: "1.0"
source:
  path: ../src
backends:
  cpu: {}
"""


def project(tmp_path: Path, text: str = GOOD) -> Path:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "recipes").mkdir(exist_ok=True)
    (tmp_path / ".builder").mkdir(exist_ok=True)
    (tmp_path / ".builder" / ".builder-state").write_text("")  # builder's (the writer)
    (tmp_path / "recipes" / "demo.yaml").write_text(text)
    return tmp_path / ".builder" / "schema-passes.json"


def count_schema_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    runs = [0]
    real = v._validator

    def counted():  # type: ignore[no-untyped-def]
        runs[0] += 1
        return real()

    monkeypatch.setattr(v, "_validator", counted)
    return runs


def test_a_passing_file_is_checked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = project(tmp_path)
    runs = count_schema_runs(monkeypatch)
    first = RecipeSet.load(tmp_path / "recipes", schema_passes=cache)
    assert runs[0] == 1 and cache.is_file()
    again = RecipeSet.load(tmp_path / "recipes", schema_passes=cache)
    assert runs[0] == 1
    assert again.recipes == first.recipes
    # an edit is new content: checked again
    (tmp_path / "recipes" / "demo.yaml").write_text(GOOD.replace('"1.0"', '"1.1"'))
    RecipeSet.load(tmp_path / "recipes", schema_passes=cache)
    assert runs[0] == 2


def test_a_failing_file_is_never_remembered(tmp_path: Path) -> None:
    cache = project(tmp_path, GOOD + "unknown_key: 1\n")
    for _ in range(2):
        with pytest.raises(RecipeError) as e:
            RecipeSet.load(tmp_path / "recipes", schema_passes=cache)
        assert "unknown_key" in e.value.render()
    assert not cache.exists()


def test_another_environment_or_a_damaged_cache_is_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = project(tmp_path)
    RecipeSet.load(tmp_path / "recipes", schema_passes=cache)
    data = json.loads(cache.read_text())
    assert data["environment"] == environment_key() and len(data["passed"]) == 1
    cache.write_text(json.dumps({**data, "environment": "0" * 64}))
    assert not SchemaPasses(cache).passed
    runs = count_schema_runs(monkeypatch)
    RecipeSet.load(tmp_path / "recipes", schema_passes=cache)
    assert runs[0] == 1
    cache.write_text("{not json")
    assert not SchemaPasses(cache).passed
    RecipeSet.load(tmp_path / "recipes", schema_passes=cache)
    assert runs[0] == 2
