"""Early cutoff: a dependent is keyed by what its dependency's install holds, not by the
dependency's key (builder.resolve.keys), so a dependency rebuilt to byte-identical output
leaves its dependents as they are — real Conan + CMake + Ninja builds of the fixture's
greet (a static library) and app (which links it)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.functional.conftest import need

pytestmark = pytest.mark.functional


def _install(project: Path, recipe: str) -> tuple[Path, dict[str, object]]:
    [mf] = (project / ".builder" / "install" / recipe).glob("*/manifest.json")
    return mf.parent, json.loads(mf.read_text())


def _ran(project: Path) -> set[str]:
    record = json.loads((project / ".builder" / "last-build.json").read_text())
    return {s["id"].split("/", 1)[0] + "/" + s["id"].rsplit("/", 1)[1]
            for s in record["steps"] if s["status"] == "done"}


def test_a_dependency_rebuilt_to_identical_output_leaves_its_dependent(  # type: ignore[no-untyped-def]
        project: Path, cli) -> None:
    need("conan", "cmake", "ninja", "g++")
    r = cli("build", "app", "--memory-budget", "3GiB", cwd=project)
    assert r.code == 0, r.out + r.err
    app_dir, app = _install(project, "app")
    _, greet = _install(project, "greet")
    exe = app_dir / "bin" / "app"
    made = exe.stat().st_mtime_ns

    cpp = project / "sources" / "greet" / "src" / "greet.cpp"
    cpp.write_text("// a comment: the library it compiles to is the same\n" + cpp.read_text())
    r = cli("build", "app", "--memory-budget", "3GiB", cwd=project)
    assert r.code == 0, r.out + r.err
    _, greet2 = _install(project, "greet")
    assert greet2["key"] != greet["key"]  # greet was rebuilt ...
    assert greet2["files"] == greet["files"]  # ... to the same bytes
    assert "greet/build" in _ran(project)
    assert "app: up to date (dependency greet rebuilt, identical output)" in r.out, r.out
    app_dir2, app2 = _install(project, "app")
    assert (app_dir2, app2["key"]) == (app_dir, app["key"])
    assert exe.stat().st_mtime_ns == made  # not relinked, not republished
    again = cli("build", "app", "--memory-budget", "3GiB", cwd=project)
    assert "nothing to do" in again.out, again.out

    cpp.write_text(cpp.read_text().replace('"hello, "', '"hi, "'))  # another function body
    r = cli("build", "app", "--memory-budget", "3GiB", cwd=project)
    assert r.code == 0, r.out + r.err
    assert "app/build" in _ran(project), r.out
    assert "app: built against the new output of greet" in r.out, r.out
    assert subprocess.run([exe, "you"], capture_output=True, text=True,
                          check=True).stdout == "hi, you\n"
    assert _install(project, "app")[1]["key"] != app["key"]
