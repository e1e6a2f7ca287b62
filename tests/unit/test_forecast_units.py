"""The plan's memory forecast counts the compile jobs the build will run: a CPU build
never compiles a ``.cu``; a unity build merges C++ files a batch at a time; a patched
local source (built from a copy) has its original's files."""

from __future__ import annotations

from pathlib import Path

from builder.plan.model import BuildPlan
from builder.plan.payloads import CompileJobs
from builder.recipe.recipeset import RecipeSet
from builder.resolve.request import Request
from builder.resolve.resolver import resolve
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import host

CMAKE = """cmake_minimum_required(VERSION 3.20)
project(mix CXX)
add_library(mix a.cpp b.cpp c.cpp d.cpp e.cpp)
if(MIX_CUDA)
  enable_language(CUDA)
  target_sources(mix PRIVATE k.cu)
endif()
"""


def _project(tmp_path: Path, extra: str = "") -> tuple[Workspace, RecipeSet]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CMAKE)
    for n in "abcde":
        (src / f"{n}.cpp").write_text(f"int {n}() {{ return 1; }}\n")
    (src / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "recipes").mkdir(exist_ok=True)
    (tmp_path / "recipes" / "mix.yaml").write_text(
        "package: {name: mix, version: '1.0.0'}\nsource: {path: ../src" + extra + "}\n"
        "backends:\n  cpu: {}\n  cuda: {archs: [sm_80], defines: {MIX_CUDA: true}}\n")
    ws = Workspace.at(tmp_path)
    return ws, RecipeSet.load(ws.recipes_dir)


def _jobs(ws: Workspace, rs: RecipeSet) -> dict[str, int]:
    plan: BuildPlan = resolve(rs.recipes, rs, Request(), host("linux-cuda13"),
                              read_state(ws, rs.recipes), ws)
    return {s.variant.split("/")[1].split("-")[0]: s.payload.prediction.jobs
            for s in plan.steps if isinstance(s.payload, CompileJobs)}


def test_a_cpu_build_does_not_count_cuda_files(tmp_path: Path) -> None:
    ws, rs = _project(tmp_path)
    assert _jobs(ws, rs) == {"cpu": 5, "cuda": 6}


def test_a_unity_build_counts_its_batches(tmp_path: Path) -> None:
    ws, rs = _project(tmp_path)
    recipe = tmp_path / "recipes" / "mix.yaml"
    recipe.write_text(recipe.read_text() + "memory:\n  unity: {enabled: true, batch_size: 2}\n")
    rs = RecipeSet.load(ws.recipes_dir)
    assert _jobs(ws, rs) == {"cpu": 3, "cuda": 4}


def test_a_patched_local_source_has_its_originals_files(tmp_path: Path) -> None:
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "fix.patch").write_text(
        "--- a/a.cpp\n+++ b/a.cpp\n@@ -1 +1 @@\n-int a() { return 1; }\n"
        "+int a() { return 2; }\n")
    ws, rs = _project(tmp_path, ", patches: [fix.patch]")
    assert _jobs(ws, rs)["cpu"] == 5


def test_a_url_source_is_forecast_once_fetched(tmp_path: Path) -> None:
    import shutil

    from builder.plan.text import text
    from builder.source.fetch import MARKER, source_key

    ws, _ = _project(tmp_path)
    sha = "0" * 64
    (tmp_path / "recipes" / "mix.yaml").write_text(
        (tmp_path / "recipes" / "mix.yaml").read_text().replace(
            "source: {path: ../src}", f"source: {{url: 'file:///mix.tar.gz', sha256: '{sha}'}}"))
    rs = RecipeSet.load(ws.recipes_dir)
    plan = resolve(rs.recipes, rs, Request(), host("linux-cuda13"),
                   read_state(ws, rs.recipes), ws)
    assert "memory: no compile jobs known before building" in text(plan)
    fetched = ws.sources / source_key("url", "file:///mix.tar.gz", "", sha, ())
    shutil.copytree(tmp_path / "src", fetched)
    (fetched / MARKER).write_text("{}")
    assert _jobs(ws, rs) == {"cpu": 5, "cuda": 6}
