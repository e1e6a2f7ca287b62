"""A step that needs a credential from the shell that runs builder gets it — by name
(``test[].secrets``, ``build.secrets``) or composed from the environment (an ``env`` entry
``secret: true``) — in its environment only: the plan, the keys, the lockfile, the
manifests and the logs never hold the value, and every output masks it
(builder.resolve.secretenv, builder.util.secrets)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.functional.conftest import need

pytestmark = pytest.mark.functional

Cli = Callable[..., CliResult]
LOGIN, KEY = "login-value-8f3a91", "key-value-77c2e0"


def _everything(root: Path) -> str:
    """Every file builder wrote below ``root``, as text."""
    return "\n".join(p.read_text(errors="replace") for p in root.rglob("*")
                     if p.is_file() and not p.is_symlink())


def _keys(cli: Cli, project: Path) -> list[tuple[str, str]]:
    r = cli("plan", "tokened", "--format", "json", cwd=project)
    assert r.code == 0, r.out + r.err
    assert LOGIN not in r.out and KEY not in r.out and "key-value" not in r.out
    return [(v["key"], v["compile_key"]) for v in json.loads(r.out)["variants"]]


def test_a_step_gets_its_secrets_and_nothing_keeps_them(
        envprobe: Path, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need("conan", "cmake", "ninja")
    out = tmp_path / "seen.txt"
    monkeypatch.setenv("TOKENED_OUT", str(out))
    recipe = (envprobe / "recipes" / "tokened.yaml").read_text().splitlines()
    line = next(i for i, x in enumerate(recipe, 1) if "secrets: [DATASET_LOGIN]" in x)

    monkeypatch.delenv("DATASET_LOGIN", raising=False)
    monkeypatch.setenv("DATA_KEY_SRC", KEY)
    r = cli("build", "tokened", cwd=envprobe)  # one not set: said before anything runs
    assert r.code == 4, r.out + r.err
    assert f"recipes/tokened.yaml:{line}:" in r.err and "DATASET_LOGIN" in r.err, r.err
    assert "fix: export DATASET_LOGIN=…" in r.err
    assert not (envprobe / ".builder" / "logs").is_dir() or \
        not list((envprobe / ".builder" / "logs").iterdir())

    monkeypatch.setenv("DATASET_LOGIN", LOGIN)
    monkeypatch.delenv("DATA_KEY_SRC")
    r = cli("build", "tokened", cwd=envprobe)  # the env entry's variable: its line
    assert r.code == 3 and "${env.DATA_KEY_SRC} is not set" in r.err, r.out + r.err
    assert "recipes/tokened.yaml:" in r.err

    monkeypatch.setenv("DATA_KEY_SRC", KEY)
    before = _keys(cli, envprobe)
    r = cli("build", "tokened", cwd=envprobe)
    assert r.code == 0, r.out + r.err
    assert out.read_text() == f"{LOGIN}|Bearer {KEY}"  # the step saw both values
    [log] = (envprobe / ".builder" / "logs").glob("*test_fetch*.log")
    assert "login: ***" in log.read_text() and "authz: ***" in log.read_text()
    lock = tmp_path / "tokened.lock"
    assert cli("lock", "tokened", "--output", str(lock), cwd=envprobe).code == 0
    written = _everything(envprobe / ".builder") + lock.read_text() + r.out + r.err
    assert LOGIN not in written and KEY not in written

    monkeypatch.setenv("DATASET_LOGIN", "another-login-0c1d")  # a new value: no rebuild
    monkeypatch.setenv("DATA_KEY_SRC", "another-key-9e9e")
    assert _keys(cli, envprobe) == before
    again = cli("build", "tokened", cwd=envprobe)
    assert again.code == 0 and again.out.startswith("nothing to do"), again.out
