"""What builder leaves in the temporary folder: nothing of a compile (its temporary files go
to a folder of the job's own, removed however the compiler ended), and no socket of a
build that was killed once the next build starts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from builder.execute.compiling import socket_dir
from builder.memory.launcher import run_measured

#: a "compiler" that writes a temporary file where TMPDIR says (as gcc writes its .s), tells
#: where, then ends as asked: normally, failing, or killed (as the backstop kills it)
COMPILER = ("import os, signal, sys, tempfile\n"
            "fd, path = tempfile.mkstemp(suffix='.s'); os.write(fd, b'x' * 4096)\n"
            "print(path, flush=True)\n"
            "how = sys.argv[1]\n"
            "if how == 'killed': os.kill(os.getpid(), signal.SIGKILL)\n"
            "sys.exit(0 if how == 'ok' else 1)\n")


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TMPDIR is the test's folder (tempfile reads it again)."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)


@pytest.mark.parametrize("how", ["ok", "failed", "killed"])
def test_a_compiles_temporary_files_are_removed_however_it_ends(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], how: str) -> None:
    m = run_measured([sys.executable, "-c", COMPILER, how])
    assert (m.rc == 0) == (how == "ok")
    written = Path(capfd.readouterr().out.strip())
    # it wrote in a folder of its own below the user's TMPDIR, and that folder is gone
    assert written.parent.parent == tmp_path and written.parent.name.startswith("builder-job-")
    assert not written.parent.exists()
    assert list(tmp_path.iterdir()) == []


def test_sockets_of_killed_builds_are_removed_at_the_next_build(tmp_path: Path) -> None:
    folder = socket_dir()
    assert folder.parent == tmp_path and folder.stat().st_mode & 0o777 == 0o700
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = int(gone.stdout)  # a pid whose process has ended
    socks = []
    for name in (f"builder-{dead}-app_cpu.sock", f"builder-{os.getpid()}-app_cpu.sock"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(folder / name))
        socks.append(s)
    mine = folder / f"builder-{dead}-notes.sock"  # named alike, but no socket: not ours
    mine.write_text("keep me")
    assert socket_dir() == folder
    assert not (folder / f"builder-{dead}-app_cpu.sock").exists()
    assert (folder / f"builder-{os.getpid()}-app_cpu.sock").exists()  # a live build's
    assert mine.read_text() == "keep me"
    for s in socks:
        s.close()


def test_a_socket_folder_someone_else_could_read_is_not_used(tmp_path: Path) -> None:
    (tmp_path / f"builder-{os.getuid()}").mkdir(mode=0o777)
    os.chmod(tmp_path / f"builder-{os.getuid()}", 0o777)
    assert socket_dir() == tmp_path


@pytest.mark.parametrize("fails", [False, True], ids=["ok", "failed"])
def test_a_kernel_steps_temporary_files_are_removed(tmp_path: Path, fails: bool) -> None:
    # hipcc leaves two <kernel>-XXXXXX folders in TMPDIR per compile: a kernel step's
    # TMPDIR is a folder of its own, removed however the step ends
    from builder.errors import StepFailed
    from builder.execute.executor import Executor
    from builder.plan.model import BuildPlan, Step
    from builder.util.runner import SubprocessRunner
    from builder.workspace.paths import Workspace

    project = tmp_path / "project"
    (project / ".builder").mkdir(parents=True)
    (project / ".builder" / ".builder-state").write_text("")  # the state folder: builder's
    where = tmp_path / "where.txt"
    leave = ("import os, sys, tempfile\n"
             "d = tempfile.mkdtemp(prefix='rms_norm-')\n"
             f"open({str(where)!r}, 'w').write(d)\n"
             f"sys.exit({int(fails)})\n")
    step = Step("k/kernel:rms_norm:gfx90a", "kernel", "k",
                commands=((sys.executable, "-c", leave),), cwd=str(project))
    plan = BuildPlan(variants=(), steps=(step,), host="test", cpus=1, memory_budget=2**30,
                     jobs=1)
    ex = Executor(plan, Workspace.at(project), SubprocessRunner())
    if fails:
        with pytest.raises(StepFailed):
            ex.commands(step)
    else:
        ex.commands(step)
    left = Path(where.read_text())
    # the step's own folder inside its TMPDIR (the state folder's, from its environment)
    tmpdir = Path(ex.step_env(step)["TMPDIR"])
    assert left.parent.parent == tmpdir and left.parent.name.startswith("builder-step-")
    assert not left.parent.exists()
    assert list(tmpdir.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project", "where.txt"]


def test_the_folders_of_jobs_killed_with_their_launcher_are_removed(tmp_path: Path) -> None:
    # a launcher killed with SIGKILL cannot remove its job's folder; the next build does,
    # and only folders of this name whose launcher is gone
    from builder.memory.launcher import JOB_TMP, remove_stale_job_dirs

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = tmp_path / f"{JOB_TMP}{int(gone.stdout)}-abc123"
    live = tmp_path / f"{JOB_TMP}{os.getpid()}-def456"
    other = tmp_path / f"{JOB_TMP}notes"
    for d in (dead, live, other):
        d.mkdir()
        (d / "ccJKqfkT.s").write_text("x")
    remove_stale_job_dirs()
    assert not dead.exists()
    assert live.exists() and other.exists()
