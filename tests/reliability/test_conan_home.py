"""A damaged project-local Conan home (a conan killed, or stopped by a full disk, while
it created its database — ``no such table: packages`` — or wrote its generated files — an
empty plugin) is detected and rebuilt — it is a cache — with a note, instead of failing
every later build."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.remote.conanhome import conan_home_damage, repair_conan_home
from builder.util.runner import RecordingRunner
from builder.workspace.paths import Workspace
from tests.conftest import CliResult
from tests.reliability.conftest import builder_argv, child_env, processes_in, run_build


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


def _bare_home(tmp_path: Path) -> tuple[str, Workspace, dict[str, str]]:
    """conan, a project's workspace (its state folder made, no Conan home yet) and the
    environment that points conan at the workspace's Conan home."""
    conan = shutil.which("conan") or str(Path(sys.executable).parent / "conan")
    if not Path(conan).exists():
        pytest.skip("needs conan (on PATH or next to the interpreter; CI installs it)")
    ws = Workspace.at(tmp_path / "project")
    ws.state.mkdir(parents=True)
    (ws.state / ".builder-state").write_text("")
    return conan, ws, {**os.environ, "CONAN_HOME": str(ws.conan_home)}


def test_conan_works_again_after_the_repair(tmp_path: Path) -> None:
    conan, ws, env = _bare_home(tmp_path)
    half_made(ws.conan_home)
    broken = subprocess.run([conan, "list", "*"], env=env, capture_output=True, text=True,
                            check=False)
    assert "no such table" in broken.stdout + broken.stderr
    assert repair_conan_home(ws)
    fixed = subprocess.run([conan, "list", "*"], env=env, capture_output=True, text=True,
                           check=False)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "ERROR" not in fixed.stdout + fixed.stderr


@pytest.mark.parametrize("damage", ["empty", "cut"])
def test_a_generated_plugin_left_empty_or_cut_short_is_made_anew(tmp_path: Path,
                                                                 damage: str) -> None:
    """A conan killed while it wrote the home's files leaves a plugin empty (or cut
    short); Conan never writes it again, and every conan install fails on it."""
    conan, ws, env = _bare_home(tmp_path)
    made = subprocess.run([conan, "list", "*"], env=env, capture_output=True, text=True,
                          check=False)
    assert made.returncode == 0, made.stderr
    (ws.conan_home / "remotes.json").write_text('{"remotes": []}\n')
    plugin = ws.conan_home / "extensions" / "plugins" / "compatibility" / "compatibility.py"
    whole = plugin.read_text()
    plugin.write_text("" if damage == "empty" else whole[:whole.index("def compatibility")])
    assert conan_home_damage(ws.conan_home) is not None
    note = repair_conan_home(ws)
    assert note and str(plugin) in note and "rebuilt" in note
    assert conan_home_damage(ws.conan_home) is None
    fixed = subprocess.run([conan, "list", "*"], env=env, capture_output=True, text=True,
                           check=False)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert plugin.read_text() == whole  # made again by conan
    assert (ws.conan_home / "remotes.json").read_text() == '{"remotes": []}\n'  # kept


def _kill_when_the_database_appears(project: Path, state: Path, after: float,
                                    steps_too: bool) -> None:
    """``builder build greet`` in a fresh project, in a process group of its own, killed
    with SIGKILL as a whole ``after`` seconds after the project's Conan home's database
    file appears (its first ``conan install`` is making it).  ``steps_too``: every process
    in the project is killed with it — its steps run in sessions of their own, which a
    kill of the build's group leaves running (a CI job cancelled, an OOM kill of the
    job's cgroup kill them all)."""
    db = state / "conan" / "p" / "cache.sqlite3"
    proc = subprocess.Popen(builder_argv(project, state, "build", "greet"), cwd=project,
                            env=child_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not db.exists():
            assert proc.poll() is None, f"the build ended ({proc.returncode}) before {db} " \
                                        f"appeared"
            assert time.monotonic() < deadline, f"{db} did not appear within 120 s"
            time.sleep(0.0005)
        time.sleep(after)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        for pid, _ in processes_in(project.parent) if steps_too else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _wait_none_in(folder: Path, timeout: float = 30) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout
    while (left := processes_in(folder)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.functional
@pytest.mark.parametrize("after", [0.0, 0.2])
@pytest.mark.parametrize("steps_too", [False, True], ids=["group", "everything"])
def test_a_build_killed_while_conan_makes_its_home_is_followed_by_one_that_works(
        tmp_path: Path, real_tools: None, after: float, steps_too: bool) -> None:
    """The first build is killed with SIGKILL while its ``conan install`` makes the
    project's Conan home (as the database file appears, and 0.2 s later): nothing of it
    is left running after a bounded wait, and the next build succeeds — rebuilding the
    home, with a note, when the kill left its database half-made (killed with everything
    as the file appears, conan leaves it without its ``packages`` table most times)."""
    from tests.conftest import FIXTURES

    for attempt in range(3 if steps_too and not after else 1):
        project = tmp_path / f"try{attempt}" / "project"
        shutil.copytree(FIXTURES / "project", project,
                        ignore=shutil.ignore_patterns(".builder", "__pycache__"))
        state = project.parent / "state"
        _kill_when_the_database_appears(project, state, after, steps_too)
        left = _wait_none_in(project.parent)
        assert not left, f"still running 30 s after the kill: {left}"
        damage = conan_home_damage(state / "conan")
        again = run_build(project, state, "greet")
        assert again.returncode == 0, f"{damage}\n{again.stdout}\n{again.stderr}"
        assert conan_home_damage(state / "conan") is None
        assert ("damaged" in again.stderr) == (damage is not None), again.stderr
        if damage is not None:
            assert "Conan home" in again.stderr and "rebuilt" in again.stderr
        assert not _wait_none_in(project.parent)
