"""The secrets a recipe names reach exactly the steps it names them for, at run time, and
never the plan (builder.resolve.secretenv), with a recording runner."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.util.runner import RecordingRunner
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


def test_secrets_reach_their_steps_only(envprobe: Path, cli: Cli, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENED_OUT", str(tmp_path / "seen"))
    monkeypatch.setenv("DATASET_LOGIN", "login-value-8f3a91")
    monkeypatch.setenv("DATA_KEY_SRC", "key-value-77c2e0")
    r = cli("plan", "tokened", "--format", "json", cwd=envprobe)
    assert r.code == 0, r.err
    assert "login-value" not in r.out and "key-value" not in r.out
    steps = {s["id"].rsplit("/", 1)[1]: s for s in json.loads(r.out)["steps"]}
    named = [[n for n, _ in steps[k]["secrets"]] for k in ("configure", "build", "stage",
                                                            "test:fetch")]
    assert named == [["DATASET_LOGIN"]] * 4
    assert not steps["conan-install"]["secrets"] and not steps["publish"]["secrets"]
    assert dict(steps["test:fetch"]["env"])["DATA_AUTHZ"] == \
        "${secret:tokened/test/fetch/env/DATA_AUTHZ}"

    runner = RecordingRunner()
    assert cli("build", "tokened", cwd=envprobe, runner=runner).code == 0
    test = next(c for c in runner.calls if "-c" in c.argv)
    assert test.base_env is not None and test.base_env["DATASET_LOGIN"] == "login-value-8f3a91"
    assert test.env_changes["DATA_AUTHZ"].startswith("${secret:")  # the runner reveals it
    conan = next(c for c in runner.calls if c.argv[1:2] == ["install"])
    assert conan.base_env is not None and "DATASET_LOGIN" not in conan.base_env
    configure = next(c for c in runner.calls if "-S" in c.argv)
    assert configure.base_env is not None and "DATASET_LOGIN" in configure.base_env


def test_secret_env_on_the_command_line(project: Path, cli: Cli,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``--secret-env NAME``: the steps that build and test get it when they start; the
    plan names it, never its value; unset, the build stops before anything runs."""
    monkeypatch.delenv("RUN_CREDENTIAL", raising=False)
    r = cli("build", "app", "--secret-env", "RUN_CREDENTIAL", cwd=project,
            runner=RecordingRunner())
    assert r.code == 4 and "--secret-env: RUN_CREDENTIAL" in r.err, r.out + r.err
    assert "fix: export RUN_CREDENTIAL=…" in r.err
    assert cli("build", "app", "--secret-env", "not a name", cwd=project).code == 2

    monkeypatch.setenv("RUN_CREDENTIAL", "cred-value-4d2a")
    plain = cli("plan", "app", "--format", "json", cwd=project)
    r = cli("plan", "app", "--format", "json", "--secret-env", "RUN_CREDENTIAL", cwd=project)
    assert r.code == 0 and "cred-value" not in r.out
    assert [v["key"] for v in json.loads(r.out)["variants"]] == \
        [v["key"] for v in json.loads(plain.out)["variants"]]  # not a key input
    runner = RecordingRunner()
    assert cli("build", "app", "--secret-env", "RUN_CREDENTIAL", cwd=project,
               runner=runner).code == 0
    got = {Path(c.argv[0]).name + " " + c.argv[1]: (c.base_env or {}).get("RUN_CREDENTIAL")
           for c in runner.calls}
    assert got["app tester"] == "cred-value-4d2a"  # a test
    assert got["conan install"] is None and got["conan export-pkg"] is None
    assert any(v == "cred-value-4d2a" for k, v in got.items() if k.startswith("cmake"))
