"""The launcher's depfiles (builder.memory.depfiles): which compile gets which depfile
arguments, argv in → argv out, and what lands in the folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from builder.memory.depfiles import SINCE, compiler_of, finish, start, with_depfile
from builder.util import writer

F = "/deps"


def test_a_plain_compile_gets_md_mf_into_the_folder() -> None:
    dep = with_depfile(["/usr/bin/g++", "-O2", "-c", "a.cpp", "-o", "a.o"], F, "/b")
    assert dep is not None and not dep.own and not dep.unknown
    assert dep.argv == ("/usr/bin/g++", "-O2", "-c", "a.cpp", "-o", "a.o", "-MD", "-MF",
                        f"{F}/{dep.name}.d")


def test_through_a_compiler_cache_and_for_nvcc() -> None:
    dep = with_depfile(["sccache", "/usr/bin/c++", "-c", "x.cc", "-o", "x.o"], F, "/b")
    assert dep is not None and dep.argv[-3:] == ("-MD", "-MF", f"{F}/{dep.name}.d")
    assert dep.argv[:2] == ("sccache", "/usr/bin/c++")
    nv = with_depfile(["/usr/local/cuda/bin/nvcc", "-c", "k.cu", "-o", "k.o"], F, "/b")
    assert nv is not None and nv.argv[-3:-1] == ("-MD", "-MF")


def test_a_compile_with_its_own_depfile_keeps_it_and_is_copied() -> None:
    dep = with_depfile(["g++", "-MMD", "-MF", "out/a.o.d", "-c", "a.cpp", "-o", "out/a.o"],
                       F, "/b")
    assert dep is not None and dep.own == "out/a.o.d"
    # -MMD leaves system headers out: they are inputs too
    assert dep.argv == ("g++", "-MD", "-MF", "out/a.o.d", "-c", "a.cpp", "-o", "out/a.o")
    joined = with_depfile(["gcc", "-MD", "-MFa.d", "-c", "a.c"], F, "/b")
    assert joined is not None and joined.own == "a.d"
    nvcc = with_depfile(["nvcc", "--generate-nonsystem-dependencies-with-compile",
                         "--dependency-output", "k.o.d", "-c", "k.cu", "-o", "k.o"], F, "/b")
    assert nvcc is not None and nvcc.own == "k.o.d"
    assert "--generate-dependencies-with-compile" in nvcc.argv
    # -MD with -o and no -MF: gcc writes it next to the object
    beside = with_depfile(["gcc", "-MD", "-c", "a.c", "-o", "obj/a.o"], F, "/b")
    assert beside is not None and beside.own == "obj/a.d"


def test_what_is_no_compile_is_left_alone() -> None:
    for argv in (["g++", "a.o", "-o", "app"],  # a link
                 ["g++", "-E", "-c", "a.cpp"],  # a compiler cache's preprocessing
                 ["g++", "-M", "a.cpp"], ["g++", "--version"],
                 ["/usr/bin/ld", "-c", "x"], ["python3", "-c", "print(1)"],
                 # xmake's flag probe: its output is dropped
                 ["nvcc", "-MD", "-MF", "/dev/null", "-c", "-o", "/dev/null", "t.cu"]):
        assert with_depfile(argv, F, "/b") is None, argv


def test_several_sources_cannot_be_named_one_depfile() -> None:
    dep = with_depfile(["gcc", "-c", "a.c", "b.c"], F, "/b")
    assert dep is not None and dep.unknown and dep.argv == ("gcc", "-c", "a.c", "b.c")
    md = with_depfile(["nvcc", "-MD", "-c", "k.cu"], F, "/b")
    assert md is not None and md.unknown


def test_names_follow_the_object() -> None:
    """A recompile of the same object replaces its depfile; another object has its own."""
    a = with_depfile(["g++", "-c", "a.cpp", "-o", "a.o"], F, "/b")
    again = with_depfile(["g++", "-O0", "-c", "a.cpp", "-o", "a.o"], F, "/b")
    other = with_depfile(["g++", "-c", "a.cpp", "-o", "a.o"], F, "/elsewhere")
    assert a and again and other and a.name == again.name != other.name


def test_compiler_names() -> None:
    assert compiler_of(["/usr/bin/x86_64-linux-gnu-g++-12"]) == "g++"
    assert compiler_of(["ccache", "clang++-18"]) == "clang++"
    assert compiler_of(["hipcc"]) == "hipcc"
    assert compiler_of(["ninja"]) == "" and compiler_of(["ccache"]) == ""


def _owned(tmp_path: Path) -> None:
    """tmp_path as a state folder: builder writes only below its own marker."""
    writer.write_marker(tmp_path, writer.STATE_MARKER)


def test_start_and_finish_fill_the_folder(tmp_path: Path) -> None:
    _owned(tmp_path)
    folder, cwd = tmp_path / "deps", tmp_path / "b"
    cwd.mkdir()
    dep = with_depfile(["g++", "-MF", "x.d", "-c", "x.cpp", "-o", "x.o"], str(folder),
                       str(cwd))
    assert dep is not None
    start(dep, str(folder), str(cwd))
    since = (folder / SINCE).stat().st_mtime_ns
    assert (folder / f"{dep.name}.cwd").read_text().split("\n")[0] == str(cwd)
    (cwd / "x.d").write_text("x.o: x.cpp x.h\n")
    finish(dep, str(folder), str(cwd), 0)
    assert (folder / f"{dep.name}.d").read_text() == "x.o: x.cpp x.h\n"
    start(dep, str(folder), str(cwd))
    assert (folder / SINCE).stat().st_mtime_ns == since  # made once
    (cwd / "x.d").unlink()
    finish(dep, str(folder), str(cwd), 0)  # it succeeded and left none: not complete
    assert (folder / f"{dep.name}.unknown").is_file()


@pytest.mark.skipif(not os.path.exists("/usr/bin/g++"), reason="needs g++")
def test_the_launcher_leaves_a_depfile_of_a_real_compile(tmp_path: Path) -> None:
    """Without a broker the launcher runs the compiler itself: the depfile lists the
    header, and a compile with its own depfile has it copied."""
    _owned(tmp_path)
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "h.h").write_text("#define X 1\n")
    (tmp_path / "a.cpp").write_text('#include "h.h"\nint a() { return X; }\n')
    folder = tmp_path / "deps"
    env = {k: v for k, v in os.environ.items() if k not in ("BUILDER_BROKER",
                                                            "BUILDER_LAUNCHED")}
    env.update(BUILDER_DEPFILE_DIR=str(folder),
               PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    for extra in ([], ["-MMD", "-MF", "a.o.d"]):
        subprocess.run([sys.executable, "-m", "builder.memory.launcher", "/usr/bin/g++",
                        "-Iinc", *extra, "-c", "a.cpp", "-o", "a.o"], cwd=tmp_path,
                       env=env, check=True)
        [d] = folder.glob("*.d")
        assert "inc/h.h" in d.read_text()
        assert (folder / (d.stem + ".cwd")).read_text().split("\n")[0] == str(tmp_path)
        d.unlink()
    assert (tmp_path / "a.o.d").is_file()  # the build tool's own is where it wants it
