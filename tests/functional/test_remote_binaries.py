"""A Conan binary remote shared by workspaces, as CI runners would share one: a real
conan-server and a real redis-server on loopback, stopped afterwards.

Workspace A builds and publishes; workspace B, with an empty local cache, downloads
instead of building and hits the remote compiler cache for what it still builds.  Then
the bad cases: a corrupted package is discarded and rebuilt, a remote that is down or
refuses the credentials is named with the reason, and --remote-optional builds locally.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import tarfile
from pathlib import Path

import pytest

from devkit.servers import conan_server, redis_server
from tests.conftest import FIXTURES
from tests.functional.conftest import need

pytestmark = pytest.mark.functional

PASSWORD = "s3cret-Pa55"


def _workspace(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(FIXTURES / "project", dst,
                    ignore=shutil.ignore_patterns(".builder", "__pycache__"))
    return dst


def _all_text(root: Path) -> str:
    out = []
    for p in root.rglob("*"):
        if p.is_file() and p.suffix in (".log", ".json", ".txt", ".conf", ".py", ""):
            with contextlib.suppress(OSError):
                out.append(p.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(out)


def _tamper(server_dir: Path, recipe: str) -> int:
    """Change one file inside every stored package archive of ``recipe`` (keeping the
    archive well-formed), as a broken disk or a bad proxy would."""
    changed = 0
    for tgz in (server_dir / "data" / recipe).rglob("conan_package.tgz"):
        members = []
        with tarfile.open(tgz) as tar:
            for m in tar.getmembers():
                data = tar.extractfile(m).read() if m.isfile() else None  # type: ignore[union-attr]
                members.append((m, data))
        with tarfile.open(tgz, "w:gz") as tar:
            for m, original in members:
                data = original
                if data is not None and m.name.endswith((".h", ".a", ".so", ".hpp")):
                    data = data + b"\n/* tampered */\n"
                    m.size = len(data)
                    changed += 1
                tar.addfile(m, io.BytesIO(data) if data is not None else None)
    return changed


def test_publish_then_download_in_a_fresh_workspace(tmp_path: Path, cli,  # type: ignore[no-untyped-def]
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    need("conan", "cmake", "ninja", "g++", "ccache", "redis-server")
    pytest.importorskip("conans.server", reason="needs conan-server (pip install conan-server)")
    a, b, c = (_workspace(tmp_path, n) for n in "abc")
    with conan_server(tmp_path / "server", {"ci": PASSWORD}) as url, \
            redis_server(tmp_path / "redis") as redis:
        cache = ("--compiler-cache", "ccache", "--cache-remote", redis)
        for ws in (a, b, c):
            assert cli("remote", "add", "team", url, cwd=ws).code == 0

        # A: build, then publish (credentials only from the environment)
        assert cli("build", "app", *cache, cwd=a).code == 0
        assert cli("build", "greet", "-o", "greet:loud=true", *cache, cwd=a).code == 0
        monkeypatch.setenv("CONAN_LOGIN_USERNAME_TEAM", "ci")
        monkeypatch.setenv("CONAN_PASSWORD_TEAM", "wrong")
        refused = cli("publish", "app", "--remote", "team", cwd=a)
        assert refused.code == 6, refused.out + refused.err
        assert "remote 'team': refused the credentials" in refused.err
        assert "CONAN_PASSWORD_TEAM" in refused.err
        monkeypatch.setenv("CONAN_PASSWORD_TEAM", PASSWORD)
        pub = cli("publish", "app", "--remote", "team", cwd=a)
        assert pub.code == 0, pub.out + pub.err
        assert "published 2 variant(s) to team" in pub.out  # app and its dependency greet

        # B: an empty local cache; the plan says download, the build compiles nothing
        monkeypatch.delenv("CONAN_PASSWORD_TEAM")
        plan = cli("plan", "app", "--remote", "team", cwd=b)
        assert plan.code == 0, plan.err
        assert plan.out.count("[download] cpu release") == 2
        assert "[build]" not in plan.out
        got = cli("build", "app", "--remote", "team", *cache, cwd=b)
        assert got.code == 0, got.out + got.err
        assert "0 step(s) to run, 4 to download" in got.out
        assert "compiler cache" not in got.out  # nothing was compiled
        app = next((b / ".builder" / "install" / "app").glob("cpu-release-*"))
        import subprocess

        run = subprocess.run([str(app / "bin" / "app"), "tester"], capture_output=True,
                             text=True, check=False)
        assert run.returncode == 0 and "tester" in run.stdout
        assert cli("build", "app", "--remote", "team", cwd=b).out.startswith("nothing to do")
        # what B builds itself (greet loud=true was never published) hits the remote cache
        loud = cli("build", "greet", "-o", "greet:loud=true", "--remote", "team", *cache,
                   cwd=b)
        assert loud.code == 0, loud.out + loud.err
        assert "compiler cache: 1 hit(s), 0 miss(es), 1 from the remote" in loud.out

        # a corrupted package is discarded and rebuilt, never used
        assert _tamper(tmp_path / "server", "greet") > 0
        bad = cli("build", "app", "--remote", "team", cwd=c)
        assert bad.code == 0, bad.out + bad.err
        assert "corrupted" in bad.err and "building it here instead" in bad.err
        assert (c / ".builder" / "install" / "greet").is_dir()

    # the server is gone now: the remote is named with the reason, or skipped on request
    d = _workspace(tmp_path, "d")
    assert cli("remote", "add", "team", url, cwd=d).code == 0
    down = cli("build", "app", "--remote", "team", cwd=d)
    assert down.code == 6
    assert "remote 'team': cannot be reached" in down.err and "--remote-optional" in down.err
    local = cli("build", "app", "--remote", "team", "--remote-optional", cwd=d)
    assert local.code == 0, local.out + local.err
    assert "building locally (--remote-optional)" in local.out
    # the password never reaches builder's files
    for ws in (a, b, c, d):
        assert PASSWORD not in _all_text(ws / ".builder")
