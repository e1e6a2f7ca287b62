"""The record of a pip or xmake build (builder.source.launched.launched_inputs): depfiles,
logged reads, build scripts, staged copies, a patched copy mapped back — and when no
record can be taken."""

from __future__ import annotations

import os
import time
from pathlib import Path

from builder.source.digest import StatCache
from builder.source.inputs import take_record
from builder.source.launched import Launched, launched_inputs


def _tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    src, build, deps = tmp_path / "src", tmp_path / "build", tmp_path / "build" / "deps"
    for d in (src / "inc", build / "obj", deps):
        d.mkdir(parents=True)
    (src / "inc" / "a.h").write_text("#define A 1\n")
    (src / "a.cpp").write_text('#include "a.h"\n')
    (src / "README.md").write_text("nothing reads me\n")
    (src / "xmake.lua").write_text('target("a")\n  add_files("a.cpp")\n'
                                   '  add_configfiles("ver.in")\n')
    (src / "ver.in").write_text("1\n")
    (src / "pkg.py").write_text("X = 1\n")
    (deps / ".since").write_text("")
    (deps / "n1.cwd").write_text(f"{src}\ng++ -c a.cpp\n")
    (deps / "n1.d").write_text("../build/obj/a.o: a.cpp inc/a.h \\\n /usr/include/stdio.h\n")
    (build / "obj" / "a.o").write_text("")
    return src, build, deps


def test_depfiles_scripts_and_copies(tmp_path: Path) -> None:
    src, build, deps = _tree(tmp_path)
    stage = tmp_path / "stage"
    stage.mkdir()
    (stage / "pkg.py").write_text("X = 1\n")  # a copy of a source file
    spec = Launched(str(deps), stage=str(stage), scripts=(".lua",))
    got = launched_inputs(spec, build, [str(src)], StatCache())
    assert got is not None
    assert {str(src / p) for p in ("a.cpp", "inc/a.h", "xmake.lua", "ver.in", "pkg.py")} \
        <= got
    assert "/usr/include/stdio.h" in got and str(src / "README.md") not in got


def test_no_record_when_it_cannot_be_complete(tmp_path: Path) -> None:
    src, build, deps = _tree(tmp_path)
    spec = Launched(str(deps))
    assert launched_inputs(spec, build, [str(src)], StatCache()) is not None
    (deps / "n2.unknown").write_text("2 sources in one compile\n")
    assert launched_inputs(spec, build, [str(src)], StatCache()) is None
    (deps / "n2.unknown").unlink()
    # an object compiled before depfiles were kept: its headers are unknown
    old = time.time() - 3600
    os.utime(build / "obj" / "a.o", (old, old))
    assert launched_inputs(spec, build, [str(src)], StatCache()) is None
    # a Python build whose processes left no log
    os.utime(build / "obj" / "a.o")
    logs = tmp_path / "logs"
    assert launched_inputs(Launched(str(deps), reads=str(logs)), build, [str(src)],
                           StatCache()) is None
    logs.mkdir()
    (logs / "1-1.log").write_text(f"read\t{src}/setup.py\nexec\t{src}\tmake\x1f-j2\n")
    assert launched_inputs(Launched(str(deps), reads=str(logs)), build, [str(src)],
                           StatCache()) is None  # make: what it read nobody saw
    (logs / "1-1.log").write_text(f"read\t{src}/README.md\n")
    got = launched_inputs(Launched(str(deps), reads=str(logs)), build, [str(src)],
                          StatCache())
    assert got is not None and str(src / "README.md") in got  # read: an input


def test_a_patched_copy_is_recorded_as_the_users_files(tmp_path: Path) -> None:
    src, build, deps = _tree(tmp_path)
    user = tmp_path / "user"
    user.mkdir()
    (user / "inc").mkdir()
    (user / "a.cpp").write_text("// before the patch\n")
    (user / "inc" / "a.h").write_text("#define A 1\n")
    # src is builder's copy of user (a.cpp patched); the patch added xmake.lua
    spec = Launched(str(deps), mapped=((str(src), str(user)),), scripts=(".lua",))
    read = launched_inputs(spec, build, [str(user)], StatCache())
    assert read is not None
    rec = take_record("ninja", build, [str(tmp_path / "state")], [], {str(user): "n"},
                      read=read)
    assert rec is not None
    paths = [i[0] for i in rec["inputs"]]
    assert str(user / "a.cpp") in paths and str(user / "inc" / "a.h") in paths
    assert not any(p.startswith(str(src) + "/") for p in paths)
    assert str(user / "xmake.lua") not in paths  # made by the patch: keyed by it
