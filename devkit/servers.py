"""Real servers for functional tests, on loopback only, stopped afterwards."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 20) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout}s")


def _stop(proc: subprocess.Popen[bytes], grace: float = 10) -> None:
    """Terminate a server, and kill it if it has not exited within ``grace`` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A throw-away redis-server on 127.0.0.1; yields its URL."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise FileNotFoundError("redis-server")
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                             "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_port(port, proc, "redis-server")
        yield f"redis://127.0.0.1:{port}"
    finally:
        _stop(proc)


@contextmanager
def conan_server(workdir: Path, users: dict[str, str], write: str = "*/*@*/*: *"
                 ) -> Iterator[str]:
    """A throw-away conan-server (PyPI ``conan-server``) bound to 127.0.0.1, with its
    own storage under ``workdir``; ``users`` may upload (``write`` permissions line).
    Yields its URL."""
    try:
        import conans.server.launcher  # noqa: F401
    except ImportError:
        raise FileNotFoundError("conan-server (pip install conan-server)") from None
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    users_text = "\n".join(f"{u}: {p}" for u, p in users.items())
    (workdir / "server.conf").write_text(
        "[server]\njwt_secret: builder-test-secret\njwt_expire_minutes: 120\n"
        "ssl_enabled: False\n"
        f"port: {port}\npublic_port:\nhost_name: 127.0.0.1\nauthorize_timeout: 1800\n"
        f"disk_storage_path: {workdir / 'data'}\ndisk_authorize_timeout: 1800\n"
        "updown_secret: builder-test-updown\n"
        f"[write_permissions]\n{write}\n[read_permissions]\n*/*@*/*: *\n"
        f"[users]\n{users_text}\n", encoding="utf-8")
    code = ("import sys\nfrom conans.server.launcher import ServerLauncher\n"
            "ServerLauncher(server_dir=sys.argv[1]).server.run(host='127.0.0.1')\n")
    log = open(workdir / "server.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-c", code, str(workdir)], stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        _wait_port(port, proc, "conan-server")
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(proc)
        log.close()


@contextmanager
def pypi_server(workdir: Path, users: dict[str, str]) -> Iterator[str]:
    """A throw-away pypiserver (a real package index) on 127.0.0.1, serving the wheels in
    ``workdir/packages``; uploads need one of ``users`` (an htpasswd file written with
    passlib), downloads do not.  No fallback to PyPI.  Yields its base URL."""
    import importlib.util

    # pypiserver is only looked up, never imported here: its bundled bottle puts an import
    # hook without find_spec on sys.meta_path, which turns every later import in this
    # process into an ImportWarning (an error under the suite's filterwarnings)
    try:
        if importlib.util.find_spec("pypiserver") is None:
            raise ImportError("pypiserver")
        with warnings.catch_warnings():  # passlib imports the stdlib's deprecated crypt
            warnings.simplefilter("ignore", DeprecationWarning)
            from passlib.apache import HtpasswdFile
    except ImportError:
        raise FileNotFoundError("pypiserver and passlib (pip install pypiserver passlib)"
                                ) from None
    port = free_port()
    packages = workdir / "packages"
    packages.mkdir(parents=True, exist_ok=True)
    ht = HtpasswdFile(str(workdir / "htpasswd"), new=True)
    for user, password in users.items():
        ht.set_password(user, password)
    ht.save()
    log = open(workdir / "server.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "pypiserver", "run", "-i", "127.0.0.1",
                             "-p", str(port), "-P", str(workdir / "htpasswd"), "-a", "update",
                             "--disable-fallback", str(packages)], stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        _wait_port(port, proc, "pypiserver")
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(proc)
        log.close()
