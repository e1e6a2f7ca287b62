"""Real CMake projects (issue 22), planned purely against fixture host facts: the C++
standard is the recipe's or the project's, never forced by builder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from builder.plan.model import BuildPlan
from builder.recipe.recipeset import RecipeSet
from builder.resolve.request import Request
from builder.resolve.resolver import resolve
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import FIXTURES, host

ENV = (("HOME", "/home/user"),)


@pytest.fixture
def modern(tmp_path: Path) -> Path:
    """A private copy of tests/fixtures/modern (C++20, forced unity, own CXX flags)."""
    dst = tmp_path / "modern"
    shutil.copytree(FIXTURES / "modern", dst,
                    ignore=shutil.ignore_patterns(".builder", "__pycache__"))
    return dst


def plan_of(project: Path, names: list[str], facts: str = "linux-cuda13",
            **req: object) -> BuildPlan:
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select(names, ws.recipes_dir)
    req.setdefault("env", ENV)
    return resolve(roots, rs, Request(**req), host(facts),  # type: ignore[arg-type]
                   read_state(ws, rs.closure(roots)), ws)


def profile_of(plan: BuildPlan) -> str:
    [v] = plan.variants
    files = dict(plan.step(f"{v.id}/render").payload.files)  # type: ignore[union-attr]
    return next(t for p, t in files.items() if p.endswith("/profile"))


def set_standard(project: Path, value: str) -> None:
    recipe = project / "recipes" / "modern.yaml"
    recipe.write_text(recipe.read_text().replace(
        "source:\n", f"build:\n  cxx_standard: {value}\nsource:\n", 1))


# ---------------------------------------------------------------------- C++ standard


def test_without_a_recipe_standard_the_profile_leaves_it_to_the_project(modern: Path) -> None:
    profile = profile_of(plan_of(modern, ["modern"]))
    # Conan would turn compiler.cppstd into CMAKE_CXX_STANDARD, whose -std= comes after
    # the project's own -std=c++20 in CMAKE_CXX_FLAGS and wins
    assert "compiler.cppstd=" not in profile
    assert "compiler.libcxx=libstdc++11\n# compiler.cppstd: not set" in profile


@pytest.mark.parametrize("value", ["20", "gnu20", "23"])
def test_the_recipe_standard_reaches_the_profile_and_the_key(modern: Path, value: str) -> None:
    before = plan_of(modern, ["modern"]).variants[0].key
    set_standard(modern, value)
    plan = plan_of(modern, ["modern"])
    assert f"\ncompiler.cppstd={value}\n" in profile_of(plan)
    assert plan.variants[0].key != before


def test_a_standard_conan_does_not_know_is_a_located_error(modern: Path) -> None:
    from builder.errors import RecipeError

    set_standard(modern, "19")
    with pytest.raises(RecipeError) as err:
        plan_of(modern, ["modern"])
    text = err.value.render()
    assert "modern.yaml:" in text and "cxx_standard" in text, text


# ---------------------------------------------------------------------- tool discovery


def _fake_tool(folder: Path, name: str, version: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / name
    exe.write_text(f"#!/bin/sh\necho '{name} version {version}'\n")
    exe.chmod(0o755)
    return exe


def test_tools_are_found_next_to_builders_interpreter_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`venv/bin/builder` run without the venv on PATH finds the venv's conan (and
    prefers it to another one on PATH); without either, PATH alone decides."""
    import sys

    from builder.host import probe

    venv, other = tmp_path / "venv" / "bin", tmp_path / "other"
    mine = _fake_tool(venv, "conan", "2.99.1")
    _fake_tool(other, "conan", "2.0.0")
    monkeypatch.setattr(sys, "executable", str(venv / "python3"))
    monkeypatch.setenv("PATH", f"{other}:/usr/bin:/bin")
    found = probe._probe_tool("conan", probe._ProbeCache(None))
    assert found is not None and (found.path, found.version) == (str(mine), "2.99.1")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "elsewhere" / "python3"))
    found = probe._probe_tool("conan", probe._ProbeCache(None))
    assert found is not None and found.version == "2.0.0"
    monkeypatch.setenv("PATH", "/nonexistent")
    assert probe._probe_tool("conan", probe._ProbeCache(None)) is None


def test_configure_names_the_ninja_that_was_found(modern: Path) -> None:
    """CMake would look for ninja on PATH only."""
    plan = plan_of(modern, ["modern"])
    [v] = plan.variants
    ninja = host("linux-cuda13").tool("ninja")
    assert ninja is not None
    assert f"-DCMAKE_MAKE_PROGRAM={ninja.path}" in plan.step(f"{v.id}/configure").commands[0]


# ---------------------------------------------------------------------- OOM in the summary


def test_oom_kills_name_the_file_the_reservation_and_the_retry() -> None:
    from builder.memory.jobs import oom_kills

    mib = 2**20
    jobs = [
        {"file": "a.cpp", "oom": False, "retry": False, "rc": 0, "peak": 900 * mib},
        {"file": "unity_0_cxx.cxx", "oom": True, "retry": False, "rc": 1,
         "peak": 1055 * mib, "reserve": 112 * mib, "source": "learned:prior:torch/torch.h"},
        {"file": "b.cpp", "oom": True, "retry": False, "rc": 1, "peak": 700 * mib,
         "reserve": 800 * mib, "source": "history"},
        {"file": "unity_0_cxx.cxx", "oom": False, "retry": True, "rc": 0, "peak": 990 * mib},
        {"file": "b.cpp", "oom": True, "retry": True, "rc": 1, "peak": 720 * mib},
    ]
    assert oom_kills(jobs) == [
        "unity_0_cxx.cxx was killed out of memory at 1055 MiB (112 MiB reserved, estimate "
        "from learned:prior:torch/torch.h); retried alone with the low-memory flags: "
        "succeeded (peak 990 MiB)",
        "b.cpp was killed out of memory at 700 MiB (800 MiB reserved, estimate from "
        "history); killed again when retried alone with the low-memory flags"]
    assert oom_kills(jobs[:1]) == []


# ---------------------------------------------------------------------- learning bound


def test_a_tiny_first_sibling_does_not_lower_a_prior_but_a_heavier_one_raises_it() -> None:
    from builder.memory.estimate import estimate
    from builder.memory.jobs import Learned, relearn

    mib = 2**20
    torch = estimate("unity_1_cxx.cxx", ("torch/torch.h",))
    assert torch.source == "prior:torch/torch.h" and torch.floor > 0
    light = {torch.group: Learned().add(91 * mib, 2.0, ())}  # the reported cold build
    assert relearn(torch, light, {}) is None  # keeps the prior, margin and all
    # ... also when a running sibling holds little so far
    assert relearn(torch, light, {torch.group: 200 * mib}) is None
    heavy = relearn(torch, {torch.group: Learned().add(1700 * 10**6, 20.0, ())}, {})
    assert heavy is not None and heavy.peak == 1700 * 10**6 > torch.peak
    # within what TUs including the header really need (torch/torch.h: 1.0-1.6 GB)
    plausible = relearn(torch, {torch.group: Learned().add(10**9, 15.0, ())}, {})
    assert plausible is not None and plausible.peak == 10**9
    # no umbrella header: the default prior is never lowered, only raised
    plain = estimate("src/a.cpp", ())
    assert plain.source == "default"
    assert relearn(plain, {plain.group: Learned().add(5 * mib, 0.3, ())}, {}) is None
    raised = relearn(plain, {plain.group: Learned().add(900 * mib, 9.0, ())}, {})
    assert raised is not None and raised.peak == 900 * mib


def test_a_recipe_glob_learns_from_its_own_jobs_but_not_from_a_light_header_family() -> None:
    from builder.memory.estimate import estimate
    from builder.memory.jobs import Learned, relearn

    mib = 2**20
    est = estimate("b/x.cpp", ("torch/torch.h",), recipe_globs=(("b/*.cpp", 400 * mib),))
    assert est.source == "recipe" and est.family == "prior:torch/torch.h:host:1"
    family = {est.family: Learned().add(50 * mib, 1.0, ())}
    assert relearn(est, family, {}) is None
    own = relearn(est, {est.group: Learned().add(50 * mib, 1.0, ())}, {})
    assert own is not None and own.peak == 50 * mib  # the recipe author's glob: alike


# ---------------------------------------------------------------------- history keys


def _tree(base: Path, unity_text: str) -> tuple[str, str, Path, Path]:
    src, build = base / "src", base / ".builder" / "build" / "m" / "cpu-0123" / "cmake"
    (src / "src").mkdir(parents=True)
    (src / "src" / "a.cpp").write_text("int a() { return 1; }\n")
    unity = build / "CMakeFiles" / "m.dir" / "Unity" / "unity_0_cxx.cxx"
    unity.parent.mkdir(parents=True)
    unity.write_text(unity_text.replace("SRC", str(src)))
    return str(src), str(build), src / "src" / "a.cpp", unity


def test_history_names_a_compile_by_what_determines_it_not_where_it_is(tmp_path: Path) -> None:
    from builder.memory.compileid import compile_id, compile_key

    text = '/* generated by CMake */\n#include "SRC/src/a.cpp"\n'
    ids, keys = [], []
    for where in ("one", "moved/elsewhere"):  # the project moved, another variant's folder
        src, build, a, unity = _tree(tmp_path / where, text)
        argv = ["/usr/bin/c++", f"-I{src}/include", "-O2", "-o",
                f"{build}/CMakeFiles/m.dir/a.o", "-c", str(a)]
        ids.append((compile_id(str(a), src, build, "m"),
                    compile_id(str(unity), src, build, "m")))
        keys.append(compile_key(ids[-1][0], argv, str(a), src, build))
    assert ids[0] == ids[1] and ids[0][0] == "m:src/a.cpp"
    assert ids[0][1].startswith("m:unity:")
    assert keys[0] == keys[1]
    # a unity file including other sources is another compile; so are other flags and
    # another content of the same file (which keeps its id: the file's last measurement)
    src, build, a, unity = _tree(tmp_path / "other", text + '#include "SRC/src/b.cpp"\n')
    assert compile_id(str(unity), src, build, "m") != ids[0][1]
    argv = ["/usr/bin/c++", "-O2", "-c", str(a)]
    before = compile_key("m:src/a.cpp", argv, str(a), src, build)
    assert compile_key("m:src/a.cpp", [*argv, "-g"], str(a), src, build) != before
    a.write_text("int a() { return 2; }\n")
    assert compile_key("m:src/a.cpp", argv, str(a), src, build) != before
    # outside both folders: the absolute path, as before
    assert compile_id("/usr/src/x.cpp", src, build, "m") == "/usr/src/x.cpp"


def test_the_plan_finds_the_history_of_a_moved_project(modern: Path, tmp_path: Path) -> None:
    from builder.memory.history import History
    from builder.plan.payloads import CompileJobs
    from builder.workspace.ownership import claim_state

    claim_state(Workspace.at(modern).state)  # as the command line does first
    hist = History(Workspace.at(modern).memory_history)
    hist.record("k1", "modern:tests/main.cpp", 700 * 2**20, 5.0, cpu=4.0)
    hist.save()
    moved = tmp_path / "moved" / "modern"
    shutil.move(str(modern), str(moved))
    plan = plan_of(moved, ["modern"])
    payload = plan.step(f"{plan.variants[0].id}/build").payload
    assert isinstance(payload, CompileJobs) and payload.memory.scope == "modern"
    heavy = {h.file: h for h in payload.prediction.heaviest}
    assert heavy["tests/main.cpp"].source == "history-file"
    assert heavy["tests/main.cpp"].peak == 700 * 2**20


# ---------------------------------------------------------------------- compile-job estimate


def _jobs(plan: BuildPlan) -> int:
    from builder.plan.payloads import CompileJobs

    payload = plan.step(f"{plan.variants[0].id}/build").payload
    assert isinstance(payload, CompileJobs)
    return payload.prediction.jobs


def test_the_compile_job_estimate_counts_what_the_project_compiles(modern: Path) -> None:
    plan = plan_of(modern, ["modern"])
    # src/where.cpp, name.cpp, count.cpp and tests/main.cpp — not third_party/unused/*.cpp
    assert _jobs(plan) == 4
    assert not any("compile-job estimate" in n for n in plan.notes)


def test_sources_named_through_variables_make_the_plan_say_it_cannot_know(
        modern: Path) -> None:
    cm = modern / "sources" / "modern" / "CMakeLists.txt"
    cm.write_text(cm.read_text().replace("src/where.cpp", "${WHERE_SOURCE}"))
    cm.write_text(cm.read_text().replace("project(modern LANGUAGES CXX)",
                                         "project(modern LANGUAGES CXX)\n"
                                         "set(WHERE_SOURCE src/${WHERE}.cpp)"))
    plan = plan_of(modern, ["modern"])
    assert _jobs(plan) == 6
    [note] = [n for n in plan.notes if "compile-job estimate" in n]
    assert "cannot be known" in note and "(6)" in note


def test_glob_patterns_in_the_project_count(tmp_path: Path) -> None:
    from builder.source.cmakelists import listed_sources

    (tmp_path / "CMakeLists.txt").write_text(
        'file(GLOB SRC CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp")\n'
        "add_subdirectory(tools)  # tools/x.cpp is named there\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "CMakeLists.txt").write_text("add_executable(x x.cpp)\n")
    got = listed_sources(tmp_path, ["src/a.cpp", "src/b.cpp", "tools/x.cpp", "vendor/y.cpp"])
    assert got == {"src/a.cpp", "src/b.cpp", "tools/x.cpp"}
    assert listed_sources(tmp_path / "tools" / "none", ["a.cpp"]) is None
