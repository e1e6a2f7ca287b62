"""Early cutoff, decided purely (builder.resolve.keys, builder.resolve.resolver): a
dependent is keyed by what its dependency's install holds; while the dependency is to be
built, the dependent waits for it (``waits_for``); an install whose files are the same
bytes leaves the dependent up to date, one with other bytes rebuilds it."""

from __future__ import annotations

import json
from pathlib import Path

from builder.plan.model import BuildPlan
from builder.plan.payloads import PrepareBuild
from builder.recipe.recipeset import RecipeSet
from builder.resolve.request import Request
from builder.resolve.resolver import resolve
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import host

ENV = (("HOME", "/home/user"),)


def _plan(project: Path, name: str = "app") -> BuildPlan:
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select([name], ws.recipes_dir)
    return resolve(roots, rs, Request(env=ENV, backends=("cpu",)), host("linux-cuda13"),
                   read_state(ws, rs.closure(roots)), ws)


def _publish(plan: BuildPlan, recipe: str, content: bytes) -> None:
    """An install of ``recipe`` as its plan keys it, holding one file of ``content``."""
    import hashlib

    [v] = [v for v in plan.variants if v.recipe == recipe]
    assert not v.waits_for
    prefix = Path(v.prefix)
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "lib.a").write_bytes(content)
    (prefix / "manifest.json").write_text(json.dumps({
        "key": v.compile_key, "variant_key": v.key,
        "files": [{"path": "lib.a", "size": len(content),
                   "sha256": hashlib.sha256(content).hexdigest()}]}))


def _status(plan: BuildPlan) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {v.recipe: (v.status, v.waits_for) for v in plan.variants}


def test_a_dependent_waits_then_follows_the_dependency_s_bytes(project: Path) -> None:
    first = _plan(project)
    greet_id = first.variants[0].id
    assert _status(first) == {"greet": ("build", ()), "app": ("build", (greet_id,))}
    assert "app cpu release: rebuilds if greet's output changes (decided once greet is " \
           "built)" in first.notes
    _publish(first, "greet", b"one")
    second = _plan(project)  # greet's output is known now: app has its key
    assert _status(second) == {"greet": ("cached", ()), "app": ("build", ())}
    _publish(second, "app", b"app")
    assert _status(_plan(project)) == {"greet": ("cached", ()), "app": ("cached", ())}
    app_key = _plan(project).variants[1].compile_key

    # greet rebuilt (another key: say, a comment edit) to the same bytes: app stays
    (project / "sources" / "greet" / "src" / "greet.cpp").write_text("// edited\n")
    edited = _plan(project)
    assert _status(edited)["app"] == ("build", (greet_id,))
    assert edited.variants[1].config_key == first.variants[1].config_key  # same folders
    _publish(edited, "greet", b"one")
    same = _plan(project)
    assert _status(same) == {"greet": ("cached", ()), "app": ("cached", ())}
    assert same.variants[1].compile_key == app_key

    # ... or to other bytes: app rebuilds, in the same folders
    (project / "sources" / "greet" / "src" / "greet.cpp").write_text("// again\n")
    _publish(_plan(project), "greet", b"two")
    other = _plan(project)
    assert _status(other) == {"greet": ("cached", ()), "app": ("build", ())}
    assert other.variants[1].compile_key != app_key
    assert other.variants[1].prefix == same.variants[1].prefix


def test_a_python_dependent_compiles_from_a_clean_folder(project: Path) -> None:
    """setuptools does not see a dependency's headers change, and a dependent's folders
    outlive its dependency's installs: a dependent's objects are removed first."""
    (project / "recipes" / "pyapp.yaml").write_text(
        "package: {name: pyapp, version: '1.0'}\nsource: {path: ../sources/app}\n"
        "build: {system: python}\nrequires:\n  recipes: [{name: greet}]\n"
        "backends: {cpu: {}}\npython: {versions: ['3.11']}\n")
    alone = (project / "recipes" / "pylone.yaml")
    alone.write_text("package: {name: pylone, version: '1.0'}\nsource: {path: ../sources/app}\n"
                     "build: {system: python}\nbackends: {cpu: {}}\n"
                     "python: {versions: ['3.11']}\n")
    for name, cleaned in (("pyapp", True), ("pylone", False)):
        plan = _plan(project, name)
        [prep] = [s for s in plan.steps if s.id.startswith(f"{name}/") and s.kind == "prepare"]
        assert isinstance(prep.payload, PrepareBuild)
        assert any(c.endswith("/setuptools") for c in prep.payload.clean) == cleaned
