"""Planning is linear in the number of variants: what is derived from a recipe alone (its
model digest, the texts it substitutes) is made once per recipe, not once per variant,
and a plan's steps are found by variant through an index.  (The figures — 10,000
variants in seconds — are bench/plan_speed.py's; these tests count the work.)"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from builder.plan import text as planfmt
from builder.plan.model import BuildPlan
from builder.recipe.model import Recipe
from builder.recipe.recipeset import RecipeSet
from builder.resolve.request import Request
from builder.resolve.resolver import resolve
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import host


def _wide(tmp_path: Path, backends: int) -> tuple[Workspace, RecipeSet]:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "CMakeLists.txt").write_text("project(x)\nadd_library(x a.cpp)\n")
    (tmp_path / "src" / "a.cpp").write_text("int f() { return 1; }\n")
    (tmp_path / "recipes").mkdir()
    names = "".join(f"  b{i}: {{kind: cpu}}\n" for i in range(backends - 1))
    (tmp_path / "recipes" / "wide.yaml").write_text(
        "package: {name: wide, version: '1.0.0'}\nsource: {path: ../src}\n"
        "build: {build_types: [release, debug]}\nbackends:\n  cpu: {}\n" + names)
    ws = Workspace.at(tmp_path)
    return ws, RecipeSet.load(ws.recipes_dir)


def _plan(ws: Workspace, rs: RecipeSet) -> BuildPlan:
    return resolve(rs.recipes, rs, Request(build_types=("release", "debug")),
                   host("linux-cuda13"), read_state(ws, rs.recipes), ws)


def test_a_recipe_is_digested_once_not_once_per_variant(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    ws, rs = _wide(tmp_path, 60)
    calls = [0]
    plain = Recipe.__repr__

    def counted(self: Recipe) -> str:
        calls[0] += 1
        return plain(self)

    monkeypatch.setattr(Recipe, "__repr__", counted)
    plan = _plan(ws, rs)
    assert len(plan.variants) == 120
    assert calls[0] <= 4, f"the recipe was rendered {calls[0]} times for 120 variants"


def test_steps_by_variant_match_a_scan_and_text_shows_each_once(tmp_path: Path) -> None:
    ws, rs = _wide(tmp_path, 30)
    plan = _plan(ws, rs)
    for v in plan.variants:
        assert plan.steps_of(v.id) == [s for s in plan.steps if s.variant == v.id]
    shown = planfmt.text(plan)
    assert shown == "".join(planfmt.text_lines(plan))
    assert sum(1 for line in shown.splitlines() if line.endswith("] render")) == 60


def test_the_json_plan_round_trips(tmp_path: Path) -> None:
    import json

    ws, rs = _wide(tmp_path, 5)
    plan = _plan(ws, rs)
    again = BuildPlan.from_json(json.loads(planfmt.to_json(plan)))
    assert again.to_json() == plan.to_json()


def test_a_recipe_is_pinned_once_not_once_per_variant(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The lockfile's per-field recipe digests (``recipe.backends`` holds every backend)
    are the same for each variant: made per variant, a recipe of N backends took N² time."""
    from builder.resolve import keys

    ws, rs = _wide(tmp_path, 60)
    calls = [0]
    real = keys.digest

    def counted(*parts: object) -> str:
        calls[0] += parts[0] == "backends"
        return real(*parts)

    monkeypatch.setattr(keys, "digest", counted)
    plan = _plan(ws, rs)
    assert len(plan.variants) == 120
    assert all(dict(v.pins).get("recipe.backends") for v in plan.variants)
    assert calls[0] <= 1, f"the recipe's backends were digested {calls[0]} times"


def test_the_json_plan_is_written_in_chunks_with_the_same_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write to the terminal passes the redactor, whose cost is per call: the JSON
    plan is written in chunks, and its text is the same as one line per write (a line per
    variant and per step, the top level indented, keys sorted)."""
    import json

    ws, rs = _wide(tmp_path, 20)
    plan = _plan(ws, rs)
    data = plan.to_json()
    expected = ["{\n"]
    for i, k in enumerate(sorted(data)):
        end = ",\n" if i < len(data) - 1 else "\n"
        if isinstance(data[k], (list, tuple)) and data[k]:
            rows = [json.dumps(x, sort_keys=True) for x in data[k]]
            expected.append(f"  {json.dumps(k)}: [\n    " + ",\n    ".join(rows) + f"\n  ]{end}")
        else:
            expected.append(f"  {json.dumps(k)}: {json.dumps(data[k], sort_keys=True)}{end}")
    expected.append("}\n")

    class Counted(io.StringIO):
        writes = 0

        def write(self, s: str) -> int:
            Counted.writes += 1
            return super().write(s)

    out = Counted()
    planfmt.write_json(plan, out)
    assert out.getvalue() == "".join(expected)
    assert Counted.writes == 1, f"{len(plan.steps)} steps written in {Counted.writes} writes"
    monkeypatch.setattr(planfmt, "CHUNK", 2000)
    Counted.writes, small = 0, Counted()
    planfmt.write_json(plan, small)
    assert small.getvalue() == out.getvalue()
    assert 1 < Counted.writes <= len(out.getvalue()) // 2000 + 2
