"""Every wait is bounded: a peer that accepts a connection and never answers costs a short,
configurable timeout and a message naming it — never a silent wait for ever — and SIGTERM
during an upload stops the uploader with builder (exit 143, one line, no orphan)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from builder.util.runner import SubprocessRunner
from tests.reliability.conftest import REPO, child_env, need


@contextlib.contextmanager
def silent_listener(family: int, address: object) -> Iterator[object]:
    """A server that accepts every connection and never says a word."""
    srv = socket.socket(family, socket.SOCK_STREAM)
    srv.bind(address)
    srv.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(srv.accept()[0])

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield srv.getsockname()
    finally:
        stop.set()
        t.join(2)
        for c in [*held, srv]:
            c.close()


def tiny_wheel(folder: Path) -> Path:
    """A minimal, valid pure-Python wheel (twine check passes it)."""
    files = {"tiny/__init__.py": b"x = 1\n",
             "tiny-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tiny\nVersion: 0.1\n"
                                            b"Summary: a test wheel\n",
             "tiny-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
                                         b"Root-Is-Purelib: true\nTag: py3-none-any\n"}
    def digest(b: bytes) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()

    record = "".join(f"{n},sha256={digest(b)},{len(b)}\n" for n, b in files.items()) + \
        "tiny-0.1.dist-info/RECORD,,\n"
    whl = folder / "tiny-0.1-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for n, b in files.items():
            z.writestr(n, b)
        z.writestr("tiny-0.1.dist-info/RECORD", record)
    return whl


def test_a_broker_socket_that_never_answers_costs_a_timeout(tmp_path: Path) -> None:
    """The launcher's socket taken over by a listener that accepts and is silent: the
    compile runs without admission control after BUILDER_BROKER_TIMEOUT, saying so."""
    need("cc")
    sock = tmp_path / "broker.sock"
    src = tmp_path / "x.c"
    src.write_text("int x(void) { return 1; }\n")
    with silent_listener(socket.AF_UNIX, str(sock)):
        env = {**child_env(), "BUILDER_BROKER": str(sock), "BUILDER_BROKER_TIMEOUT": "1"}
        start = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "builder.memory.launcher", "cc", "-c",
                            str(src), "-o", str(tmp_path / "x.o")], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=60, check=False)
        took = time.monotonic() - start
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "x.o").is_file()
    assert took < 20, took
    assert str(sock) in r.stderr and "silent" in r.stderr, r.stderr


def test_an_index_that_never_answers_costs_a_timeout(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("twine")
    from builder.remote import index

    monkeypatch.setenv("BUILDER_INDEX_TIMEOUT", "4")
    monkeypatch.setenv("TWINE_USERNAME", "u")
    monkeypatch.setenv("TWINE_PASSWORD", "pw-never-shown")
    monkeypatch.setattr(index, "PROGRESS_EVERY", 0.5)
    (tmp_path / ".builder-state").write_text("")  # a state folder (the writer's marker)
    whl = tiny_wheel(tmp_path)
    said: list[str] = []
    failure: list[BaseException] = []
    with silent_listener(socket.AF_INET, ("127.0.0.1", 0)) as (_, port):  # type: ignore[misc]
        url = f"http://127.0.0.1:{port}/"

        def go() -> None:
            try:
                index.upload([whl], url, tmp_path / "logs" / "publish.log", tmp_path,
                             SubprocessRunner(), said.append)
            except BaseException as exc:
                failure.append(exc)

        t = threading.Thread(target=go, daemon=True)
        t.start()
        t.join(60)
        assert not t.is_alive(), "the upload to a silent index never ended"
    assert failure and isinstance(failure[0], index.IndexError_), failure
    text = failure[0].render()
    assert url in text and "BUILDER_INDEX_TIMEOUT" in text and "4 s" in text, text
    assert any("still waiting for " + url in s for s in said), said


DRIVER = """\
import sys
from pathlib import Path

import builder.remote.index as index

wheel = Path(sys.argv[1])
index.collect = lambda plan: [wheel]  # the wheels a build made: one, here
sys.argv = ["builder", *sys.argv[2:]]
from builder.cli.entry import run

run()
"""


def _twines(port: int) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                cmd = (d / "cmdline").read_bytes().split(b"\0")
                if b"twine" in cmd and f":{port}/".encode() in b" ".join(cmd):
                    found.append(int(d.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_sigterm_during_publish_index_stops_twine(project: Path, tmp_path: Path) -> None:
    """``builder publish --index`` to an index that never answers, stopped with SIGTERM:
    exit 143 with one line, and twine does not outlive builder.  (Only which wheels to
    upload is given; planning, the CLI, the runner and twine are the real ones.)"""
    pytest.importorskip("twine")
    need("conan", "cmake")
    whl = tiny_wheel(tmp_path)
    with silent_listener(socket.AF_INET, ("127.0.0.1", 0)) as (_, port):  # type: ignore[misc]
        url = f"http://127.0.0.1:{port}/"
        env = {**child_env(), "TWINE_USERNAME": "u", "TWINE_PASSWORD": "pw-never-shown"}
        proc = subprocess.Popen(
            [sys.executable, "-c", DRIVER, str(whl), "-C", str(project), "--state-dir",
             str(tmp_path / "state"), "publish", "greet", "--index", url],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not _twines(port) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _twines(port), "twine upload never started: " + "".join(proc.communicate())
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 143, out + err
        assert "terminated (SIGTERM)" in err and "publish --index" in err, err
        assert len([ln for ln in err.splitlines() if ln.startswith("error:")]) == 1, err
        assert "Traceback" not in err
        deadline = time.monotonic() + 5
        while _twines(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = _twines(port)
        for pid in left:  # not to leave one behind when the test fails
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        assert left == [], "twine outlived builder"
