""""Nothing to do" is decided by what the build really read (builder.source.inputs) and by
the toolchain's content (builder.host.identity): real Conan + CMake + Ninja builds of the
fixture recipes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from builder.util.runner import RecordingRunner
from tests.functional.conftest import need

pytestmark = pytest.mark.functional


def _manifest(project: Path, recipe: str) -> dict[str, object]:
    """The newest install's manifest (a dependency's new key is a new install folder)."""
    mf = max((project / ".builder" / "install" / recipe).glob("*/manifest.json"),
             key=lambda p: p.stat().st_mtime_ns)
    data: dict[str, object] = json.loads(mf.read_text())
    data["_dir"] = str(mf.parent)
    return data


def _ran(project: Path) -> dict[str, str]:
    record = json.loads((project / ".builder" / "last-build.json").read_text())
    return {s["id"]: s["status"] for s in record["steps"]}


def _sibling_header(project: Path) -> Path:
    """greet includes a header of a sibling folder through include_directories(../common)."""
    common = project / "sources" / "common"
    common.mkdir()
    header = common / "punct.h"
    header.write_text('#define GREET_PUNCT ""\n')
    greet = project / "sources" / "greet"
    cml = greet / "CMakeLists.txt"
    cml.write_text(cml.read_text().replace(
        "add_library(greet src/greet.cpp)",
        "include_directories(../common)\nadd_library(greet src/greet.cpp)"))
    cpp = greet / "src" / "greet.cpp"
    text = cpp.read_text()
    assert '"hello, "' in text
    cpp.write_text('#include "punct.h"\n' + text.replace('"hello, "', '"hello" GREET_PUNCT " "'))
    return header


def test_a_header_in_a_sibling_folder_is_an_input(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++")
    header = _sibling_header(project)
    r = cli("build", "app", cwd=project)
    assert r.code == 0, r.out + r.err
    exe = Path(str(_manifest(project, "app")["_dir"])) / "bin" / "app"
    assert subprocess.run([exe, "you"], capture_output=True, text=True,
                          check=True).stdout == "hello you\n"

    header.write_text('#define GREET_PUNCT ","\n')
    r2 = cli("build", "app", cwd=project)
    assert r2.code == 0, r2.out + r2.err
    assert "nothing to do" not in r2.out
    exe = Path(str(_manifest(project, "app")["_dir"])) / "bin" / "app"
    assert subprocess.run([exe, "you"], capture_output=True, text=True,
                          check=True).stdout == "hello, you\n"
    recorded = [i[0] for i in _manifest(project, "greet")["record"]["inputs"]]  # type: ignore[index]
    assert str(header) in recorded
    # and now it is up to date
    recorder = RecordingRunner()
    r3 = cli("build", "app", cwd=project, runner=recorder)
    assert r3.code == 0 and recorder.calls == [] and "nothing to do" in r3.out, r3.out


def test_a_readme_edit_rebuilds_nothing(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A file that nothing reads (greet has no tests): editing it leaves greet and its
    dependent app up to date; a new file in the tree, or an edited source, does not."""
    need("conan", "cmake", "ninja", "g++")
    readme = project / "sources" / "greet" / "README.md"
    readme.write_text("greet\n")
    assert cli("build", "app", cwd=project).code == 0
    keys = (_manifest(project, "greet")["key"], _manifest(project, "app")["key"])

    readme.write_text("greet: says hello\n")
    recorder = RecordingRunner()
    r = cli("build", "app", cwd=project, runner=recorder)
    assert r.code == 0 and recorder.calls == [] and "nothing to do" in r.out, r.out
    assert (_manifest(project, "greet")["key"], _manifest(project, "app")["key"]) == keys

    # an edited source rebuilds, incrementally in the same build folder
    build_dir = Path(str(_manifest(project, "greet")["_dir"]).replace("/install/", "/build/"))
    assert build_dir.is_dir()
    cpp = project / "sources" / "greet" / "src" / "greet.cpp"
    cpp.write_text(cpp.read_text().replace('"hello, "', '"hi, "'))
    r2 = cli("build", "app", cwd=project)
    assert r2.code == 0, r2.out + r2.err
    ran = _ran(project)
    assert any(k.startswith("greet/") and k.endswith("/build") and st == "done"
               for k, st in ran.items()), ran
    assert build_dir.is_dir()  # the same folder: an incremental rebuild
    exe = Path(str(_manifest(project, "app")["_dir"])) / "bin" / "app"
    assert subprocess.run([exe, "you"], capture_output=True, text=True,
                          check=True).stdout == "hi, you\n"


def test_a_test_data_edit_reruns_tests_only(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++")
    data = project / "sources" / "app" / "testdata.txt"
    data.write_text("one\n")
    assert cli("build", "app", cwd=project).code == 0
    data.write_text("two\n")
    r = cli("build", "app", cwd=project)
    assert r.code == 0, r.out + r.err
    done = sorted(k.rsplit("/", 1)[1] for k, st in _ran(project).items() if st == "done")
    assert done == ["test:run"], _ran(project)
