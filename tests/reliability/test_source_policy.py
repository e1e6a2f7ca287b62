"""One source policy for path, git and url sources: no link out of the tree, no special
file, and every fetch (git, download, extraction) within a time limit and a size cap.
Hang-prone cases run builder as a process with a timeout: a hang fails the test."""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import tarfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from builder.util.files import file_sha256
from builder.util.runner import RecordingRunner
from tests.conftest import CliResult
from tests.reliability.conftest import builder_argv, child_env


def greet_source(project: Path, source_yaml: str) -> None:
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text().replace("source:\n  path: ../sources/greet\n",
                                                 source_yaml))


def build(project: Path, state: Path, *args: str, env: dict[str, str] | None = None,
          timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(builder_argv(project, state, "build", "greet", *args), cwd=project,
                          env={**child_env(), **(env or {})}, capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_a_path_source_linking_out_is_refused(project: Path, tmp_path: Path,
                                              cli: Callable[..., CliResult]) -> None:
    inc = project / "sources" / "greet" / "include" / "greet"
    os.symlink("/etc/passwd", inc / "passwd.h")
    runner = RecordingRunner()
    r = cli("--state-dir", str(tmp_path / "s"), "build", "greet", cwd=project, runner=runner)
    assert r.code == 4 and "include/greet/passwd.h" in r.err and "/etc/passwd" in r.err
    assert runner.calls == []
    (inc / "passwd.h").unlink()
    os.symlink("greet.h", inc / "alias.h")  # a link inside the tree is fine
    assert cli("--state-dir", str(tmp_path / "s"), "build", "greet", cwd=project,
               runner=RecordingRunner()).code == 0


def test_a_special_file_in_a_path_source_is_refused(project: Path, tmp_path: Path,
                                                    cli: Callable[..., CliResult]) -> None:
    os.mkfifo(project / "sources" / "greet" / "pipe")
    r = cli("--state-dir", str(tmp_path / "s"), "build", "greet", cwd=project,
            runner=RecordingRunner())
    assert r.code == 4 and "pipe" in r.err and "special file" in r.err


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True, env={**os.environ, "GIT_AUTHOR_NAME": "t",
                                          "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                                          "GIT_COMMITTER_EMAIL": "t@t"}).stdout.strip()


def test_a_git_source_with_a_link_out_is_refused(project: Path, tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "repo"
    shutil.copytree(project / "sources" / "greet", repo)
    os.symlink("/etc/passwd", repo / "include" / "greet" / "passwd.h")
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "x", cwd=repo)
    rev = git("rev-parse", "HEAD", cwd=repo)
    greet_source(project, f"source:\n  git: {repo}\n  rev: {rev}\n")
    r = build(project, tmp_path / "s")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "passwd.h" in r.stderr and "outside the source tree" in r.stderr, r.stderr
    assert not list((tmp_path / "s" / "sources").glob("*/include"))  # nothing kept
    assert not (tmp_path / "s" / "install").exists()
    log = r.stderr.split("log: ", 1)[1].split()[0]
    assert Path(log).is_file()  # the log the error points to exists


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server that accepts connections and never answers (a transport that waits
    forever)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join()
    for c in held:
        c.close()
    srv.close()


def test_a_git_fetch_that_never_answers_times_out(project: Path, tmp_path: Path,
                                                  silent_server: int) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    greet_source(project, f"source:\n  git: git://127.0.0.1:{silent_server}/repo\n"
                          f"  rev: {'a' * 40}\n")
    r = build(project, tmp_path / "s", env={"BUILDER_FETCH_TIMEOUT": "3"}, timeout=60)
    assert r.returncode == 1 and "timeout" in r.stderr, r.stderr


def archive_source(project: Path, archive: Path) -> None:
    greet_source(project, f"source:\n  url: file://{archive}\n  sha256: "
                          f"'{file_sha256(archive)}'\n")


def test_a_download_from_dev_zero_stops(project: Path, tmp_path: Path) -> None:
    greet_source(project, f"source:\n  url: file:///dev/zero\n  sha256: \"{'ab' * 32}\"\n")
    r = build(project, tmp_path / "s", timeout=60)
    assert r.returncode == 1 and "not a regular file" in r.stderr, r.stderr


def targz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def test_download_and_extraction_are_capped(project: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(3 * 2**20))
    archive_source(project, big)
    r = build(project, tmp_path / "s", env={"BUILDER_FETCH_MAX_SIZE": "1MiB"})
    assert r.returncode == 1 and "size cap" in r.stderr, r.stderr
    bomb = targz(tmp_path / "bomb.tar.gz", {"greet/zeros": b"\0" * (4 * 2**20)})
    assert bomb.stat().st_size < 2**20  # small download, large extraction
    archive_source(project, bomb)
    r = build(project, tmp_path / "s", env={"BUILDER_FETCH_MAX_SIZE": "2MiB"})
    assert r.returncode == 1 and "size cap" in r.stderr, r.stderr


@pytest.mark.parametrize("kind", ["truncated-tar", "corrupt-zip", "garbage"])
def test_damaged_archives_are_errors(project: Path, tmp_path: Path, kind: str) -> None:
    if kind == "truncated-tar":
        good = targz(tmp_path / "a.tar.gz", {"greet/x.h": os.urandom(200_000)})
        bad = tmp_path / "t.tar.gz"
        bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    elif kind == "corrupt-zip":
        bad = tmp_path / "c.zip"
        with zipfile.ZipFile(bad, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("greet/x.h", os.urandom(50_000))
        data = bytearray(bad.read_bytes())
        data[100:200] = b"\0" * 100
        bad.write_bytes(bytes(data))
    else:
        bad = tmp_path / "g.tar.gz"
        bad.write_bytes(b"\x1f\x8b" + os.urandom(500))
    archive_source(project, bad)
    r = build(project, tmp_path / "s", timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert bad.name in r.stderr


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_recipe_file_that_never_ends_is_refused(project: Path, tmp_path: Path,
                                                  kind: str) -> None:
    recipe = project / "recipes" / "zz.yaml"
    if kind == "fifo":
        os.mkfifo(recipe)
    else:
        os.symlink("/dev/zero", recipe)
    r = subprocess.run(builder_argv(project, tmp_path / "s", "plan", "greet"), cwd=project,
                       env=child_env(), capture_output=True, text=True, timeout=60,
                       check=False)
    assert r.returncode == 3 and "zz.yaml" in r.stderr and "regular file" in r.stderr
