"""A CMake build of builder's copy of a local folder (patched, some of it excluded) is keyed
by what it read, as a build of the folder itself: the copy stays where it is and only what
differs is rewritten, so the build folder follows it — an edit nothing reads rebuilds
nothing, and a source edit recompiles that source alone.  Real Conan, CMake, Ninja, g++
and patch."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.functional.conftest import need

pytestmark = pytest.mark.functional

PATCH = """\
--- a/src/greet.cpp
+++ b/src/greet.cpp
@@ -1,3 +1,4 @@
+// patched by the recipe
 #include "greet/greet.h"
 namespace greet {
 std::string hello(const std::string& who) {
"""


def _ninja_log(state: Path, recipe: str) -> list[str]:
    """The entries of the ninja log of ``recipe``'s only build folder (appended to by
    every ninja run: start, end, mtime, output, hash)."""
    [log] = (state / "build" / recipe).glob("*/cmake/.ninja_log")
    return log.read_text().splitlines()[1:]


def test_a_patched_copy_is_built_incrementally_and_keyed_by_what_it_read(
        project: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++", "patch")
    greet = project / "sources" / "greet"
    (greet / "src" / "other.cpp").write_text('#include "greet/greet.h"\n'
                                             'int other() { return 1; }\n')
    cmake = greet / "CMakeLists.txt"
    cmake.write_text(cmake.read_text().replace("add_library(greet src/greet.cpp)",
                                               "add_library(greet src/greet.cpp src/other.cpp)"))
    (greet / "README.md").write_text("greet\n")
    (greet / "docs").mkdir()
    (greet / "docs" / "notes.txt").write_text("one\n")
    (project / "recipes" / "greet.patch").write_text(PATCH)
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text().replace(
        "source:\n  path: ../sources/greet\n",
        "source:\n  path: ../sources/greet\n  patches: [greet.patch]\n  exclude: [docs]\n"))
    state = tmp_path / "state"

    def build() -> str:
        r = cli("--state-dir", str(state), "build", "app", cwd=project)
        assert r.code == 0, r.out + r.err
        return r.out

    def app() -> str:
        [manifest] = (state / "install" / "app").glob("*/manifest.json")
        exe = manifest.parent / "bin" / "app"
        return subprocess.run([exe, "you"], capture_output=True, text=True,
                              check=True).stdout

    build()
    assert app() == "hello, you\n"
    [copy] = (state / "sources").iterdir()
    assert (copy / "src" / "greet.cpp").read_text().startswith("// patched by the recipe")
    assert not (copy / "docs").exists()
    [greet_install] = (state / "install" / "greet").glob("*/manifest.json")
    assert json.loads(greet_install.read_text()).get("record"), "no record was taken"

    # nothing the build reads: nothing to do, for greet and for app
    (greet / "README.md").write_text("greet, edited\n")
    (greet / "docs" / "notes.txt").write_text("two\n")  # excluded
    assert build().startswith("nothing to do")

    # one source edited: the same copy and build folder, that source alone recompiled
    src = greet / "src" / "greet.cpp"
    src.write_text(src.read_text().replace('"hello, "', '"hi, "'))
    before = _ninja_log(state, "greet")
    build()
    assert [p.name for p in (state / "sources").iterdir()] == [copy.name]
    ran = [Path(line.split("\t")[3]).name for line in _ninja_log(state, "greet")[len(before):]]
    assert sorted(o for o in ran if o.endswith(".o")) == ["greet.cpp.o"]
    assert app() == "hi, you\n"
    assert build().startswith("nothing to do")

    # a file removed from the folder is removed from the copy too
    (greet / "README.md").unlink()
    build()
    assert not (copy / "README.md").exists()
    shutil.rmtree(state / "install" / "app")  # a dependent made again from the same greet
    build()
    assert app() == "hi, you\n"
