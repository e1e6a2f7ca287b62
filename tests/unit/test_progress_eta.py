"""The live display's ETA: a first build uses the plan's predicted compile time (not
"unknown"), and a compile step that runs past its prediction is judged by its own pace
over its compile jobs (not "~0s" for minutes)."""

from __future__ import annotations

from pathlib import Path

from builder.cli.progress import eta, predicted
from builder.recipe.recipeset import RecipeSet
from builder.resolve.request import Request
from builder.resolve.resolver import resolve
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import host


def test_a_first_build_has_the_plans_prediction(project: Path) -> None:
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select(["greet"], ws.recipes_dir)
    plan = resolve(roots, rs, Request(), host("linux-cuda13"), read_state(ws, roots), ws)
    build = next(s for s in plan.steps if s.id.endswith("/build"))
    assert predicted(build) > 0
    left = [s.id for s in plan.steps]
    secs, known, _ = eta({build.id: predicted(build)}, [build.id], {})
    assert secs == predicted(build) and known
    _, known, _ = eta({build.id: predicted(build)}, left, {})
    assert not known  # other steps have no time yet: shown as "~Ns+"


def test_a_step_past_its_prediction_is_judged_by_its_pace() -> None:
    expected = {"r/v/build": 10.0, "r/v/stage": 2.0}
    # 100 s into a step predicted at 10 s, 50 of 60 jobs done: ~20 s to go, plus the stage
    secs, known, over = eta(expected, list(expected), {"r/v/build": 100.0}, (50, 60))
    assert round(secs) == 22 and known and not over
    # no job count: not "~0s", but an ETA said to be open-ended
    secs, known, over = eta(expected, list(expected), {"r/v/build": 100.0})
    assert over and not known and secs == 2.0
    # on time: the rest of its prediction
    secs, known, over = eta(expected, list(expected), {"r/v/build": 4.0})
    assert secs == 8.0 and known and not over
