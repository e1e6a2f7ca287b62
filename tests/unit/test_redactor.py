"""The one redactor (builder.util.secrets): what counts as a secret, how a URL is stored,
where a value may go (a child's environment, never an argv), and the mask on output."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from builder.recipe.giturl import git_url_problems
from builder.source.fetch import git_transport_env
from builder.util import secrets
from builder.util.runner import SubprocessRunner


@pytest.mark.parametrize("name", ["GITHUB_PAT", "NPM_AUTH", "AWS_SECRET_ACCESS_KEY",
                                  "DEPLOY_KEY", "GOOGLE_APPLICATION_CREDENTIALS",
                                  "API_TOKEN", "TWINE_PASSWORD", "CONAN_LOGIN_USERNAME_TEAM"])
def test_credential_names(name: str) -> None:
    assert secrets.is_credential(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "CCACHE_DIR", "PATCH_LEVEL", "AUTHOR",
                                  "KEYBOARD", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK"])
def test_ordinary_names(name: str) -> None:
    assert not secrets.is_credential(name)


def test_a_url_is_stored_without_its_secrets_and_revealed_only_by_reference() -> None:
    url = "https://ci:tok-5e5e5e@git.example.com/r.git?ref=1&access_token=qq-1234"
    shown, ref = secrets.split_url(url, "unit/source")
    assert shown == "https://git.example.com/r.git?ref=1"
    assert ref == "${secret:unit/source}" and secrets.reveal(f"X={ref}") == f"X={url}"
    assert secrets.split_url("https://h.example/a.tgz", "unit/plain") == \
        ("https://h.example/a.tgz", "")
    with pytest.raises(secrets.SecretMissing, match="never secret values"):
        secrets.reveal("${secret:unit/never-given}")


def test_redact_masks_known_values_urls_queries_and_headers() -> None:
    secrets.remember("unit/opt", "opt-value-9f9f")
    text = secrets.redact("a opt-value-9f9f b fatal: https://u:p4ss@x.org/r?sig=abcd&n=1 "
                          "Authorization: Bearer eyJhbGc", environ={"MY_PAT": "pat-0000"})
    assert "opt-value-9f9f" not in text and "p4ss" not in text and "abcd" not in text
    assert "eyJhbGc" not in text and "n=1" in text and "x.org/r" in text
    assert secrets.redact("pat-0000 here", environ={"MY_PAT": "pat-0000"}) == "*** here"
    assert secrets.redact('"x": false', environ={"USE_TOKEN": "false"}) == '"x": false'


@pytest.mark.parametrize("header", ["Authorization: Bearer", "AUTHORIZATION:  token",
                                    "authorization:\tBasic", "AuThOrIzAtIoN: bearer"])
def test_an_authorization_header_is_masked_in_any_case(header: str) -> None:
    """The header's name is looked for case-folded before the pattern runs: whatever case
    the pattern matches, the check finds it ("author" has no letter with a non-ASCII case
    variant, which a case-folded check would miss)."""
    import re

    got = secrets.redact(f'{{"a": 1}}\n{"x" * 5000} {header} hd-1234 tail', environ={})
    assert "hd-1234" not in got and got.endswith("*** tail")
    assert all(re.fullmatch(f"(?i){c}", ch) is None or ch.lower() == c
               for c in "author" for ch in map(chr, range(0x250)))


def test_a_stored_url_is_masked_in_its_secret_parts_only() -> None:
    secrets.split_url("http://h.example/blob.tgz?token=tt-7777", "unit/blob")
    assert secrets.redact("cannot download http://h.example/blob.tgz?token=tt-7777: 404") == \
        "cannot download http://h.example/blob.tgz?token=***: 404"


def test_the_terminal_stream_redacts_every_write() -> None:
    secrets.remember("unit/stream", "stream-secret-1")
    inner = io.StringIO()
    out = secrets.RedactingStream(inner)
    print("token stream-secret-1 and https://a:b-b-b@h/x", file=out)
    assert inner.getvalue() == "token *** and https://***@h/x\n"


def test_the_runner_reveals_references_in_the_environment_and_refuses_argv(
        tmp_path: Path) -> None:
    ref = secrets.remember("unit/env", "env-secret-42")
    (tmp_path / ".builder-owned").write_text("builder\n")  # the writer's marker
    log = tmp_path / "step.log"
    res = SubprocessRunner().run(["sh", "-c", 'echo "got $V"'],
                                 cwd=tmp_path, env_changes={"V": ref}, log_path=log,
                                 timeout=30)
    text = log.read_text()
    assert res.returncode == 0 and "got ***" in text and "env-secret-42" not in text
    assert f"# env: V={ref}" in text
    res = SubprocessRunner().run(["echo", "env-secret-42"], cwd=tmp_path, env_changes={},
                                 log_path=log, timeout=30)
    assert res.returncode == 126 and "env-secret-42" not in log.read_text() + str(res.tail)


@pytest.mark.parametrize("url", ["fd::17", "ext::sh -c touch% /tmp/pwned", "foo::bar",
                                 "ftp://h.example/r.git", "https://h.example/r.git?token=x"])
def test_git_urls_refused(url: str) -> None:
    assert git_url_problems(url)


@pytest.mark.parametrize("url", ["https://h.example/r.git", "git@github.com:o/r.git",
                                 "ssh://git@h/r.git", "/srv/repo", "file:///srv/repo",
                                 "https://TOKEN@h.example/r.git"])
def test_git_urls_allowed(url: str) -> None:
    assert git_url_problems(url) == []


def test_git_refuses_the_fd_transport_at_once(tmp_path: Path) -> None:
    """Even from a URL no recipe check saw (a submodule's): git is told which transports
    it may use, and ``fd::`` is not one of them — an error, not a wait on a descriptor."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    r = subprocess.run(["git", "clone", "fd::0", str(tmp_path / "c")], capture_output=True,
                       text=True, timeout=30, env={"PATH": "/usr/bin:/bin",
                                                   "GIT_TERMINAL_PROMPT": "0",
                                                   **git_transport_env()},
                       stdin=subprocess.PIPE, check=False)
    assert r.returncode != 0 and "not allowed" in r.stderr, r.stderr
