"""Shared fixtures: a throw-away copy of the fixture project, host facts files,
and a helper that runs the CLI in-process."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from builder.cli.main import main
from builder.host.facts import HostFacts, load_host_facts
from builder.util.runner import Runner

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true",
                     help="rewrite tests/golden/* from the current behaviour")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A private copy of tests/fixtures/project (recipes + sources)."""
    dst = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", dst,
                    ignore=shutil.ignore_patterns(".builder", "__pycache__"))
    return dst


def host(name: str) -> HostFacts:
    return load_host_facts(FIXTURES / "hosts" / f"{name}.json")


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
        ) -> Callable[..., CliResult]:
    def run(*args: str, cwd: Path, runner: Runner | None = None) -> CliResult:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = main(list(args), runner=runner)
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    return run
