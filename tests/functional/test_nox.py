"""The noxfile, run by nox itself: the session list and skips on this host."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from builder.ci import sessions as matrix
from builder.host.probe import probe
from builder.recipe.recipeset import RecipeSet
from tests.conftest import REPO

pytestmark = pytest.mark.skipif(importlib.util.find_spec("nox") is None,
                                reason="needs nox (pip install -e '.[test]')")


def nox(*args: str, envdir: Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "NO_COLOR": "1"}
    env.pop("BUILDER_STATE_DIR", None)  # the project's own host cache, as `nox` there uses
    return subprocess.run([sys.executable, "-m", "nox", "--envdir", str(envdir), *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.fixture(scope="module")
def sessions() -> list[matrix.Session]:
    host = probe(REPO / ".builder" / "host.json")
    return matrix.sessions(RecipeSet.load(REPO / "recipes").recipes, host.default_python)


def test_nox_lists_every_session_with_a_description(tmp_path: Path,
                                                    sessions: list[matrix.Session]) -> None:
    r = nox("-l", envdir=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for s in sessions:
        line = next((x for x in lines if x[2:].startswith(f"{s.name} -> ")), None)
        assert line is not None, f"{s.name} missing from nox -l:\n{r.stdout}"
        assert s.description in line
    for name in ("tests", "lint", "typecheck"):
        assert any(x[2:].startswith(f"{name} -> ") for x in lines), name
    assert "build-cpu-3.11" in r.stdout and "build-cuda-3.11" in r.stdout


@pytest.mark.skipif(sys.platform == "darwin", reason="metal builds on macOS")
def test_metal_session_is_a_skip_with_the_reason(tmp_path: Path) -> None:
    r = nox("-s", "build-metal-3.11", envdir=tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "Session build-metal-3.11 skipped: metal: needs a macOS host with xcrun" in out
    assert "successful" not in out


def test_unknown_session_names_what_is_wrong(tmp_path: Path) -> None:
    r = nox("-s", "build-vulkan-3.11", envdir=tmp_path)
    assert r.returncode != 0
    assert "build-vulkan-3.11: unknown backend 'vulkan'" in r.stderr


def test_unknown_recipe_in_posargs_fails_clearly(tmp_path: Path,
                                                 sessions: list[matrix.Session]) -> None:
    host = probe(REPO / ".builder" / "host.json")
    runnable = [s for s in sessions if matrix.session_unavailable(s, host) is None]
    if not runnable:
        pytest.skip("no build session can run on this host")
    s = runnable[0]
    r = nox("-s", s.name, "--", "no-such-recipe", envdir=tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "unknown recipe 'no-such-recipe'" in out


@pytest.mark.functional
@pytest.mark.slow
def test_build_session_sees_the_packages_builder_checked(tmp_path: Path) -> None:
    """`nox -s build-cpu-3.11 -- llaisys` from a venv: the session's venv must see the venv's
    torch (the base interpreter's may lack it), then its tests pass against the wheel."""
    host = probe(REPO / ".builder" / "host.json")
    py = host.python("3.11")
    if py is None or py.package("torch") is None or py.package("numpy") is None:
        pytest.skip("needs Python 3.11 with torch and numpy (pip install -e '.[examples]')")
    state = tmp_path / "state"
    r = nox("-s", "build-cpu-3.11", "--", "llaisys", "--state-dir", str(state),
            envdir=tmp_path / "nox", timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "Session build-cpu-3.11 was successful" in out
    where = str(Path(py.path).parent.parent) if sys.prefix != sys.base_prefix else ""
    line = next(x for x in out.splitlines() if "as builder checked them" in x)
    assert "torch " in line and "numpy " in line
    if where:  # nox runs from a venv: torch comes from that venv, not the base interpreter
        assert f"the session sees the packages of {py.path}" in out
        assert f"({where}/lib/" in line
    assert "passed" in out and "against the installed wheel" in out
