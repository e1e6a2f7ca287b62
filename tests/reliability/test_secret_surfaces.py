"""One test plants a secret through every entry point builder has and greps every surface
builder writes or shows for it.

Entry points: a token in a ``git:`` source URL (user info) and in a ``url:`` source's query,
a ``secret: true`` option set from ``API_TOKEN``, a redis password in ``--cache-remote``,
``GITHUB_PAT`` / ``NPM_AUTH`` printed by a test step, ``?token=`` in ``remote add``.
Surfaces: the terminal (stdout and stderr of every command), ``<state>/logs``, the plan JSON,
the lockfile, install manifests, the HTML report, CMakeCache.txt, conaninfo.txt, every other
file under the state folder, and the command line of every process while the build runs.
The secrets still reach the tools that need them: the git server sees the header, ccache
stores into the password-protected redis.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.conftest import builder_argv, child_env, need

pytestmark = pytest.mark.functional

GIT_TOKEN = "ghp-Git7oken-4d1e"
URL_TOKEN = "sig-Url7oken-99ab"
OPTION = "opt-Api7oken-5c2f"
REDIS_PW = "redis-Pa55-77e1"
PAT = "pat-Gh1thub-0a9d"
NPM = "npm-Auth0r1ty-31c4"
REMOTE = "rem-Qu3ry-8b8b"
ALL = (GIT_TOKEN, URL_TOKEN, OPTION, REDIS_PW, PAT, NPM, REMOTE)


@contextlib.contextmanager
def git_server(root: Path, user: str, token: str, seen: list[str]) -> Iterator[int]:
    """Dumb-HTTP git server for ``root`` that wants Basic ``user:token``."""
    want = "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            got = self.headers.get("Authorization", "")
            seen.append(got)
            if got != want:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield srv.server_address[1]
    finally:
        srv.shutdown()
        srv.server_close()


@contextlib.contextmanager
def redis(tmp: Path, password: str) -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = tmp / "redis.conf"
    conf.write_text(f"port {port}\nbind 127.0.0.1\nrequirepass {password}\nsave \"\"\n"
                    f"appendonly no\ndir {tmp}\n")
    proc = subprocess.Popen(["redis-server", str(conf)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                break
            time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


def redis_keys(port: int, password: str) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"AUTH {password}\r\nDBSIZE\r\n".encode())
        time.sleep(0.2)
        reply = s.recv(4096).decode()
    return int(reply.split(":")[-1].split()[0])


def bare_repo(src: Path, where: Path) -> tuple[Path, str]:
    work = where / "work"
    shutil.copytree(src, work)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "greet"]):
        subprocess.run([*git, *argv], cwd=work, check=True, capture_output=True)
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, check=True,
                         capture_output=True, text=True).stdout.strip()
    bare = where / "srv" / "greet.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    subprocess.run(["git", "update-server-info"], cwd=bare, check=True)
    return bare.parent, rev


class CmdlineWatch:
    """Every distinct command line of every process, sampled while it runs."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            for d in Path("/proc").iterdir():
                if d.name.isdigit():
                    with contextlib.suppress(OSError):
                        self.seen.add((d / "cmdline").read_bytes().replace(b"\0", b" ")
                                      .decode("utf-8", "replace"))
            time.sleep(0.01)

    def __enter__(self) -> CmdlineWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)


def leaks(text: str) -> list[str]:
    return [s for s in ALL if s in text]


def test_a_planted_secret_reaches_no_surface(project: Path, tmp_path: Path,
                                             real_tools: None) -> None:
    need("git", "ccache", "redis-server")
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("reads /proc (Linux)")
    serve, rev = bare_repo(project / "sources" / "greet", tmp_path / "git")
    state = tmp_path / "state"
    seen_auth: list[str] = []
    terminal: list[str] = []
    env = {**child_env(), "API_TOKEN": OPTION, "GITHUB_PAT": PAT, "NPM_AUTH": NPM}

    def builder(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(builder_argv(project, state, *args), cwd=project, env=env,
                           capture_output=True, text=True, timeout=timeout, check=False)
        terminal.append(f"{r.stdout}\n{r.stderr}")
        return r

    with git_server(serve, "ci", GIT_TOKEN, seen_auth) as gport, \
            redis(tmp_path, REDIS_PW) as rport:
        recipe = project / "recipes" / "greet.yaml"
        recipe.write_text(recipe.read_text().replace(
            "  path: ../sources/greet\n",
            f"  git: http://ci:{GIT_TOKEN}@127.0.0.1:{gport}/greet.git\n  rev: {rev}\n"))
        text = recipe.read_text().replace(
            "options:\n", "options:\n  api_token:\n    type: str\n    default: \"\"\n"
            "    secret: true\n    env: API_TOKEN\n    cmake: GREET_API_TOKEN\n")
        # the shell's credentials never reach a step (the clean step environment); the
        # secret option's value does, and what the step prints of it is masked
        recipe.write_text(text + "test:\n  - name: env\n    allow_empty: true\n"
                          "    run: [sh, -c, 'echo pat=$GITHUB_PAT npm=$NPM_AUTH "
                          "api=$API_TOKEN']\n")
        (project / "recipes" / "blob.yaml").write_text(
            "package:\n  name: blob\n  version: \"1.0.0\"\nsource:\n"
            f"  url: http://127.0.0.1:{gport}/missing.tgz?x=1&token={URL_TOKEN}\n"
            f"  sha256: {'ab' * 32}\nbackends:\n  cpu: {{}}\n")
        remote = f"redis://{REDIS_PW}@127.0.0.1:{rport}"  # ccache: redis://PASSWORD@HOST
        cache = ["--compiler-cache", "ccache", "--cache-remote", remote]

        plan = builder("plan", "greet", *cache, "--format", "json")
        assert plan.returncode == 0, plan.stderr
        env["BUILDER_CACHE_REMOTE"] = remote  # not on builder's own command line either
        with CmdlineWatch() as ps:
            built = builder("build", "greet", "--compiler-cache", "ccache")
        assert built.returncode == 0, built.stdout + built.stderr
        failed = builder("build", "blob")
        assert failed.returncode != 0 and "missing.tgz" in failed.stderr, failed.stderr
        lock = builder("lock", "greet", *cache, "--output", str(tmp_path / "builder.lock"))
        assert lock.returncode == 0, lock.stderr
        report = builder("report", "-o", str(tmp_path / "report.html"))
        assert report.returncode == 0, report.stderr
        added = builder("remote", "add", "team", f"https://h.example/api?token={REMOTE}")
        assert added.returncode == 2, added.stdout + added.stderr
        stored = redis_keys(rport, REDIS_PW)

    # the secrets reached the tools that need them, and only through their environment
    want = "Basic " + base64.b64encode(f"ci:{GIT_TOKEN}".encode()).decode()
    assert want in seen_auth, "git never sent the credentials"
    assert stored > 0, "ccache stored nothing in the password-protected redis"
    log_text = {p: p.read_text(errors="replace") for p in (state / "logs").rglob("*")
                if p.is_file()}
    assert any("pat= npm= api=***" in t for t in log_text.values()), "the test step's log"

    assert any("cmake" in c for c in ps.seen), "the watch saw no process of the build"
    surfaces = {
        "terminal": "\n".join(terminal),
        "process command lines": "\n".join(ps.seen),
        "lockfile": (tmp_path / "builder.lock").read_text(),
        "report": (tmp_path / "report.html").read_text(),
    }
    named = {"CMakeCache.txt": list(state.rglob("CMakeCache.txt")),
             "conaninfo.txt": list(state.rglob("conaninfo.txt")),
             "manifest.json": list((state / "install").rglob("manifest.json")),
             "logs": list(log_text)}
    for what, files in named.items():
        assert files, f"no {what} under {state}: the test would prove nothing"
    assert any("${secret:greet/options/api_token}" in p.read_text() for p in
               named["CMakeCache.txt"]), "CMake's cache holds the reference"
    for p in state.rglob("*"):
        if p.is_file() and not p.is_symlink():
            surfaces[str(p.relative_to(state))] = p.read_bytes().decode("utf-8", "replace")
    found = {where: leaks(text) for where, text in surfaces.items() if leaks(text)}
    assert found == {}, found
    assert "ghp-" not in surfaces["terminal"] and "ci:" not in surfaces["terminal"]
