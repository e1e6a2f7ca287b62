"""A long wait on a peer says how it goes (builder.util.waiting): a url download that
trickles in reports its bytes every few seconds, and a git clone from a server that says
nothing reports that it still waits, with its bound — never a silent wait."""

from __future__ import annotations

import hashlib
import http.server
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from builder.source import fetch
from builder.source.policy import Limits
from builder.util import waiting
from tests.conftest import CliResult
from tests.reliability.conftest import need
from tests.reliability.test_hangs import silent_listener

DATA = bytes(range(256)) * 800  # 204,800 bytes


class _Trickle(http.server.BaseHTTPRequestHandler):
    """20 KB every 0.15 s: about 1.5 s for the whole file."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(DATA)))
        self.end_headers()
        for i in range(0, len(DATA), 20_000):
            self.wfile.write(DATA[i:i + 20_000])
            self.wfile.flush()
            time.sleep(0.15)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_server() -> Iterator[str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/data.bin"
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_slow_download_says_how_far_it_is(slow_server: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waiting, "PROGRESS_EVERY", 0.3)
    said: list[str] = []
    (tmp_path / ".builder-state").write_text("")  # a state folder (the writer's marker)
    dest = tmp_path / "data.bin"
    fetch.download(slow_server, dest, hashlib.sha256(DATA).hexdigest(), Limits(timeout=60),
                   progress=said.append)
    assert dest.read_bytes() == DATA
    assert len(said) >= 2, said
    pattern = re.compile(re.escape(f"fetching {slow_server}: ") +
                         r"(\d+\.\d) MB of 0\.2 MB, \d+ s \(of at most 60 s\)\Z")
    got = [pattern.match(s) for s in said]
    assert all(got), said
    sizes = [float(m[1]) for m in got if m]
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0], said


def test_a_silent_git_server_is_said_while_waiting(
        project: Path, cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch) -> None:
    need("git")
    monkeypatch.setattr(waiting, "PROGRESS_EVERY", 0.5)
    monkeypatch.setenv("BUILDER_FETCH_TIMEOUT", "3")
    import socket

    with silent_listener(socket.AF_INET, ("127.0.0.1", 0)) as (_, port):  # type: ignore[misc]
        recipe = project / "recipes" / "greet.yaml"
        recipe.write_text(recipe.read_text().replace(
            "source:\n  path: ../sources/greet",
            f"source:\n  git: http://127.0.0.1:{port}/greet.git\n  rev: {'a' * 40}"))
        start = time.monotonic()
        r = cli("build", "greet", cwd=project)
        took = time.monotonic() - start
    assert r.code != 0 and took < 30, (took, r.out, r.err)
    lines = [x for x in r.out.splitlines() if "git clone: still waiting" in x]
    assert lines and all(re.search(r"still waiting \(\d+ s of 3 s\)$", x) for x in lines), \
        r.out
