"""The one owner of a step's environment (builder.resolve.stepenv) and the runner that
starts a step with exactly that environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from builder.errors import UsageError
from builder.resolve import stepenv
from builder.util.runner import SubprocessRunner

SHELL = {"CXXFLAGS": "-DLOUD", "CPATH": "/x", "PKG_CONFIG_PATH": "/p", "CMAKE_PREFIX_PATH": "/c",
         "CONAN_HOME": "/home/u/.conan2", "LDFLAGS": "-L/x", "HOME": "/home/u",
         "CUDA_VISIBLE_DEVICES": "1", "CONAN_PASSWORD_TEAM": "s3cret", "https_proxy": "http://p"}


def base() -> tuple[tuple[str, str], ...]:
    return stepenv.variant_env(tool_paths=["/venv/bin/python", "/usr/bin/cmake",
                                           "/opt/cuda/bin/nvcc", "/venv/bin/conan"],
                               state="/w/.builder", passed=[("CXXFLAGS", "-O1")],
                               options_env=[("GLLM_ROOT", "/k")])


def test_the_base_is_the_tools_folders_the_workspace_and_what_was_passed() -> None:
    env = dict(base())
    assert env["PATH"].split(":")[:3] == ["/venv/bin", "/usr/bin", "/opt/cuda/bin"]
    assert env["PATH"].endswith("/usr/sbin:/sbin:/bin") and env["PATH"].count("/usr/bin") == 1
    assert env["HOME"] == "/w/.builder/home" and env["TMPDIR"] == "/w/.builder/tmp"
    assert env["LC_ALL"] == env["LANG"] == "C.UTF-8"
    assert env["CXXFLAGS"] == "-O1" and env["GLLM_ROOT"] == "/k"
    assert "PYTHONPATH" not in env


@pytest.mark.parametrize("kind", ["configure", "build", "conan-install", "stage", "kernel"])
def test_a_build_step_gets_nothing_of_the_shell(kind: str) -> None:
    env = stepenv.compose(base(), {"CONAN_HOME": "/w/.builder/conan"}, kind, SHELL)
    assert env == {**dict(base()), "CONAN_HOME": "/w/.builder/conan"}


def test_run_time_variables_by_kind_are_not_build_inputs() -> None:
    test = stepenv.compose(base(), {}, "test", SHELL)
    assert test["CUDA_VISIBLE_DEVICES"] == "1" and "https_proxy" not in test
    dl = stepenv.compose(base(), {}, "download", SHELL)
    assert dl["CONAN_PASSWORD_TEAM"] == "s3cret" and dl["https_proxy"] == "http://p"
    fetch = stepenv.compose(base(), {}, "fetch", SHELL)
    assert fetch["HOME"] == "/home/u"  # git's and ssh's configuration
    assert "CONAN_PASSWORD_TEAM" not in fetch


def test_pass_names_are_checked() -> None:
    assert stepenv.pass_names(["CXXFLAGS"], " CPATH, CXXFLAGS ,") == ("CPATH", "CXXFLAGS")
    for bad, said in (("A-B", "not an environment variable name"),
                      ("CONAN_PASSWORD_X", "credential"), ("PATH", "set by builder")):
        with pytest.raises(UsageError, match=said):
            stepenv.pass_names([bad], "")
    with pytest.raises(UsageError, match="BUILDER_PASS_ENV=HOME"):
        stepenv.pass_names([], "HOME")


def test_an_unset_name_is_not_passed_and_leaves_the_key() -> None:
    assert stepenv.snapshot(["CXXFLAGS", "NOPE"], {"CXXFLAGS": "-g"}) == (("CXXFLAGS", "-g"),)
    assert stepenv.key_entries([("CXXFLAGS", "-g")]) == (("--env CXXFLAGS", "-g"),)


def test_the_runner_starts_a_step_with_exactly_the_composed_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXXFLAGS", "-DLOUD")
    code = "import os, json; print(json.dumps(dict(os.environ)))"
    (tmp_path / ".builder-owned").write_text("builder\n")  # the writer's marker
    log = tmp_path / "step.log"
    res = SubprocessRunner(owner="/w").run([sys.executable, "-c", code], cwd=tmp_path,
                                           env_changes={"A": "1"}, log_path=log,
                                           timeout=60, base_env={"LC_ALL": "C.UTF-8"})
    assert res.returncode == 0
    import json

    seen = json.loads(log.read_text().splitlines()[-2])
    seen.pop("LC_CTYPE", None)  # the interpreter may coerce the C locale
    assert seen == {"LC_ALL": "C.UTF-8", "A": "1", "BUILDER_OWNER": "/w"}
    assert "# env: LC_ALL=C.UTF-8" in log.read_text()  # logged whole


def test_the_executor_reads_the_host_environment_in_one_place() -> None:
    """Only ``Executor.step_env`` (through stepenv.compose) and the fetch's own limits read
    builder's environment in builder/execute: no step can be started from it."""
    root = Path(__file__).resolve().parents[2] / "builder" / "execute"
    uses = [f"{p.name}: {line.strip()}" for p in sorted(root.glob("*.py"))
            for line in p.read_text().splitlines() if "os.environ" in line]
    assert uses == ["executor.py: step.kind, os.environ, names)",
                    "fetching.py: limits = policy.Limits.from_env(os.environ)  # one time and "
                    "size cap per fetch"], uses


def test_only_the_pythonpath_builder_runs_from_reaches_a_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from builder.cli.planning import own_pythonpath

    own = Path(__file__).resolve().parents[2]  # this checkout: builder is loaded from it
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{own}:/nonexistent")
    assert own_pythonpath() == str(own)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert own_pythonpath() == ""


def test_cuda_host_compiler_is_the_resolved_cxx() -> None:
    env = dict(stepenv.variant_env(tool_paths=[], state="/s", cxx="/usr/bin/g++-12"))
    assert env["CUDAHOSTCXX"] == "/usr/bin/g++-12"
    with pytest.raises(UsageError, match="set by builder"):
        stepenv.pass_names(["CUDAHOSTCXX"], "")
