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


#: a test still running after this many seconds has hung (the longest take about 2 minutes
#: on 2 cores): with pytest-timeout (the `test` extra) it fails with every thread's stack and
#: the suite goes on.  Set per test here, not in pyproject.toml, where a pytest without the
#: plugin (the GPU machine's, the example projects' test steps) would stop at the unknown key.
HUNG = 600


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("timeout"):
        return
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(HUNG))


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


@pytest.fixture
def envprobe(tmp_path: Path) -> Path:
    """A private copy of tests/fixtures/envprobe (a recipe whose steps print their
    environment)."""
    dst = tmp_path / "envprobe"
    shutil.copytree(FIXTURES / "envprobe", dst,
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
