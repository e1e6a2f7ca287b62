"""Credentials never reach builder's files: a recipe may not substitute one, a remote URL
may not carry one, and a child that prints one has it masked in its log."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.util.runner import RecordingRunner, SubprocessRunner
from tests.conftest import CliResult

SECRET = "s3cr3t-Pa55w0rd"


def all_text(folder: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*")
                     if p.is_file())


@pytest.mark.parametrize("place", ["defines", "test env"])
def test_a_recipe_may_not_substitute_a_credential(project: Path, tmp_path: Path, place: str,
                                                  cli: Callable[..., CliResult],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONAN_PASSWORD_TEAM", SECRET)
    recipe = project / "recipes" / "greet.yaml"
    use = ('defines:\n  PW: "${env.CONAN_PASSWORD_TEAM}"\n' if place == "defines" else
           'test:\n  - name: t\n    run: [echo]\n    env: {PW: "${env.CONAN_PASSWORD_TEAM}"}\n')
    recipe.write_text(recipe.read_text() + use)
    state = tmp_path / "s"
    for command in (["build", "greet"], ["plan", "greet", "--format", "json"]):
        r = cli("--state-dir", str(state), *command, cwd=project, runner=RecordingRunner())
        assert r.code == 3 and "CONAN_PASSWORD_TEAM" in r.err and "greet.yaml:" in r.err
        assert SECRET not in r.out + r.err
    assert SECRET not in all_text(state)


def test_remote_urls_with_credentials_are_refused(project: Path, tmp_path: Path,
                                                  cli: Callable[..., CliResult]) -> None:
    state = tmp_path / "s"
    r = cli("--state-dir", str(state), "remote", "add", "team",
            f"https://ci:{SECRET}@conan.example.com/api", cwd=project)
    assert r.code == 2 and "CONAN_PASSWORD_TEAM" in r.err and SECRET not in r.err
    assert SECRET not in all_text(state)
    # a remote configured by other means: shown without its credentials
    remotes = state / "conan" / "remotes.json"
    remotes.write_text(json.dumps({"remotes": [{"name": "old", "url":
                                                f"https://ci:{SECRET}@h.example/x"}]}))
    r = cli("--state-dir", str(state), "remote", "list", cwd=project)
    assert r.code == 0 and "old" in r.out and SECRET not in r.out and "ci:" not in r.out


def test_a_child_printing_a_credential_is_masked_in_its_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONAN_PASSWORD_TEAM", SECRET)
    (tmp_path / ".builder-state").write_text("")  # a folder builder owns (the writer)
    log = tmp_path / "step.log"
    res = SubprocessRunner().run(["sh", "-c", 'echo "pw=$CONAN_PASSWORD_TEAM $X"'],
                                 cwd=tmp_path, env_changes={"MY_TOKEN": "tok-123456"},
                                 log_path=log, timeout=30)
    text = log.read_text()
    assert res.returncode == 0 and "pw=***" in text
    assert SECRET not in text + "\n".join(res.tail) and "tok-123456" not in text
