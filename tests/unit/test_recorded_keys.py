"""The compile key from what the build read (builder.resolve.keys, builder.source.inputs)
and toolchains by content (builder.host.identity): the pure decisions and the readers of
the build tool's records, without compilers."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

from builder.host.facts import HostFacts
from builder.host.identity import tool_files
from builder.plan.model import BuildPlan
from builder.plan.payloads import PublishInstall
from builder.recipe.recipeset import RecipeSet
from builder.resolve import keys
from builder.resolve.request import Request
from builder.resolve.resolver import resolve
from builder.source.digest import StatCache
from builder.source.inputs import (
    EDITED,
    build_ninja_inputs,
    depfile_inputs,
    install_rule_inputs,
    take_record,
    verify,
)
from builder.workspace.paths import Workspace
from builder.workspace.state import InstallRecord, read_state
from tests.conftest import host

ENV = (("HOME", "/home/user"),)


def _plan(project: Path, facts: HostFacts | None = None) -> BuildPlan:
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select(["app"], ws.recipes_dir)
    return resolve(roots, rs, Request(env=ENV, backends=("cpu",)),
                   facts or host("linux-cuda13"), read_state(ws, rs.closure(roots)), ws)


def _entry(p: Path) -> list[object]:
    st = p.stat()
    return [str(p), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
            StatCache().sha256(p, st)]


def _publish(project: Path, plan: BuildPlan, reads: dict[str, list[Path]]) -> BuildPlan:
    """Manifests as the publish step writes them: each recipe's install records reading
    ``reads[recipe]``; a dependent once the plan made after its dependency's publish
    knows its key (as ``builder build`` plans again).  The last plan."""
    while True:
        for v in plan.variants:
            if v.waits_for or v.status != "build":
                continue
            pub = plan.step(f"{v.id}/publish").payload
            assert isinstance(pub, PublishInstall) and pub.record is not None
            record = pub.record
            prefix = Path(v.prefix)
            prefix.mkdir(parents=True, exist_ok=True)
            (prefix / "manifest.json").write_text(json.dumps({
                "key": v.compile_key, "variant_key": v.key, "config_key": record.config_key,
                **({"own_key": record.own_key} if record.own_key else {}),
                "files": [], "record": {"inputs": [_entry(p) for p in reads[v.recipe]],
                                        "names": [list(n) for n in record.names]}}))
        if not any(v.waits_for for v in plan.variants):
            return _plan(project)
        plan = _plan(project)


def _fake_ninja(folder: Path, deps: list[Path]) -> str:
    """A ``ninja`` whose ``-t deps`` prints ``deps`` as the deps log of one object."""
    exe = folder / "ninja"
    log = f"a.o: #deps {len(deps)}, deps mtime 1 (VALID)\n" + \
        "".join(f"    {d}\n" for d in deps) + "\n"
    (folder / "deps.txt").write_text(log)
    exe.write_text(f"#!/bin/sh\ncat '{folder / 'deps.txt'}'\n")
    exe.chmod(0o755)
    return str(exe)


def _status(plan: BuildPlan) -> dict[str, str]:
    return {v.recipe: v.status for v in plan.variants}


def test_what_the_build_read_decides_up_to_date(project: Path) -> None:
    common = project / "sources" / "common" / "punct.h"  # outside every source folder
    common.parent.mkdir()
    common.write_text("#define P\n")
    readme = project / "sources" / "greet" / "README.md"
    readme.write_text("greet\n")
    first = _plan(project)
    assert _status(first) == {"greet": "build", "app": "build"}
    greet_src = project / "sources" / "greet"
    assert [v.waits_for for v in first.variants] == [(), (first.variants[0].id,)]
    built = _publish(project, first, {"greet": [greet_src / "src" / "greet.cpp",
                                       greet_src / "include" / "greet" / "greet.h", common],
                             "app": [project / "sources" / "app" / "src" / "main.cpp",
                                     greet_src / "include" / "greet" / "greet.h"]})
    assert _status(built) == {"greet": "cached", "app": "cached"}

    readme.write_text("greet: it says hello\n")  # read by nothing
    again = _plan(project)
    assert _status(again) == {"greet": "cached", "app": "cached"}
    assert [v.compile_key for v in again.variants] == [v.compile_key for v in built.variants]

    common.write_text("#define P ,\n")  # a header of a sibling folder the build read
    edited = _plan(project)
    assert _status(edited) == {"greet": "build", "app": "build"}
    assert edited.variants[0].prefix == first.variants[0].prefix  # incremental
    assert f"greet cpu release: rebuilt, since {common} changed after its last build" \
        in edited.notes
    common.write_text("#define P\n")

    os.utime(common, ns=(1, 1))  # touched, same content: hashed, still up to date
    assert _status(_plan(project)) == {"greet": "cached", "app": "cached"}

    (greet_src / "src" / "new.cpp").write_text("")  # a new file name in the tree
    added = _plan(project)
    assert _status(added)["greet"] == "build"
    assert any(f"the file names in {greet_src}" in n for n in added.notes), added.notes


def test_a_toolchain_identity_is_in_the_key(project: Path) -> None:
    facts = host("linux-cuda13")
    cxx = facts.tool("cxx")
    assert cxx is not None
    other = replace(facts, tools=tuple(replace(t, identity="b" * 64) if t.name == "cxx" else t
                                       for t in facts.tools))
    a, b = _plan(project, facts), _plan(project, other)
    assert other.tool("cxx").version == cxx.version  # type: ignore[union-attr]
    assert a.variants[0].compile_key != b.variants[0].compile_key
    assert a.variants[0].config_key != b.variants[0].config_key


def test_compile_key_decision(project: Path) -> None:
    plan = _plan(project)
    greet = plan.variants[0]
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    k = keys.KeyInputs(recipe=rs.by_name["greet"], backend="cpu", build_type="release",
                       python="", py_info=None, archs=(), options={"loud": False},
                       sources=["s" * 64], tools={}, conan=[], deps=[])
    cfg = keys.config_key(k)
    first = keys.compile_key(k)
    assert keys.compile_key(k, InstallRecord(cfg, "K", True, "")) == "K"
    changed = keys.compile_key(k, InstallRecord(cfg, "K", False, "now"))
    assert changed not in ("K", first)
    assert keys.compile_key(k, InstallRecord("other", "K", True, "")) == first
    # one folder built from builder's copy (patched): the copy follows the folder, and its
    # files are recorded as the folder's — keyed by its record like a folder in place
    src = k.recipe.sources[0]
    patched = replace(k, recipe=replace(k.recipe, sources=(replace(src, patches=("p",)),)))
    assert keys.recorded(patched.recipe)
    assert keys.compile_key(patched, InstallRecord(keys.config_key(patched), "K", True, "")) \
        == "K"
    # several folders, one of them patched: only the first would be copied; the whole
    # trees stay in the key
    two = replace(k, recipe=replace(k.recipe, sources=(replace(src, patches=("p",)), src)))
    assert not keys.recorded(two.recipe)
    assert keys.compile_key(two, InstallRecord(keys.config_key(two), "K", True, "")) \
        == keys.config_key(two)
    assert greet.config_key and greet.compile_key


def test_verify(tmp_path: Path) -> None:
    a, b = tmp_path / "a.h", tmp_path / "b.h"
    a.write_text("one")
    b.write_text("two")
    rec = [tuple(_entry(a)), tuple(_entry(b))]
    names = {"/src": "n1"}
    cache = StatCache()
    assert verify(rec, names, names, cache).ok
    assert not verify(rec, names, {"/src": "n2"}, cache).ok
    a.write_text("ONE")
    os.utime(a, ns=(5, 5))  # a tick later, whatever the file system's granularity
    v = verify(rec, names, names, cache)
    assert not v.ok and v.current
    a.write_text("one")
    assert verify(rec, names, names, cache).ok  # other stat, same content
    st = a.stat()
    a.write_text("owt")  # rewritten in place, its mtime put back: the ctime tells
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    rec = [tuple(_entry(a)), tuple(_entry(b))]
    time.sleep(0.05)  # past the file system's timestamp tick
    a.write_text("one")
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert not verify(rec, names, names, cache).ok
    b.unlink()
    assert not verify(rec, names, names, cache).ok
    assert not verify([(str(a), 3, 0, 0, 0, EDITED)], names, names, cache).ok
    assert not verify([["x"], 5], names, names, cache).ok


def test_build_ninja_and_depfiles(tmp_path: Path) -> None:
    (tmp_path / "rules.ninja").write_text("rule CXX\n  command = c++\n")
    (tmp_path / "build.ninja").write_text(
        "include rules.ninja\n"
        "build CMakeFiles/x.o: CXX_COMPILER /src/a$ b.cpp | /src/gen.py $\n"
        "    /usr/share/cmake/x.cmake || order.stamp\n"
        "  FLAGS = -O2\n"
        "build build.ninja: RERUN_CMAKE | /src/CMakeLists.txt /src/cfg.h.in\n"
        "build all: phony x\n"
        "subninja sub.ninja\n")
    (tmp_path / "sub.ninja").write_text("build y: CXX /other/c$:d.cpp\n")
    got = build_ninja_inputs(tmp_path)
    assert {"/src/a b.cpp", "/src/gen.py", "/usr/share/cmake/x.cmake", "/src/CMakeLists.txt",
            "/src/cfg.h.in", "/other/c:d.cpp"} <= got
    assert str(tmp_path / "order.stamp") in got and str(tmp_path / "x") in got
    (tmp_path / "k.d").write_text("k.o: /src/k.cu /common/with\\ space.h \\\n /usr/x.h\n")
    assert depfile_inputs(tmp_path) >= {"/src/k.cu", "/common/with space.h", "/usr/x.h"}


def test_take_record_keeps_what_lies_outside_builders_folders(tmp_path: Path) -> None:
    src, state = tmp_path / "src", tmp_path / "src" / ".builder"
    build = state / "build" / "x"
    build.mkdir(parents=True)
    (src / "a.cpp").write_text("a")
    (src / "include").mkdir()
    (src / "include" / "only_installed.h").write_text("h")
    (src / "docs").mkdir()
    (src / "docs" / "guide.md").write_text("g")
    (build / "gen.h").write_text("generated")
    (build / "build.ninja").write_text(f"build a.o: CXX {src / 'a.cpp'} | gen.h\n")
    (build / "cmake_install.cmake").write_text(
        f'file(INSTALL DESTINATION "${{CMAKE_INSTALL_PREFIX}}/include" TYPE DIRECTORY '
        f'FILES "{src / "include"}/")\nset(CMAKE_OBJDUMP "/usr/bin/objdump")\n')
    (tmp_path / "elsewhere").mkdir()
    header = tmp_path / "elsewhere" / "x.h"
    header.write_text("x")
    ninja = _fake_ninja(tmp_path, [header, build / "gen.h"])
    assert take_record("ninja-not-here", build, [str(state)], [], {}) is None
    before = (src / "a.cpp").stat()
    rec = take_record(ninja, build, [str(state)], [str(src / "docs")], {"r": "n"},
                      planned={str(src / "a.cpp"): (before.st_size, before.st_mtime_ns,
                                                    before.st_ctime_ns, before.st_ino, "x")})
    assert rec is not None
    # written just now: their stat is not trusted (racy), their content will be checked
    assert all(e[2] == -1 for e in rec["inputs"])
    paths = {e[0] for e in rec["inputs"]}
    assert paths == {str(src / "a.cpp"), str(src / "include" / "only_installed.h"),
                     str(src / "docs" / "guide.md"), str(header)}
    assert rec["names"] == [["r", "n"]]
    (src / "a.cpp").write_text("edited while building")
    rec2 = take_record(ninja, build, [str(state)], [], {"r": "n"},
                       planned={str(src / "a.cpp"): (before.st_size, before.st_mtime_ns,
                                                     before.st_ctime_ns, before.st_ino, "x")})
    assert rec2 is not None
    assert [e[5] for e in rec2["inputs"] if e[0] == str(src / "a.cpp")] == [EDITED]


def test_install_rules(tmp_path: Path) -> None:
    (tmp_path / "cmake_install.cmake").write_text(
        'file(INSTALL DESTINATION "${P}/doc" TYPE FILE FILES\n    "/s/README"\n'
        '    "/s/a b/LICENSE"\n    )\nset(X "/usr")\n')
    assert install_rule_inputs(tmp_path) == {"/s/README", "/s/a b/LICENSE"}


def test_tool_files_follow_wrappers_and_caches(tmp_path: Path) -> None:
    real = tmp_path / "real" / "g++"
    real.parent.mkdir()
    real.write_text("binary")
    real.chmod(0o755)
    wrapper = tmp_path / "wrap" / "g++"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    got = tool_files(str(wrapper))  # the wrapper, its interpreter and its target
    assert got[0] == str(wrapper) and str(real) in got
    assert os.path.realpath("/bin/sh") in got
    ccache = tmp_path / "cache" / "ccache"
    ccache.parent.mkdir()
    ccache.write_text("the cache")
    ccache.chmod(0o755)
    link = tmp_path / "lnk" / "g++"
    link.parent.mkdir()
    link.symlink_to(ccache)
    got = tool_files(str(link), os.pathsep.join([str(link.parent), str(real.parent)]))
    assert got == [str(ccache), str(real)]


def test_files_the_cmake_files_name_are_inputs(tmp_path: Path) -> None:
    """``file(READ VERSION)`` at configure time: VERSION is no configure input of CMake's,
    but the CMake file names it."""
    src, build = tmp_path / "src", tmp_path / "state" / "build"
    (src / "cmake").mkdir(parents=True)
    build.mkdir(parents=True)
    (src / "VERSION").write_text("1.2.3")
    (src / "data.txt").write_text("d")
    (src / "README.md").write_text("r")
    (src / "CMakeLists.txt").write_text(
        'file(READ "${CMAKE_CURRENT_SOURCE_DIR}/VERSION" v)\ninclude(cmake/more.cmake)\n')
    (src / "cmake" / "more.cmake").write_text("file(STRINGS ../data.txt d)\n")
    (build / "build.ninja").write_text(
        f"build build.ninja: RERUN_CMAKE | {src / 'CMakeLists.txt'} "
        f"{src / 'cmake' / 'more.cmake'}\n")
    rec = take_record(_fake_ninja(tmp_path, []), build, [str(tmp_path / "state")], [],
                      {str(src): "n"})
    assert rec is not None
    assert {e[0] for e in rec["inputs"]} == {
        str(src / f) for f in ("CMakeLists.txt", "cmake/more.cmake", "VERSION", "data.txt")}
