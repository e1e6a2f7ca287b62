"""git sources: a branch name is refused unless the recipe opts in (`allow_branch`);
then it is resolved to a commit when fetched, and that commit is recorded.  Nothing
from the recipe can be read by git as an option."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from builder.errors import RecipeError
from builder.recipe.recipeset import load_recipe
from builder.util.runner import RecordingRunner
from tests.functional.conftest import need
from tests.functional.test_sources import RECIPE, _git, _greet_repo
from tests.reliability.test_security import plan


def write(project: Path, source: str) -> Path:
    path = project / "recipes" / "greet.yaml"
    path.write_text(RECIPE.format(source=source))
    return path


def test_a_branch_is_refused_with_a_hint(project: Path) -> None:
    with pytest.raises(RecipeError) as e:
        load_recipe(write(project, "  git: https://example.org/greet.git\n  rev: main"))
    text = e.value.render()
    assert "rev 'main' is not a full commit id" in text and "allow_branch: true" in text


def test_a_branch_with_the_opt_in_is_planned_as_a_clone_of_its_tip(project: Path) -> None:
    write(project, "  git: https://example.org/greet.git\n  rev: release/1.2\n"
          "  allow_branch: true")
    [fetch] = [s for s in plan(project, ["greet"]).steps if s.kind == "fetch"]
    assert fetch.commands[0][1:] == ("clone", "--quiet", "--branch", "release/1.2", "--",
                                     "https://example.org/greet.git", fetch.payload.partial)


@pytest.mark.parametrize(("source", "message"), [
    ("  git: https://example.org/g.git\n  rev: --upload-pack=touch x\n  allow_branch: true",
     "is not a branch or tag name"),
    ("  git: https://example.org/g.git\n  rev: a..b\n  allow_branch: true",
     "is not a branch or tag name"),
    ("  git: --upload-pack=touch x\n  rev: " + "a" * 40, "is not a repository"),
    ("  path: ../sources/greet\n  allow_branch: true", "only applies to git sources"),
])
def test_nothing_can_become_a_git_option(project: Path, source: str, message: str) -> None:
    with pytest.raises(RecipeError) as e:
        load_recipe(write(project, source))
    assert message in e.value.render()


def test_full_rev_clone_ends_options_before_the_location(project: Path) -> None:
    write(project, "  git: https://example.org/greet.git\n  rev: " + "a" * 40)
    [fetch] = [s for s in plan(project, ["greet"]).steps if s.kind == "fetch"]
    clone = fetch.commands[0]
    assert clone[clone.index("--") + 1] == "https://example.org/greet.git"


@pytest.mark.functional
def test_branch_is_resolved_at_fetch_time_and_recorded(project: Path, tmp_path: Path,
                                                        cli) -> None:  # type: ignore[no-untyped-def]
    need("git", "conan", "cmake", "ninja", "g++")
    repo, first = _greet_repo(project, tmp_path)
    _git("checkout", "-qb", "feature", cwd=repo)
    src = repo / "src" / "greet.cpp"
    src.write_text(src.read_text().replace('"hello, "', '"howdy, "'))
    _git("commit", "-qam", "howdy", cwd=repo)
    tip = _git("rev-parse", "HEAD", cwd=repo)
    assert tip != first
    write(project, f"  git: {repo}\n  rev: feature\n  allow_branch: true")
    r = cli("build", "app", cwd=project)
    assert r.code == 0, r.out + r.err
    [fetched] = (project / ".builder" / "sources").iterdir()
    marker = json.loads((fetched / ".builder-source.json").read_text())
    assert marker["rev"] == "feature" and marker["commit"] == tip
    assert _git("rev-parse", "HEAD", cwd=fetched) == tip
    [exe] = (project / ".builder" / "install" / "app").glob("*/bin/app")
    assert subprocess.run([exe, "x"], capture_output=True, text=True,
                          check=True).stdout == "howdy, x\n"
    log = next((project / ".builder" / "logs").glob("*fetch.log")).read_text()
    assert f"feature resolved to commit {tip}" in log
    rec = RecordingRunner()  # fetched once: reused until its folder is deleted
    assert cli("build", "app", cwd=project, runner=rec).code == 0 and rec.calls == []


class GitRunner(RecordingRunner):
    """Records every command and really runs git's (the fetch step's clone)."""

    def run(self, argv, **kw):  # type: ignore[no-untyped-def,override]
        res = super().run(argv, **kw)
        if Path(argv[0]).name == "git":
            from builder.util.runner import Result

            return Result(subprocess.run(list(argv), capture_output=True, check=False,
                                         timeout=60).returncode)
        return res


def test_plan_and_build_say_which_commit_a_branch_is_pinned_to(
        project: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("git")
    repo, first = _greet_repo(project, tmp_path)
    write(project, f"  git: {repo}\n  rev: master\n  allow_branch: true")
    _git("branch", "-M", "master", cwd=repo)
    state = str(tmp_path / "state")
    r = cli("--state-dir", state, "plan", "greet", cwd=project)
    assert r.code == 0 and "'master' is a branch or tag (allow_branch): resolved to a " \
        "commit when fetched" in r.out, r.out
    r = cli("--state-dir", state, "build", "greet", cwd=project, runner=GitRunner())
    assert r.code == 0, r.out + r.err
    assert f"'master' is pinned to commit {first}, resolved 20" in r.out, r.out
    r = cli("--state-dir", state, "plan", "greet", cwd=project)
    assert f"'master' is pinned to commit {first}, resolved 20" in r.out, r.out
