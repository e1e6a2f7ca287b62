"""``cache prune`` removes only what no build needs: the install the last build used
(after trying another option value) and every install a lockfile pins — a lockfile
named as the README says (``builder.lock``) or anywhere ``builder lock`` wrote one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from builder.util.runner import RecordingRunner
from tests.conftest import CliResult


def build(cli: Callable[..., CliResult], project: Path, *opts: str) -> Path:
    r = cli("build", "greet", *opts, cwd=project, runner=RecordingRunner())
    assert r.code == 0, r.out + r.err
    plan = cli("plan", "greet", *opts, "--format", "json", cwd=project)
    return Path(json.loads(plan.out)["variants"][0]["prefix"])


def test_prune_after_trying_an_option_keeps_the_install_the_last_build_used(
        project: Path, cli: Callable[..., CliResult]) -> None:
    first = build(cli, project)
    tried = build(cli, project, "-o", "loud=true")
    again = build(cli, project)  # back to the default: up to date, nothing rebuilt
    assert again == first and first.is_dir() and tried.is_dir()
    r = cli("cache", "prune", cwd=project)
    assert r.code == 0, r.out + r.err
    assert (first / "manifest.json").is_file(), r.out


def test_prune_keeps_what_builder_lock_pins(project: Path, tmp_path: Path,
                                            cli: Callable[..., CliResult]) -> None:
    pinned = build(cli, project)
    assert cli("lock", "greet", "--output", "builder.lock", cwd=project).code == 0
    build(cli, project, "-o", "loud=true")
    assert cli("cache", "prune", cwd=project).code == 0
    assert (pinned / "manifest.json").is_file()
    # a lockfile written anywhere else is remembered too
    (project / "builder.lock").unlink()
    elsewhere = tmp_path / "locks" / "ci.lock"
    elsewhere.parent.mkdir()
    build(cli, project)
    assert cli("lock", "greet", "--output", str(elsewhere), cwd=project).code == 0
    build(cli, project, "-o", "loud=true")
    assert cli("cache", "prune", cwd=project).code == 0
    assert (pinned / "manifest.json").is_file()
