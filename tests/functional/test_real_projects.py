"""Projects as they are: a setuptools extension built by its own setup.py, a CMake project
without usable install rules (and a patch on its path source), an xmake project — each
through builder, with every compile under the memory broker, tested, cached."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO
from tests.functional.conftest import need

pytestmark = [pytest.mark.functional]


@pytest.fixture
def rp(tmp_path: Path) -> Path:
    dst = tmp_path / "rp"
    shutil.copytree(FIXTURES / "realprojects", dst,
                    ignore=shutil.ignore_patterns(".builder", "__pycache__"))
    (dst / ".git").mkdir()  # the project root
    return dst


def builder(cwd: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "builder", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), "CI": "1"})


def jobs(project: Path, recipe: str) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for report in (project / ".builder" / "reports").glob(f"{recipe}_*build.jobs.json"):
        out += json.loads(report.read_text())["jobs"]
    return out


def only_install(project: Path, recipe: str) -> Path:
    [prefix] = [p for p in (project / ".builder" / "install" / recipe).iterdir()]
    return prefix


def test_setup_py_extension_built_by_its_own_build_under_the_broker(rp: Path) -> None:
    need("gcc")
    pytest.importorskip("setuptools")
    pytest.importorskip("pytest")
    r = builder(rp, "build", "pyext")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    # every C file went through the memory launcher and was measured
    assert sorted(str(j["file"]) for j in jobs(rp, "pyext")) == ["csrc/extra.c", "csrc/speed.c"]
    assert all(j["rc"] == 0 for j in jobs(rp, "pyext"))
    # the project's own wheel gets what a CMake recipe's gets: the manylinux repair
    [wheel] = (rp / ".builder" / "wheels").glob("cpu/*/pyext-0.2.0-cp3*-*.whl")
    if shutil.which("auditwheel") and shutil.which("patchelf"):
        assert "-manylinux" in wheel.name, wheel.name
        assert "wheel: " in out and "auditwheel" in out
    prefix = only_install(rp, "pyext")
    assert list((prefix / "pyext").glob("_speed.cpython-*.so"))
    assert "test:unit: 2 passed (pytest)" in out
    src = rp / "sources" / "pyext"  # setuptools' build/ and egg-info went to builder's folder
    assert not (src / "build").exists() and not list(src.glob("**/*.egg-info"))
    again = builder(rp, "build", "pyext")
    assert again.returncode == 0 and "nothing to do" in again.stdout, again.stdout
    # an option reaches setup.py through build.env: a new key, and the test sees it
    plan = builder(rp, "plan", "pyext", "-o", "pyext:scale=3")
    assert "env PYEXT_SCALE=3" in plan.stdout, plan.stdout
    scaled = builder(rp, "build", "pyext", "-o", "pyext:scale=3")
    assert scaled.returncode == 0, scaled.stdout + scaled.stderr
    assert len(list((rp / ".builder" / "wheels").glob("cpu/*/*.whl"))) == 2
    assert wheel.is_file()


def test_cmake_project_without_install_rules_and_a_patched_path_source(rp: Path) -> None:
    need("conan", "cmake", "ninja", "g++", "patch")
    r = builder(rp, "build", "noinst")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    prefix = only_install(rp, "noinst")
    assert (prefix / "lib" / "libnoinst.so").is_file()
    assert (prefix / "include" / "noinst" / "noinst.h").is_file()
    assert not Path("/noinst-headers").exists()  # upstream's wrong rule never ran
    # the patch went into builder's copy; the project's folder is untouched
    assert "NOINST_ANSWER 42" not in (rp / "sources/noinst/src/noinst.cpp").read_text()
    assert "test:ctest: 1 passed (ctest)" in out
    manifest = json.loads((prefix / "manifest.json").read_text())
    assert {f["path"] for f in manifest["files"]} >= {"lib/libnoinst.so",
                                                      "include/noinst/noinst.h"}


def test_a_test_step_that_ran_nothing_fails_unless_allowed(rp: Path) -> None:
    need("conan", "cmake", "ninja", "g++", "patch", "ctest")
    recipe = rp / "recipes" / "noinst.yaml"
    text = recipe.read_text()
    # enable_testing() is only in tests/: ctest on the top folder finds nothing, exits 0
    recipe.write_text(text.replace('"${build}/tests"', '"${build}"'))
    r = builder(rp, "build", "noinst")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "it ran no test (no tests (ctest))" in out and "allow_empty" in out
    recipe.write_text(text.replace('"${build}/tests"', '"${build}"').replace(
        "--output-on-failure]", "--output-on-failure]\n    allow_empty: true"))
    r = builder(rp, "build", "noinst")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "test:ctest: no tests (ctest)" in r.stdout


def test_xmake_project_with_options_under_the_broker(rp: Path) -> None:
    need("xmake", "g++")
    r = builder(rp, "build", "xdemo")
    assert r.returncode == 0, r.stdout + r.stderr
    prefix = only_install(rp, "xdemo")
    assert (prefix / "bin" / "xdemo_test").is_file()
    assert (prefix / "lib" / "libxdemo.so").is_file()
    assert (prefix / "include" / "xdemo" / "xdemo.h").is_file()
    files = {str(j["file"]) for j in jobs(rp, "xdemo")}
    assert {"src/xdemo.cpp", "tests/test_xdemo.cpp"} <= files
    src = rp / "sources" / "xdemo"  # xmake's .xmake/ and build/ are in builder's folder
    assert not (src / ".xmake").exists() and not (src / "build").exists()
    assert "--shout=y" in builder(rp, "plan", "xdemo", "-o", "xdemo:shout=true").stdout
    loud = builder(rp, "build", "xdemo", "-o", "xdemo:shout=true")
    assert loud.returncode == 0, loud.stdout + loud.stderr  # the test expects capitals


def test_python_build_frontend(rp: Path) -> None:
    need("gcc")
    pytest.importorskip("build", reason="needs the `build` package (pip install build)")
    recipe = rp / "recipes" / "pyext.yaml"
    recipe.write_text(recipe.read_text().replace("  system: python\n",
                                                 "  system: python\n  frontend: build\n"))
    plan = builder(rp, "plan", "pyext")
    assert "-m build --wheel --no-isolation" in plan.stdout, plan.stdout
    r = builder(rp, "build", "pyext")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "test:unit: 2 passed (pytest)" in r.stdout
    assert sorted(str(j["file"]) for j in jobs(rp, "pyext")) == ["csrc/extra.c", "csrc/speed.c"]
