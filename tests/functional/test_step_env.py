"""A step runs with the environment builder composes (builder.resolve.stepenv), never the
shell's: ``CXXFLAGS``, ``CPATH`` and ``PKG_CONFIG_PATH`` left in the shell cannot reach a
compile, and a variable passed on purpose (``--env``, ``BUILDER_PASS_ENV``) reaches it and
is part of the key."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.functional.conftest import need

pytestmark = pytest.mark.functional

Cli = Callable[..., CliResult]


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's shell: build variables that must not reach a step unless passed."""
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "envprobe_cpath.h").write_text("#define ENVPROBE_CPATH 1\n")
    monkeypatch.setenv("CXXFLAGS", "-DLOUD")
    monkeypatch.setenv("CPATH", str(inc))
    monkeypatch.setenv("PKG_CONFIG_PATH", str(tmp_path / "envprobe-pkgconfig"))
    monkeypatch.delenv("BUILDER_PASS_ENV", raising=False)
    return inc


def _plan(cli: Cli, project: Path, *args: str) -> dict:  # type: ignore[type-arg]
    r = cli("plan", "shout", "--format", "json", *args, cwd=project)
    assert r.code == 0, r.out + r.err
    return json.loads(r.out)  # type: ignore[no-any-return]


def _says(plan: dict) -> str:  # type: ignore[type-arg]
    """What the installed program of the plan's variant prints."""
    [v] = plan["variants"]
    return subprocess.run([str(Path(v["prefix"]) / "bin" / "shout")], capture_output=True,
                          text=True, check=True).stdout


def test_shell_build_variables_do_not_reach_a_step(envprobe: Path, shell: Path,
                                                   cli: Cli) -> None:
    need("conan", "cmake", "ninja", "g++")
    r = cli("build", "shout", "--memory-budget", "3GiB", cwd=envprobe)
    assert r.code == 0, r.out + r.err
    assert _says(_plan(cli, envprobe)) == "shout: quiet\n"
    logs = envprobe / ".builder" / "logs"
    for log in (*logs.glob("*configure*.log"), *logs.glob("*build*.log")):
        text = log.read_text()
        assert "# env: PATH=" in text, log  # the log shows the whole environment…
        for leak in ("CXXFLAGS", "CPATH", str(shell), "envprobe-pkgconfig"):
            assert leak not in text, (log, leak)  # …and none of the shell's variables


def test_a_passed_variable_reaches_the_step_and_the_key(envprobe: Path, shell: Path,
                                                        cli: Cli,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    need("conan", "cmake", "ninja", "g++")
    quiet = _plan(cli, envprobe)
    assert cli("build", "shout", cwd=envprobe).code == 0
    loud = _plan(cli, envprobe, "--env", "CXXFLAGS")
    assert loud["variants"][0]["compile_key"] != quiet["variants"][0]["compile_key"]
    assert ["CXXFLAGS", "-DLOUD"] in loud["variants"][0]["env"]  # the plan shows it
    r = cli("build", "shout", "--env", "CXXFLAGS", cwd=envprobe)
    assert r.code == 0 and "nothing to do" not in r.out, r.out + r.err
    assert _says(loud) == "shout: LOUD\n"
    # the host setting passes it the same way
    monkeypatch.setenv("BUILDER_PASS_ENV", "CXXFLAGS")
    assert _plan(cli, envprobe)["variants"][0]["compile_key"] == \
        loud["variants"][0]["compile_key"]
    # unset in the shell: not passed, the key is the plain one again and its program quiet
    monkeypatch.delenv("CXXFLAGS")
    again = _plan(cli, envprobe, "--env", "CXXFLAGS")
    assert again["variants"][0]["compile_key"] == quiet["variants"][0]["compile_key"]
    assert cli("build", "shout", "--env", "CXXFLAGS", cwd=envprobe).code == 0
    assert _says(again) == "shout: quiet\n"


def test_plan_text_shows_the_environment(envprobe: Path, shell: Path, cli: Cli) -> None:
    r = cli("plan", "shout", "--env", "CPATH", cwd=envprobe)
    assert r.code == 0, r.out + r.err
    assert "environment of every step" in r.out
    assert f"CPATH={shell}" in r.out and "LC_ALL=C.UTF-8" in r.out
    assert "CXXFLAGS" not in r.out  # not passed: not shown, not used
