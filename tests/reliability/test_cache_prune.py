"""`builder cache prune` after real builds: what the last build of each variant and the
lockfile need stays, so that the next build has nothing to do."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.reliability.conftest import builder_argv, child_env, run_build, verify_installs

pytestmark = pytest.mark.functional


def builder(project: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(builder_argv(project, state, *args), cwd=project, env=child_env(),
                          capture_output=True, text=True, timeout=300, check=False)


def installs(state: Path, recipe: str) -> set[str]:
    return {p.parent.name for p in (state / "install" / recipe).glob("*/manifest.json")}


def test_prune_keeps_the_newest_builds_and_the_lockfile(project: Path, tmp_path: Path,
                                                        real_tools: None) -> None:
    state = tmp_path / "state"
    assert run_build(project, state, "app", "-o", "greet:loud=true").returncode == 0
    loud = installs(state, "greet")
    lock = tmp_path / "loud.lock"
    r = builder(project, state, "lock", "app", "-o", "greet:loud=true", "--output", str(lock))
    assert r.returncode == 0, r.stderr
    assert run_build(project, state, "app").returncode == 0  # the newest: quiet
    quiet = installs(state, "greet") - loud
    (state / "sources").mkdir()
    (state / "sources" / "0123.partial").mkdir()  # as a killed fetch leaves it

    # with the lockfile, the loud variant stays as well
    r = builder(project, state, "cache", "prune", "--lockfile", str(lock), "--format", "json")
    assert r.returncode == 0, r.stderr
    removed = json.loads(r.stdout)["removed"]
    assert [Path(e["path"]).name for e in removed if e["kind"] == "temporary"] == ["0123.partial"]
    assert installs(state, "greet") == loud | quiet
    assert "nothing to do" in run_build(project, state, "app", "-o", "greet:loud=true").stdout

    # without it (deleted: `builder lock` wrote it, so prune would still honour it) and
    # once the last build used the quiet variant, only the newest build of each is needed
    lock.unlink()
    assert "nothing to do" in run_build(project, state, "app").stdout
    info = json.loads(builder(project, state, "cache", "info", "--format", "json").stdout)
    assert info["reclaimable"] > 0 and info["kinds"]["conan"]["bytes"] > 0
    r = builder(project, state, "cache", "prune")
    assert r.returncode == 0 and "freed" in r.stdout, r.stdout + r.stderr
    assert installs(state, "greet") == quiet
    assert not any((state / "build" / "greet").glob(f"{next(iter(loud))}*"))
    verify_installs(state)
    again = run_build(project, state, "app")
    assert again.returncode == 0 and "nothing to do" in again.stdout, again.stdout
    after = json.loads(builder(project, state, "cache", "info", "--format", "json").stdout)
    assert after["reclaimable"] == 0 or after["reclaimable"] < info["reclaimable"]
