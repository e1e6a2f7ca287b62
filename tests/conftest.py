"""Shared fixtures: a throw-away copy of the fixture project, host facts files,
and a helper that runs the CLI in-process."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterator
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


@pytest.fixture(autouse=True)
def _dev_null_stays_a_device() -> Iterator[None]:
    """Every test: ``/dev/null`` is still the null device after it.  A tool that renames a
    file over an output it was given (a compiler cache's hit on ``-o /dev/null``) turns it,
    as root, into a regular file that every later program reads; the test that did it
    fails by name, and the device is made again so that the rest of the run is not
    poisoned."""
    yield
    if stat.S_ISCHR(os.lstat(os.devnull).st_mode):
        return
    if os.geteuid() == 0:
        os.remove(os.devnull)
        os.mknod(os.devnull, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.chmod(os.devnull, 0o666)
    pytest.fail(f"{os.devnull} was replaced by a regular file during this test")


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
