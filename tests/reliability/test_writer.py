"""The one writer (:mod:`builder.util.writer`): builder writes only into folders it owns or
files the user named, never through a link, never into a FIFO or a device, never over a
file it did not write without ``--force``; and every write is atomic."""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.errors import OwnershipError
from builder.util import writer
from builder.util.runner import RecordingRunner
from tests.conftest import CliResult

REFUSED = 7


@pytest.fixture
def owned(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    (d / writer.STATE_MARKER).write_text("builder\n")
    return d


def test_a_link_in_an_owned_folder_is_never_written_through(owned: Path,
                                                             tmp_path: Path) -> None:
    target = tmp_path / "user.txt"
    target.write_text("mine")
    (owned / "host.json").symlink_to(target)
    with pytest.raises(OwnershipError, match="symbolic link"):
        writer.write_text(owned / "host.json", "{}")
    with pytest.raises(OwnershipError, match="symbolic link"):
        writer.open_stream(owned / "host.json").close()
    with pytest.raises(OwnershipError):
        os.close(writer.open_lock(owned / "host.json"))
    assert target.read_text() == "mine" and (owned / "host.json").is_symlink()


def test_a_linked_folder_below_the_marker_is_refused(owned: Path, tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (owned / "logs").symlink_to(user)
    for write in (lambda: writer.write_text(owned / "logs" / "a.log", "x"),
                  lambda: writer.open_stream(owned / "logs" / "a.log").close(),
                  lambda: writer.make_dirs(owned / "logs" / "deeper")):
        with pytest.raises(OwnershipError, match="symbolic link"):
            write()
    assert list(user.iterdir()) == []


def test_fifos_and_devices_are_refused(owned: Path, tmp_path: Path) -> None:
    fifo = owned / "lock"
    os.mkfifo(fifo)
    with pytest.raises(OwnershipError, match="FIFO"):
        os.close(writer.open_lock(fifo))  # would block forever on a FIFO without a reader
    with pytest.raises(OwnershipError, match="FIFO"):
        writer.write_text(fifo, "x")
    named_fifo = tmp_path / "out.lock"
    os.mkfifo(named_fifo)
    with pytest.raises(OwnershipError, match="FIFO"):
        writer.write_text(named_fifo, "x", named=True, force=True)
    assert stat.S_ISFIFO(os.lstat(named_fifo).st_mode)
    dev = tmp_path / "null"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod is not permitted here (not root): the device case needs it")
    with pytest.raises(OwnershipError, match="device"):
        writer.write_text(dev, "x", named=True, force=True)
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_a_path_outside_owned_folders_is_refused_unless_named(tmp_path: Path) -> None:
    with pytest.raises(OwnershipError, match="outside every folder builder owns"):
        writer.write_text(tmp_path / "x.json", "{}")
    with pytest.raises(OwnershipError, match="outside every folder builder owns"):
        writer.open_stream(tmp_path / "x.log").close()
    with pytest.raises(OwnershipError):
        writer.make_dirs(tmp_path / "sub")
    (tmp_path / "user.txt").write_text("mine")
    with pytest.raises(OwnershipError):
        writer.remove(tmp_path / "user.txt")
    assert [p.name for p in tmp_path.iterdir()] == ["user.txt"]
    writer.write_text(tmp_path / "named.txt", "a", named=True)  # new: written
    assert (tmp_path / "named.txt").read_text() == "a"
    with pytest.raises(OwnershipError, match="did not write it"):  # not builder's: kept
        writer.write_text(tmp_path / "named.txt", "b", named=True)
    assert (tmp_path / "named.txt").read_text() == "a"
    writer.write_text(tmp_path / "named.txt", "c", named=True,
                      recognise=lambda head: head == b"a")  # builder's own: replaced
    writer.write_text(tmp_path / "named.txt", "d", named=True, force=True)
    assert (tmp_path / "named.txt").read_text() == "d"


def test_a_failed_write_keeps_the_old_content_and_names_the_path(owned: Path) -> None:
    path = owned / "history.json"
    writer.write_text(path, "old")

    def broken(fd: int) -> None:
        os.write(fd, b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as info:
        writer._atomic(path, broken, False, False, None, True, 0o666)
    assert info.value.filename == str(path) and info.value.errno == errno.ENOSPC
    assert path.read_text() == "old"
    assert sorted(p.name for p in owned.iterdir()) == [writer.STATE_MARKER, "history.json"]


# -- through the command line --------------------------------------------------------------

def test_lock_and_report_outputs_refuse_links_fifos_and_foreign_files(
        project: Path, tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    assert cli("build", "greet", cwd=project, runner=RecordingRunner()).code == 0
    user = tmp_path / "user.txt"
    user.write_text("mine")
    link = tmp_path / "link.lock"
    link.symlink_to(user)
    fifo = tmp_path / "fifo.lock"
    os.mkfifo(fifo)
    for out in (link, fifo, user):
        for cmd in (["lock", "greet", "--output", str(out)], ["report", "-o", str(out)]):
            r = cli(*cmd, cwd=project, runner=RecordingRunner())
            assert r.code == REFUSED, (cmd, r.out + r.err)
            assert str(out) in r.err
    assert user.read_text() == "mine" and link.is_symlink()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    # a lockfile builder wrote is replaced; a user's file only with --force
    mine = tmp_path / "builder.lock"
    assert cli("lock", "greet", "--output", str(mine), cwd=project).code == 0
    assert cli("lock", "greet", "--output", str(mine), cwd=project).code == 0
    assert cli("lock", "greet", "--output", str(user), "--force", cwd=project).code == 0
    assert '"variants"' in user.read_text()


def test_the_users_workflow_file_is_not_overwritten(project: Path,
                                                    cli: Callable[..., CliResult]) -> None:
    wf = project / ".github" / "workflows" / "build.yml"
    wf.parent.mkdir(parents=True)
    wf.write_text("name: my own CI\n")
    r = cli("matrix", "--write-workflow", cwd=project)
    assert r.code == REFUSED and "--force" in r.err, r.out + r.err
    assert wf.read_text() == "name: my own CI\n"
    assert cli("matrix", "--write-workflow", "--force", cwd=project).code == 0
    assert wf.read_text().startswith("# Generated by `builder matrix --write-workflow`")
    wf.write_text(wf.read_text() + "# an edit\n")  # builder's file: rewritten without --force
    assert cli("matrix", "--write-workflow", cwd=project).code == 0
    assert "# an edit" not in wf.read_text()


@pytest.mark.parametrize("what", ["lock", "log", "logs"])
def test_links_in_the_state_folder_are_refused(project: Path, tmp_path: Path, what: str,
                                               cli: Callable[..., CliResult]) -> None:
    """``.builder/lock``, a step's log file or ``.builder/logs`` made a link to a user's
    file or folder: the build stops and the user's file stays as it was."""
    assert cli("build", "greet", cwd=project, runner=RecordingRunner()).code == 0
    state = project / ".builder"
    user = tmp_path / "user"
    user.mkdir()
    (user / "notes.txt").write_text("mine")
    if what == "lock":
        (state / "lock").unlink()
        (state / "lock").symlink_to(user / "notes.txt")
    elif what == "log":
        log = next((state / "logs").glob("*.log"))
        log.unlink()
        log.symlink_to(user / "notes.txt")
    else:
        for p in (state / "logs").iterdir():
            p.unlink()
        (state / "logs").rmdir()
        (state / "logs").symlink_to(user)
    shutil.rmtree(state / "install")  # the same variant builds again, with the same logs
    r = cli("build", "greet", cwd=project, runner=RecordingRunner())
    assert r.code == REFUSED, r.out + r.err
    assert "refusing to touch" in r.err and "symbolic link" in r.err
    assert sorted(p.name for p in user.iterdir()) == ["notes.txt"]
    assert (user / "notes.txt").read_text() == "mine"


def test_a_device_named_as_output_is_never_replaced(project: Path, tmp_path: Path,
                                                    cli: Callable[..., CliResult]) -> None:
    """As root, ``--output /dev/full`` once became a regular file; a device node of our
    own stands in for it here."""
    dev = tmp_path / "full"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("mknod is not permitted here (not root): the device case needs it")
    assert cli("build", "greet", cwd=project, runner=RecordingRunner()).code == 0
    for cmd in (["lock", "greet", "--output", str(dev), "--force"],
                ["report", "-o", str(dev), "--force"]):
        r = cli(*cmd, cwd=project)
        assert r.code == REFUSED and "device" in r.err, (cmd, r.out + r.err)
        assert stat.S_ISCHR(os.lstat(dev).st_mode)
