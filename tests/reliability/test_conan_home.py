"""A damaged project-local Conan home (a conan killed, or stopped by a full disk, while
it created its database: ``no such table: packages``) is detected and rebuilt — it is a
cache — with a note, instead of failing every later build."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.util.runner import RecordingRunner
from tests.conftest import CliResult


def half_made(home: Path) -> Path:
    """A package database as a conan killed after creating the file leaves it."""
    db = home / "p" / "cache.sqlite3"
    db.parent.mkdir(parents=True, exist_ok=True)
    db.unlink(missing_ok=True)
    sqlite3.connect(db).close()  # the file, no tables
    return db


def test_a_half_made_conan_database_is_rebuilt_with_a_note(
        project: Path, cli: Callable[..., CliResult]) -> None:
    assert cli("build", "greet", cwd=project, runner=RecordingRunner()).code == 0
    state = project / ".builder"
    (state / "conan" / "remotes.json").write_text('{"remotes": [{"name": "mine"}]}')
    db = half_made(state / "conan")
    runner = RecordingRunner()
    r = cli("build", "greet", cwd=project, runner=runner)
    assert r.code == 0, r.out + r.err
    assert "damaged" in r.err and "no such table: packages" in r.err and str(db) in r.err
    assert not db.exists()
    assert any("conan" in Path(c.argv[0]).name for c in runner.calls)  # rebuilt, not skipped
    assert "mine" in (state / "conan" / "remotes.json").read_text()  # settings kept
    r = cli("build", "greet", cwd=project, runner=RecordingRunner())
    assert r.code == 0 and "damaged" not in r.err


def test_conan_works_again_after_the_repair(tmp_path: Path) -> None:
    conan = shutil.which("conan") or str(Path(sys.executable).parent / "conan")
    if not Path(conan).exists():
        pytest.skip("needs conan (on PATH or next to the interpreter; CI installs it)")
    from builder.remote.conanhome import repair_conan_home
    from builder.workspace.paths import Workspace

    ws = Workspace.at(tmp_path / "project")
    ws.state.mkdir(parents=True)
    (ws.state / ".builder-state").write_text("")
    env = {**os.environ, "CONAN_HOME": str(ws.conan_home)}
    half_made(ws.conan_home)
    broken = subprocess.run([conan, "list", "*"], env=env, capture_output=True, text=True,
                            check=False)
    assert "no such table" in broken.stdout + broken.stderr
    assert repair_conan_home(ws)
    fixed = subprocess.run([conan, "list", "*"], env=env, capture_output=True, text=True,
                           check=False)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "ERROR" not in fixed.stdout + fixed.stderr
