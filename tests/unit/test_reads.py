"""What the Python processes of a build read (builder.source.reads): the audit hook run
in real interpreters, its logs parsed, and the programs whose reads nobody sees."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from builder.memory.depfiles import READS_DIR
from builder.source.reads import (
    HOOK,
    MERGED,
    cmake_build_dirs,
    compact_logs,
    parse_logs,
    python_isolated,
    unseen_program,
)
from builder.util import writer


def _hooked(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    hook, logs = tmp_path / "hook", tmp_path / "logs"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({READS_DIR: str(logs), "PYTHONPATH": str(hook)})
    return hook, logs, env


def test_the_hook_logs_reads_and_programs_of_every_python_process(tmp_path: Path) -> None:
    _, logs, env = _hooked(tmp_path)
    (tmp_path / "README.md").write_text("long description\n")
    (tmp_path / "out.txt").write_text("")
    (tmp_path / "helper.py").write_text("VALUE = 1\n")
    script = (
        "import os, subprocess, sys\n"
        "open('README.md').read()\n"            # a relative read, made absolute
        "open('out.txt', 'w').write('x')\n"       # a write: not a read
        "os.close(os.open('helper.py', os.O_RDONLY))\n"
        "import helper\n"
        "subprocess.run([sys.executable, '-c', 'open(\"out.txt\").read()'], check=True)\n"
        "subprocess.run(['true'], check=True)\n")
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, check=True)
    got = parse_logs(logs)
    assert got.logs == 2  # the child Python logged too (PYTHONPATH reaches it)
    assert {str(tmp_path / n) for n in ("README.md", "helper.py", "out.txt")} <= got.files
    progs = [argv for _, argv in got.programs]
    assert [sys.executable, "-c", 'open("out.txt").read()'] in [list(p) for p in progs]
    assert ("true",) in progs
    assert unseen_program(got.programs, str(tmp_path / "bin")) == "true"


def test_the_hook_chains_to_the_interpreters_own_sitecustomize(tmp_path: Path) -> None:
    hook, logs, env = _hooked(tmp_path)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import builtins\nbuiltins.THEIRS = 42\n")
    env["PYTHONPATH"] = f"{hook}{os.pathsep}{theirs}"
    done = subprocess.run([sys.executable, "-c", "print(THEIRS)"], env=env, check=True,
                          capture_output=True, text=True)
    assert done.stdout.strip() == "42"
    assert parse_logs(logs).logs == 1


def test_without_the_folder_the_hook_does_nothing(tmp_path: Path) -> None:
    _, logs, env = _hooked(tmp_path)
    del env[READS_DIR]  # a test step, or a launcher that took it out
    subprocess.run([sys.executable, "-c", "open(__import__('os').devnull).read()"],
                   env=env, check=True)
    assert not logs.exists()


def test_bytecode_reads_name_their_source(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "1-1.log").write_text("read\t/p/pkg/__pycache__/mod.cpython-311.pyc\n"
                                  "read\t/p/a/../b.txt\nnonsense\n")
    assert parse_logs(logs).files == {"/p/pkg/__pycache__/mod.cpython-311.pyc",
                                      "/p/pkg/mod.py", "/p/b.txt"}


def test_compacting_keeps_every_line_once(tmp_path: Path) -> None:
    writer.write_marker(tmp_path, writer.STATE_MARKER)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "1-1.log").write_text("read\t/a\nread\t/b\n")
    (logs / "2-2.log").write_text("read\t/b\nexec\t/w\tninja\n")
    compact_logs(logs)
    assert [p.name for p in logs.iterdir()] == [MERGED]
    assert (logs / MERGED).read_text() == "read\t/a\nread\t/b\nexec\t/w\tninja\n"
    (logs / "3-3.log").write_text("read\t/c\n")
    compact_logs(logs)
    assert parse_logs(logs).files == {"/a", "/b", "/c"}


def test_python_isolation_flags() -> None:
    assert python_isolated(["python3", "-I", "x.py"])
    assert python_isolated(["python3", "-Es", "x.py"])
    assert python_isolated(["python3", "-X", "dev", "-S", "-m", "pip"])
    assert not python_isolated(["python3", "-m", "pip", "-I"])  # pip's option, not Python's
    assert not python_isolated(["python3", "-c", "import sys", "-E"])
    assert not python_isolated(["python3", "-u", "setup.py"])
    assert not python_isolated(["python3", "-mIS"])  # module "IS"


def test_unseen_programs() -> None:
    w = "/b/bin"
    ok = [("/s", ("/usr/bin/python3", "setup.py")), ("/s", ("/b/bin/c++", "-c", "a.cpp")),
          ("/s", ("/usr/bin/g++", "--version")), ("/s", ("cmake", "-S", ".", "-B", "/b/x")),
          ("/s", ("ninja", "-v")), ("/s", ("uname", "-rs"))]
    assert unseen_program(ok, w) == ""
    for bad in (("/usr/bin/g++", "-c", "a.cpp", "-o", "a.o"),  # not through a wrapper
                ("python3", "-I", "gen.py"), ("make", "-j4"), ("/bin/sh", "-c", "cat x"),
                ("cmake", "-P", "gen.cmake")):
        assert unseen_program([*ok, ("/s", bad)], w) == " ".join(bad), bad


def test_cmake_build_folders() -> None:
    progs = [("/src", ("/usr/bin/cmake", "-S.", "-B/b/skbuild", "-GNinja")),
             ("/src", ("cmake", "--build", "/b/skbuild")), ("/src", ("cmake", "-E", "true")),
             ("/b/other", ("cmake", "/src")), ("/src", ("cmake", "--help")),
             ("/src", ("cmake", "-B", "rel"))]
    assert cmake_build_dirs(progs) == {"/b/skbuild", "/b/other", "/src/rel"}
