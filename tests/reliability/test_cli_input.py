"""Command-line input is checked before anything runs, and operating-system errors are
errors naming the path and a fix, with an exit code — never a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.util.runner import RecordingRunner
from tests.conftest import CliResult
from tests.reliability.conftest import child_env


def run(cli: Callable[..., CliResult], project: Path, state: Path, *args: str) -> CliResult:
    return cli("--state-dir", str(state), *args, cwd=project, runner=RecordingRunner())


def usage(cli: Callable[..., CliResult], project: Path, state: Path, *args: str) -> str:
    with pytest.raises(SystemExit) as exc:  # argparse: exit 2 with a usage message
        run(cli, project, state, *args)
    assert exc.value.code == 2
    return ""


@pytest.mark.parametrize("size", ["1e999GiB", "-5GiB", "nanGiB", "infGiB", "0x10MiB",
                                  "99999999999999999EiB", "1 2GiB", "GiB", "1e3MiB"])
def test_absurd_sizes_are_usage_errors(project: Path, tmp_path: Path, size: str,
                                       cli: Callable[..., CliResult],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    usage(cli, project, tmp_path / "s", "plan", "greet", "--memory-budget", size)
    assert "--memory-budget" in capsys.readouterr().err


@pytest.mark.parametrize("jobs", ["-3", "99999", "two", "1.5"])
def test_bad_job_counts_never_reach_cmake(project: Path, tmp_path: Path, jobs: str,
                                          cli: Callable[..., CliResult]) -> None:
    usage(cli, project, tmp_path / "s", "build", "greet", "-j", jobs)
    assert not (tmp_path / "s" / "build").exists()


@pytest.mark.parametrize("opt", ["loud=tr\nue", "loud=a\0b", "loud=x\ry", "lo ud=1",
                                 "greet:lo;ud=1", "=1", "loud"])
def test_bad_option_text_is_refused(project: Path, tmp_path: Path, opt: str,
                                    cli: Callable[..., CliResult]) -> None:
    usage(cli, project, tmp_path / "s", "plan", "greet", "-o", opt)


def test_an_option_for_no_recipe_is_an_error(project: Path, tmp_path: Path,
                                             cli: Callable[..., CliResult]) -> None:
    r = run(cli, project, tmp_path / "s", "plan", "greet", "-o", "nosuch:opt=1")
    assert r.code == 2 and "nosuch" in r.err
    r = run(cli, project, tmp_path / "s", "plan", "app", "-o", "greet:loud=true")
    assert r.code == 0, r.err  # a required recipe is part of the build


def test_an_environment_option_with_a_newline_is_refused(project: Path, tmp_path: Path,
                                                         cli: Callable[..., CliResult],
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setenv("KERN_ROOT", "/tmp/a\nb")
    r = run(cli, project, tmp_path / "s", "plan", "kern")
    assert r.code == 2 and "KERN_ROOT" in r.err, r.err


def test_a_budget_below_the_lightest_job_says_so_before_building(
        project: Path, tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    runner = RecordingRunner()
    r = cli("--state-dir", str(tmp_path / "s"), "build", "greet", "--memory-budget", "1KiB",
            cwd=project, runner=runner)
    assert r.code == 4 and "lightest compile job" in r.err and "--memory-budget" in r.err
    assert runner.calls == []


def test_output_naming_a_folder(project: Path, tmp_path: Path,
                                cli: Callable[..., CliResult]) -> None:
    state = tmp_path / "s"
    assert run(cli, project, state, "build", "greet").code == 0
    for args in (["lock", "greet", "--output", str(tmp_path)],
                 ["report", "--output", str(tmp_path)]):
        r = run(cli, project, state, *args)
        assert r.code == 8 and f"{tmp_path}: is a folder" in r.err, r.err


def test_a_file_where_builder_expects_a_folder(project: Path, tmp_path: Path,
                                               cli: Callable[..., CliResult]) -> None:
    state = tmp_path / "s"
    assert run(cli, project, state, "plan", "greet").code == 0
    (state / "logs").write_text("a file")
    r = run(cli, project, state, "build", "greet")
    assert r.code == 8 and "logs" in r.err and "fix:" in r.err, r.err
    assert (state / "logs").read_text() == "a file"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_state_folder(project: Path, tmp_path: Path,
                                  cli: Callable[..., CliResult]) -> None:
    state = tmp_path / "s"
    assert run(cli, project, state, "plan", "greet").code == 0
    state.chmod(0o555)
    try:
        r = run(cli, project, state, "build", "greet")
        assert r.code == 8 and str(state) in r.err, r.err
    finally:
        state.chmod(0o755)


def test_ctrl_c_during_start_up_is_exit_130(project: Path, tmp_path: Path) -> None:
    """SIGINT at several moments of start-up (importing the CLI, loading recipes,
    probing): always exit 130, one line, no traceback."""
    before = signal.getsignal(signal.SIGINT)
    handled = 0
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3, 0.45, 0.6):
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "builder", "-C", str(project), "--state-dir",
                 str(tmp_path / "s"), "plan", "--all"], env=child_env(),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        finally:
            signal.signal(signal.SIGINT, before)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.02)
        proc.send_signal(signal.SIGINT)  # a second Ctrl-C while exiting
        _, err = proc.communicate(timeout=60)
        if proc.returncode == 0:
            continue  # it finished first
        if "init_import_site" in err or "Could not import runpy module" in err:
            continue  # the interpreter's own start-up, before any of builder's code
        assert proc.returncode == 130, (delay, proc.returncode, err)
        assert "Traceback" not in err and "interrupted" in err, err
        handled += 1
    assert handled >= 3


@pytest.mark.parametrize("py", ["3", "3.", "py3.12", "/usr/bin/python3", "./venv/bin/python",
                                "python3.12", "3.12.1", ""])
def test_a_python_that_is_not_a_version_is_a_usage_error(project: Path, tmp_path: Path,
                                                          py: str,
                                                          cli: Callable[..., CliResult],
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    usage(cli, project, tmp_path / "s", "build", "greet", "-p", py)
    assert "--python" in capsys.readouterr().err
    assert not (tmp_path / "s" / "build").exists()


def _py311_only(project: Path) -> None:
    text = (project / "recipes" / "greet.yaml").read_text(encoding="utf-8")
    (project / "recipes" / "greet.yaml").write_text(
        text + 'python:\n  versions: ["3.11"]\n  abi: cpython\n', encoding="utf-8")


def test_a_python_the_recipe_does_not_list_fails_the_build(project: Path, tmp_path: Path,
                                                            cli: Callable[..., CliResult]
                                                            ) -> None:
    """`-p 3.12` for a recipe that lists only 3.11 selects no variant it can build: an
    error naming the reason, not "nothing to do" with exit 0 (a CI job would pass)."""
    _py311_only(project)
    runner = RecordingRunner()
    r = cli("--state-dir", str(tmp_path / "s"), "build", "greet", "-p", "3.12", cwd=project,
            runner=runner)
    assert r.code == 4 and "Python 3.12 is not among the versions greet supports (3.11)" \
        in r.err, r.out + r.err
    assert runner.calls == []
    plan = run(cli, project, tmp_path / "s", "plan", "greet", "-p", "3.12", "--no-commands")
    assert plan.code == 0 and "[skip] cpu release py3.12" in plan.out, plan.out


def test_a_build_where_everything_is_skipped_is_an_error(project: Path, tmp_path: Path,
                                                         cli: Callable[..., CliResult]
                                                         ) -> None:
    """Even with --all and --skip-unsupported: a build that selects only skipped variants
    built nothing, and says so with exit 4 (not "0 variant(s) up to date", exit 0)."""
    _py311_only(project)
    runner = RecordingRunner()
    r = cli("--state-dir", str(tmp_path / "s"), "build", "greet", "-p", "3.12",
            "--skip-unsupported", cwd=project, runner=runner)
    assert r.code == 4 and "nothing to build: every selected variant is skipped" in r.err, \
        r.out + r.err
    assert "nothing to do" not in r.out and runner.calls == []
    r = cli("--state-dir", str(tmp_path / "s"), "build", "greetx", "-b", "macos",
            "--skip-unsupported", cwd=project, runner=runner)
    assert r.code == 4 and "macos" in r.err, r.out + r.err


@pytest.mark.parametrize("argv", [["--", "x", "--"], ["", ""], ["a b", "https://h.example"],
                                  ["--", "--help", "https://h.example"],
                                  ["--", "-r", "https://h.example"], ["x\n", "https://h"],
                                  ["x", "ftp://h.example"], ["x", "h.example"],
                                  ["x", "https://"], ["x", "http://h:port"],
                                  ["x", "https://h/a b"], ["x", ""]])
def test_a_bad_remote_is_refused_before_conan(project: Path, tmp_path: Path,
                                              argv: list[str],
                                              cli: Callable[..., CliResult]) -> None:
    """Names that Conan would read as options, empty or spaced names, non-http URLs: a
    usage error naming what a remote may be; Conan and its home are never touched."""
    state = tmp_path / "s"
    r = cli("--state-dir", str(state), "remote", "add", *argv, cwd=project)
    assert r.code == 2 and "remote" in r.err.lower() and "Traceback" not in r.err, r.err
    assert not (state / "conan").exists() and r.out == ""


@pytest.mark.parametrize("flag", ["--remote", "--conan-remote"])
def test_a_remote_flag_that_reads_as_an_option_is_refused(project: Path, tmp_path: Path,
                                                          flag: str,
                                                          cli: Callable[..., CliResult]
                                                          ) -> None:
    r = run(cli, project, tmp_path / "s", "plan", "greet", f"{flag}=--help")
    assert r.code == 2 and flag in r.err, r.err


def test_an_interrupt_that_surfaces_as_another_exception_is_the_interrupt(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C while a module is compiled (its ``\\N{...}`` escape imports unicodedata)
    surfaces as a SyntaxError: exit 130 with one line all the same.  An exception with no
    Ctrl-C before it stays what it is."""
    from builder.cli import entry

    def compiling(argv: object) -> int:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            raise SyntaxError("(unicode error) \\N escapes not supported") from None
        return 0

    def broken(argv: object) -> int:
        raise SyntaxError("a real one")

    before = signal.getsignal(signal.SIGINT)
    try:
        monkeypatch.setattr("builder.cli.main.main", compiling)
        assert entry.main([]) == 130
        assert capsys.readouterr().err.strip() == "error: interrupted"
        monkeypatch.setattr("builder.cli.main.main", broken)
        with pytest.raises(SyntaxError, match="a real one"):
            entry.main([])
    finally:
        signal.signal(signal.SIGINT, before)

