""""Nothing to do" for pip and xmake builds is decided by what the build really read
(builder.source.launched: the launcher's depfiles, the Python processes' reads, the
files the install copies): real builds of copies of the bundled vecmath (pip +
scikit-build-core + CMake) and xops (xmake) recipes, and of vecmath from a patched copy."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from builder.util.runner import RecordingRunner
from tests.conftest import REPO
from tests.functional.conftest import need

pytestmark = pytest.mark.functional


def _project(tmp_path: Path, recipe: str, source: str) -> Path:
    """A copy of a bundled recipe without its tests (they read the whole source folder,
    as a test may), and of its source folder, with a sibling folder of shared headers."""
    root = tmp_path / "p"
    (root / ".git").mkdir(parents=True)
    shutil.copytree(REPO / "sources" / source, root / "sources" / source,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    (root / "sources" / "common").mkdir()
    (root / "sources" / "common" / "extra.h").write_text("#define EXTRA 1\n")
    (root / "sources" / source / "NOTES.md").write_text("read by nobody\n")
    text = (REPO / "recipes" / f"{recipe}.yaml").read_text()
    text = text[:text.index("\ntest:")] + "\n"
    (root / "recipes").mkdir()
    (root / "recipes" / f"{recipe}.yaml").write_text(text)
    return root


def _install(root: Path, recipe: str) -> dict[str, object]:
    [mf] = (root / ".builder" / "install" / recipe).glob("*/manifest.json")
    data: dict[str, object] = json.loads(mf.read_text())
    data["_dir"] = str(mf.parent)
    return data


def _ran(root: Path) -> set[str]:
    record = json.loads((root / ".builder" / "last-build.json").read_text())
    return {s["id"].rsplit("/", 1)[1] for s in record["steps"] if s["status"] == "done"}


def _vecmath(tmp_path: Path, patched: bool = False) -> Path:
    root = _project(tmp_path, "vecmath", "vecmath")
    src = root / "sources" / "vecmath"
    if not patched:  # builder's copy of a patched folder has no sibling folders
        # a header outside the source folder, reached only through the compile
        cml = src / "CMakeLists.txt"
        cml.write_text(cml.read_text().replace(
            "target_include_directories(vecmath_core PUBLIC core)",
            "target_include_directories(vecmath_core PUBLIC core "
            "${CMAKE_CURRENT_SOURCE_DIR}/../common)"))
        dot = src / "core" / "dot.cpp"
        dot.write_text('#include "extra.h"\n' + dot.read_text())
    # a README the build reads: the project's long description
    (src / "README.md").write_text("vecmath, first words\n")
    py = src / "pyproject.toml"
    py.write_text(py.read_text().replace('requires-python = ">=3.9"',
                                         'requires-python = ">=3.9"\nreadme = "README.md"'))
    if patched:
        (root / "sources" / "vm.patch").write_text(
            "--- a/src/vecmath/__init__.py\n+++ b/src/vecmath/__init__.py\n@@ -1 +1,2 @@\n"
            f" {(src / 'src' / 'vecmath' / '__init__.py').read_text().splitlines()[0]}\n"
            "+PATCHED = True\n")
        recipe = root / "recipes" / "vecmath.yaml"
        recipe.write_text(recipe.read_text().replace(
            "  path: ../sources/vecmath\n",
            "  path: ../sources/vecmath\n  patches: [../sources/vm.patch]\n"))
    return root


def _need_python_build() -> None:
    need("cmake", "ninja", "g++")
    pytest.importorskip("scikit_build_core", reason="vecmath builds with scikit-build-core")


@pytest.mark.parametrize("patched", [False, True], ids=["in-place", "patched-copy"])
def test_a_python_build_keys_what_it_read(tmp_path: Path, cli, patched: bool) -> None:  # type: ignore[no-untyped-def]
    _need_python_build()
    root = _vecmath(tmp_path, patched)
    src = root / "sources" / "vecmath"
    r = cli("build", "vecmath", cwd=root)
    assert r.code == 0, r.out + r.err
    first = _install(root, "vecmath")
    assert first.get("record"), "the install has no record of what its build read"
    inst = Path(str(first["_dir"]))
    if patched:
        assert "PATCHED = True" in (inst / "vecmath" / "__init__.py").read_text()
        recorded = [i[0] for i in first["record"]["inputs"]]  # type: ignore[index]
        assert str(src / "src" / "vecmath" / "__init__.py") in recorded  # the user's file

    # (a) a file nothing reads: nothing to do — no compile, the same install and the same
    # wheel (its packaging key is the compile key and its settings)
    notes = src / "NOTES.md"
    notes.write_text("still read by nobody\n")
    r = cli("build", "vecmath", cwd=root)
    assert r.code == 0, r.out + r.err
    assert r.out.startswith("nothing to do"), r.out
    assert _install(root, "vecmath")["key"] == first["key"]

    # (b) a header reached only through the compile: outside the source folder, or (a
    # patched copy) in it
    header = src / "core" / "vecmath.h" if patched else root / "sources" / "common" / "extra.h"
    header.write_text(header.read_text() + "#define EXTRA 2\n")
    r = cli("build", "vecmath", cwd=root)
    assert r.code == 0, r.out + r.err
    assert "build" in _ran(root), r.out
    second = _install(root, "vecmath")
    assert second["key"] != first["key"]

    # (c) the README the build reads as the long description
    (src / "README.md").write_text("vecmath, new words\n")
    r = cli("build", "vecmath", cwd=root)
    assert r.code == 0 and "build" in _ran(root), r.out + r.err
    [meta] = Path(str(_install(root, "vecmath")["_dir"])).glob("*.dist-info/METADATA")
    assert "vecmath, new words" in meta.read_text()

    # (d) a Python file the wheel holds a copy of
    init = src / "src" / "vecmath" / "__init__.py"
    init.write_text(init.read_text() + "EDITED = 1\n")
    r = cli("build", "vecmath", cwd=root)
    assert r.code == 0 and "build" in _ran(root), r.out + r.err
    inst = Path(str(_install(root, "vecmath")["_dir"]))
    assert "EDITED = 1" in (inst / "vecmath" / "__init__.py").read_text()


def _xops(tmp_path: Path) -> Path:
    root = _project(tmp_path, "xops", "xops")
    recipe = root / "recipes" / "xops.yaml"
    text = recipe.read_text()
    recipe.write_text(re.sub(r"\npython:\n(  .*\n)+", "\n", text))  # no wheel either
    src = root / "sources" / "xops"
    lua = src / "xmake.lua"
    lua.write_text(lua.read_text().replace('add_includedirs("include")',
                                           'add_includedirs("include", "../common")'))
    cpu = src / "src" / "cpu" / "ops_cpu.cpp"
    cpu.write_text('#include "extra.h"\n' + cpu.read_text())
    return root


def test_an_xmake_build_keys_what_it_read(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("xmake", "g++")
    root = _xops(tmp_path)
    src = root / "sources" / "xops"
    args = ("build", "xops", "--backend", "cpu")
    r = cli(*args, cwd=root)
    assert r.code == 0, r.out + r.err
    first = _install(root, "xops")
    assert first.get("record"), "the install has no record of what its build read"

    (src / "NOTES.md").write_text("still read by nobody\n")  # (a)
    recorder = RecordingRunner()
    r = cli(*args, cwd=root, runner=recorder)
    assert r.code == 0 and recorder.calls == [] and "nothing to do" in r.out, r.out

    edits = [(root / "sources" / "common" / "extra.h", "#define EXTRA 2\n"),  # (b)
             (src / "xmake.lua", None),  # the build script
             (src / "include" / "xops" / "xops.h", None),  # a header the install copies
             (src / "python" / "xops" / "__init__.py", None)]  # a file install.files copies
    for path, text in edits:
        path.write_text(text if text is not None else path.read_text() + "\n-- edited\n"
                        if path.suffix == ".lua" else path.read_text() + "\n# edited\n"
                        if path.suffix == ".py" else path.read_text() + "\n// edited\n")
        r = cli(*args, cwd=root)
        assert r.code == 0, r.out + r.err
        assert "nothing to do" not in r.out, (path, r.out)
        assert _install(root, "xops")["key"] != first["key"]
        first = _install(root, "xops")
