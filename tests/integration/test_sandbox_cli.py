"""``--sandbox`` without bubblewrap is a plan error (exit 4) that says how to install it,
before anything runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from builder.util.runner import RecordingRunner
from tests.conftest import CliResult


def test_sandbox_without_bwrap_says_how_to_install_it(project: Path, tmp_path: Path,
                                                      cli: Callable[..., CliResult],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    runner = RecordingRunner()
    r = cli("build", "greet", "--sandbox", cwd=project, runner=runner)
    assert r.code == 4, r.out + r.err
    assert "bubblewrap" in r.err and "apt-get install -y bubblewrap" in r.err
    assert runner.calls == [] and not (project / ".builder" / "build").exists()
