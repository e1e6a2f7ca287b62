"""The launcher and builder's compiler wrappers with a compiler cache in the chain: the
cache is handed the real compiler, never a wrapper (CMake run by a Python build backend
with ``CXX`` naming a wrapper and the launcher chain in ``CMAKE_CXX_COMPILER_LAUNCHER``),
and a launcher inside a launched compile leaves its cache out.  sccache and the compiler
are recording stand-ins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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

