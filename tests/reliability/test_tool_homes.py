"""builder never touches another tool's home: probing conan (``builder host``, any
plan) neither creates nor migrates the user's ``~/.conan2``."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult


@pytest.mark.parametrize("existing", [False, True])
def test_builder_host_leaves_the_users_conan_home_alone(
        project: Path, tmp_path: Path, existing: bool, monkeypatch: pytest.MonkeyPatch,
        cli: Callable[..., CliResult]) -> None:
    if shutil.which("conan") is None and not (Path(sys.executable).parent / "conan").exists():
        pytest.skip("needs conan (on PATH or next to the interpreter; CI installs it)")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CONAN_HOME", raising=False)
    if existing:
        (home / ".conan2").mkdir()
        (home / ".conan2" / "version.txt").write_text("2.0.0")
    before = sorted(p.relative_to(home).as_posix() for p in home.rglob("*"))
    r = cli("host", cwd=project)
    assert r.code == 0, r.out + r.err
    assert "conan" in r.out
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == before
    if existing:
        assert (home / ".conan2" / "version.txt").read_text() == "2.0.0"
