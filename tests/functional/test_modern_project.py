"""A CMake project like the real ones of issue 22 (tests/fixtures/modern: C++20 with
std::source_location, unity forced in its own CMakeLists, its own CMAKE_CXX_FLAGS), built
for real with Conan, CMake, Ninja and g++ — small and fast, no torch."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.functional.conftest import need

pytestmark = pytest.mark.functional

OOM_ONCE = """#!/bin/sh
# g++, except that the first compile of a first unity file "is killed" the way g++
# reports a cc1plus killed by the kernel (exit status 1, not 137); mkdir is atomic: of
# two unity_0 files compiled at once, one only
case "$*" in
  *unity_0_cxx.cxx*)
    if mkdir {mark} 2>/dev/null; then
      echo "g++: fatal error: Killed signal terminated program cc1plus" >&2
      exit 1
    fi;;
esac
exec {gxx} "$@"
"""


@pytest.fixture
def modern(tmp_path: Path) -> Path:
    dst = tmp_path / "modern"
    shutil.copytree(FIXTURES / "modern", dst,
                    ignore=shutil.ignore_patterns(".builder", "__pycache__"))
    return dst


def _installed(project: Path) -> list[Path]:
    return sorted((project / ".builder" / "install" / "modern").glob("*/manifest.json"))


def test_cxx20_project_with_forced_unity_builds_and_its_test_runs(modern: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++")
    r = cli("build", "modern", cwd=modern)
    assert r.code == 0, r.out + r.err
    [manifest] = _installed(modern)
    out = subprocess.run([manifest.parent / "bin" / "modern_where"], capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith("modern 3 int main()")  # std::source_location at work
    [report] = (modern / ".builder" / "reports").glob("*build.jobs.json")
    jobs = json.loads(report.read_text())["jobs"]
    files = sorted(str(j["file"]) for j in jobs if j["kind"] == "compile")
    # the project's own unity build: two batches of the library, one of the test program
    assert len(files) == 3 and all("/Unity/unity_" in f for f in files), files
    # and the program's link, scheduled by the broker too (the library is static)
    assert [Path(j["file"]).name for j in jobs if j["kind"] == "link"] == ["modern_where"]


def test_a_recipe_standard_below_the_projects_fails_as_reported(modern: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """What builder used to force on every project: C++17 after the project's -std=c++20."""
    need("conan", "cmake", "ninja", "g++")
    recipe = modern / "recipes" / "modern.yaml"
    recipe.write_text(recipe.read_text().replace("source:\n",
                                                 "build:\n  cxx_standard: 17\nsource:\n", 1))
    r = cli("build", "modern", cwd=modern)
    assert r.code == 1
    log = next((modern / ".builder" / "logs").glob("*build.log")).read_text()
    assert "source_location" in log and "-std=c++17" in log


def test_an_oom_kill_and_its_retry_are_in_the_summary(modern: Path, cli, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    need("conan", "cmake", "ninja", "g++")
    wrapper = tmp_path / "bin" / "g++"
    wrapper.parent.mkdir()
    wrapper.write_text(OOM_ONCE.format(mark=tmp_path / "killed-once",
                                       gxx=shutil.which("g++")))
    wrapper.chmod(0o755)
    monkeypatch.setenv("CXX", str(wrapper))
    r = cli("build", "modern", cwd=modern)
    assert r.code == 0, r.out + r.err
    assert "1 compile(s) killed out of memory" in r.out
    [line] = [x for x in r.out.splitlines() if x.startswith("out of memory: ")]
    assert "unity_0_cxx.cxx was killed out of memory" in line
    assert "retried alone with the low-memory flags: succeeded" in line
    record = json.loads((modern / ".builder" / "last-build.json").read_text())
    assert record["summary"]["oom"] == [line.removeprefix("out of memory: ")]


def _job_sources(project: Path) -> list[tuple[str, str]]:
    reports = sorted((project / ".builder" / "reports").glob("*build.jobs.json"),
                     key=lambda p: p.stat().st_mtime)
    return [(str(j["kind"]), str(j["source"]))
            for j in json.loads(reports[-1].read_text())["jobs"]]


def test_measured_history_survives_a_move_and_an_edit(modern: Path, cli,  # type: ignore[no-untyped-def]
                                                      tmp_path: Path) -> None:
    """Every unity TU's estimate, and the link's, comes from its measurement after the
    project moved (its build folder with it) and a header all of them include changed:
    history is keyed by what determines a compile, not by absolute paths, and a link's key
    does not depend on the output an earlier build left."""
    need("conan", "cmake", "ninja", "g++")
    assert cli("build", "modern", cwd=modern).code == 0
    first = _job_sources(modern)
    assert len(first) == 4 and not any(s.startswith("history") for _, s in first), first
    moved = tmp_path / "elsewhere" / "modern2"
    shutil.move(str(modern), str(moved))
    header = moved / "sources" / "modern" / "include" / "modern" / "where.h"
    header.write_text(header.read_text() + "\n// edited after the move\n")
    r = cli("build", "modern", cwd=moved)
    assert r.code == 0, r.out + r.err
    assert sorted(_job_sources(moved)) == [("compile", "history")] * 3 + [("link", "history")]
    out = subprocess.run([next(moved.glob(".builder/install/**/bin/modern_where"))],
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith("modern 3 int main()")
