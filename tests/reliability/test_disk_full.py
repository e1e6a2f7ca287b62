"""A full disk: every persisted file is written atomically, so a failed write leaves
the previous state intact, the error names the path (never ``?``), and nothing is left
behind that breaks the next command once space is freed.  Run on a small tmpfs (root
only: skipped with the reason where mounting is not permitted)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from builder.util.runner import RecordingRunner
from tests.conftest import CliResult

FILESYSTEM_ERROR = 8


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip() or 'not root'}): the "
                    f"disk-full tests need one")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    """Take every free byte of ``disk``; returns the file to delete to free them."""
    ballast = disk / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                continue
    finally:
        os.close(fd)
    return ballast


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if ".tmp" in p.name)


def test_a_full_disk_while_creating_the_state_folder(
        project: Path, small_disk: Path, cli: Callable[..., CliResult]) -> None:
    state = small_disk / "state"
    ballast = fill(small_disk)
    r = cli("--state-dir", str(state), "build", "greet", cwd=project,
            runner=RecordingRunner())
    assert r.code == FILESYSTEM_ERROR, r.out + r.err
    assert str(state) in r.err and "?" not in r.err.split("\n")[0], r.err
    assert "free disk space" in r.err
    assert leftovers(small_disk) == []
    ballast.unlink()
    r = cli("--state-dir", str(state), "build", "greet", cwd=project,
            runner=RecordingRunner())
    assert r.code == 0, r.out + r.err


def test_a_full_disk_during_a_build_keeps_the_previous_state(
        project: Path, small_disk: Path, cli: Callable[..., CliResult]) -> None:
    state = small_disk / "state"
    assert cli("--state-dir", str(state), "build", "greet", cwd=project,
               runner=RecordingRunner()).code == 0
    before = {p: p.read_bytes() for p in state.glob("*.json")}
    ballast = fill(small_disk)
    r = cli("--state-dir", str(state), "build", "greet", "-o", "loud=true", cwd=project,
            runner=RecordingRunner())
    assert r.code != 0, r.out + r.err
    assert "No space left on device" in r.err and ": ?" not in r.err, r.err
    for p, data in before.items():  # each file whole: the old content or the new
        assert p.read_bytes() == data or json.loads(p.read_text()) is not None
    assert leftovers(state) == []
    ballast.unlink()
    r = cli("--state-dir", str(state), "build", "greet", "-o", "loud=true", cwd=project,
            runner=RecordingRunner())
    assert r.code == 0, r.out + r.err


def test_a_full_disk_while_conan_makes_its_home(small_disk: Path, tmp_path: Path) -> None:
    """conan stopped by a full disk leaves a damaged Conan home; builder detects and
    rebuilds it once there is space again."""
    import shutil
    import sys

    conan = shutil.which("conan") or str(Path(sys.executable).parent / "conan")
    if not Path(conan).exists():
        pytest.skip("needs conan (on PATH or next to the interpreter; CI installs it)")
    from builder.remote.conanhome import conan_home_damage, repair_conan_home
    from builder.workspace.paths import Workspace

    ws = Workspace.at(tmp_path / "project", small_disk / "state")
    ws.state.mkdir()
    (ws.state / ".builder-state").write_text("")
    env = {**os.environ, "CONAN_HOME": str(ws.conan_home)}
    subprocess.run([conan, "list", "*"], env=env, capture_output=True, check=False)
    (ws.conan_home / "p" / "cache.sqlite3").unlink()  # its first database is made now:
    ballast = fill(small_disk)
    subprocess.run([conan, "list", "*"], env=env, capture_output=True, check=False)
    ballast.unlink()
    broken = subprocess.run([conan, "list", "*"], env=env, capture_output=True, text=True,
                            check=False)
    assert "no such table" in broken.stdout + broken.stderr  # what every build then hit
    assert conan_home_damage(ws.conan_home)
    assert repair_conan_home(ws)
    out = subprocess.run([conan, "list", "*"], env=env, capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0 and "ERROR" not in out.stdout + out.stderr, out
