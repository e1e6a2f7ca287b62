"""Plans for projects built by their own tools (build.system python/xmake), the recipe
fields that fix what upstream lacks, and how a test step's counts are read."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from builder.errors import RecipeError
from builder.execute.testcounts import Counts, count
from builder.plan import payloads
from builder.plan.model import BUILD, SKIP
from builder.recipe.recipeset import load_recipe
from tests.unit.test_resolve import plan_for

PY = """\
package: {name: fo, version: "0.1.0"}
source: {path: ../src}
build:
  system: python
  env: {FO_BACKEND: "${backend}", FO_FAST: "${options.fast}"}
  config_settings: {cmake.define.FO_ARCHS: "${archs.cmake}", build-dir: "${build}/sk"}
options:
  fast: {type: bool, default: true}
backends:
  cpu: {}
  cuda: {archs: [sm_80, sm_90a]}
requires: {python: ["torch>=2.0"]}
python: {versions: ["3.11", "3.12"], abi: cpython}
install:
  files: [{from: "${build}/extra/*.so", to: lib}]
test:
  - {name: unit, run: ["${python}", -m, pytest, tests], allow_empty: true}
"""


def project(tmp_path: Path, text: str, name: str = "fo") -> Path:
    (tmp_path / "src").mkdir(parents=True, exist_ok=True)
    (tmp_path / "src" / "a.cpp").write_text("#include <torch/extension.h>\n")
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "recipes").mkdir(exist_ok=True)
    (tmp_path / "recipes" / f"{name}.yaml").write_text(text)
    return tmp_path


def test_python_build_plan_puts_the_launcher_in_front_of_every_compiler(tmp_path: Path) -> None:
    plan = plan_for(project(tmp_path, PY), ["fo"], "linux-cuda13")
    cpu = next(v for v in plan.variants if v.backend == "cpu")
    kinds = [s.id.rsplit("/", 1)[1] for s in plan.steps_of(cpu.id)]
    assert kinds == ["prepare", "build", "collect", "test:unit", "publish", "wheel"]
    build = plan.step(f"{cpu.id}/build")
    env = dict(build.env)
    bdir = Path(cpu.prefix.replace("/install/", "/build/"))
    assert env["CC"] == str(bdir / "bin" / "cc") and env["CXX"] == str(bdir / "bin" / "c++")
    assert env["CMAKE_CXX_COMPILER_LAUNCHER"].endswith(";-m;builder.memory.launcher")
    assert env["MAX_JOBS"] == env["CMAKE_BUILD_PARALLEL_LEVEL"] == str(2 * plan.cpus)
    assert env["FO_BACKEND"] == "cpu" and env["FO_FAST"] == "ON"
    argv = build.commands[0]
    assert argv[argv.index("-m", 3) + 1:][:4] == ("pip", "wheel", "--no-build-isolation",
                                                 "--no-deps")
    assert f"--config-settings=build-dir={bdir}/sk" in argv
    assert "builder.memory.cgroup" not in argv or argv[argv.index("--limit") + 1]
    prep = plan.step(f"{cpu.id}/prepare").payload
    assert isinstance(prep, payloads.PrepareBuild)
    assert dict(prep.wrappers)[env["CXX"]].endswith("++")
    collect = plan.step(f"{cpu.id}/collect").payload
    assert isinstance(collect, payloads.CollectInstall) and collect.unpack
    # the project's own wheel is renamed, pinned and repaired as a CMake recipe's is
    wheel = plan.step(f"{cpu.id}/wheel")
    assert isinstance(wheel.payload, payloads.WheelBuild)
    assert wheel.payload.from_wheel == collect.wheel_from
    assert wheel.payload.name == "fo" and wheel.payload.tag.startswith("cp311-cp311-linux")
    assert "auditwheel and patchelf not found" in wheel.payload.note  # (this host has none)
    assert collect.files == ((f"{bdir}/extra/*.so", "lib"),)
    assert isinstance(plan.step(f"{cpu.id}/test:unit").payload, payloads.TestRun)
    cuda = next(v for v in plan.variants if v.backend == "cuda")
    assert cuda.status == SKIP and "CPU-only build" in cuda.reason


def test_cuda_python_build_gets_the_archs_and_the_nvcc_wrapper(tmp_path: Path) -> None:
    plan = plan_for(project(tmp_path, PY), ["fo"], "h100", backends=("cuda",))
    [v] = plan.variants
    assert v.status == BUILD, v.reason
    env = dict(plan.step(f"{v.id}/build").env)
    assert env["TORCH_CUDA_ARCH_LIST"] == "8.0;9.0a" and env["CUDAARCHS"] == "80;90a"
    assert env["PYTORCH_NVCC"].endswith("/bin/nvcc")
    assert env["CMAKE_CUDA_COMPILER_LAUNCHER"].endswith("builder.memory.launcher")
    assert "--config-settings=cmake.define.FO_ARCHS=80;90a" in \
        plan.step(f"{v.id}/build").commands[0]
    # its wheel is named for its CUDA major, and cuBLAS & co. are never grafted into it
    wheel = plan.step(f"{v.id}/wheel").payload
    assert isinstance(wheel, payloads.WheelBuild)
    assert wheel.name == "fo-cu13" and wheel.toolkit.startswith("13.")


def test_build_settings_are_part_of_the_key(tmp_path: Path) -> None:
    a = plan_for(project(tmp_path / "a", PY), ["fo"], "linux-cuda13").variants[0].key
    b = plan_for(project(tmp_path / "b", PY.replace("FO_FAST", "FO_QUICK")), ["fo"],
                 "linux-cuda13").variants[0].key
    c = plan_for(project(tmp_path / "c", PY), ["fo"], "linux-cuda13",
                 options=()).variants[0].key
    assert a != b and a == c


def test_xmake_plan(tmp_path: Path) -> None:
    text = """\
package: {name: xd, version: "1.0"}
source: {path: ../src}
build: {system: xmake, configure_args: ["--fast=${options.fast}"]}
options: {fast: {type: bool, default: true}}
backends: {cpu: {}}
flags: {release: {cxx: [-O2]}}
python: {versions: ["3.11"], abi: none}
"""
    plan = plan_for(project(tmp_path, text, "xd"), ["xd"], "linux-cuda13")
    [v] = plan.variants
    wheel = plan.step(f"{v.id}/wheel")  # an xmake project's wheel, as a CMake one's
    assert isinstance(wheel.payload, payloads.WheelBuild) and wheel.deps == (f"{v.id}/publish",)
    assert wheel.payload.src == f"{v.prefix}/python"
    assert v.status == SKIP and v.reason == "xmake not found"  # the fixture host has none
    configure = plan.step(f"{v.id}/configure").commands[0]
    assert configure[1:3] == ("f", "-P") and "--fast=y" in configure
    assert "--cxxflags=-O2" in configure and "-m" in configure
    assert dict(plan.step(f"{v.id}/configure").env)["XMAKE_ROOT"] == "y"


@pytest.mark.parametrize(("snippet", "message"), [
    ("build: {config_settings: {a: b}}", "build.config_settings is only used with build.system"),
    ("install: {files: [{from: x, to: ../up}]}", "'../up' leaves the install prefix"),
    ("install: {project_rules: false}", "nothing would be installed"),
    ("build: {system: python, env: {X: '${nope}'}}", "unknown substitution ${nope}"),
])
def test_bad_build_settings(tmp_path: Path, snippet: str, message: str) -> None:
    text = 'package: {name: d, version: "1"}\nsource: {path: ../src}\nbackends: {cpu: {}}\n'
    project(tmp_path, text + snippet + "\n", "d")
    with pytest.raises(RecipeError) as e:
        load_recipe(tmp_path / "recipes" / "d.yaml")
    assert message in e.value.render()


@pytest.mark.parametrize(("output", "want"), [
    ("Test project /b\nNo tests were found!!!\n", Counts("ctest")),
    ("    Start 1: a\n1/2 Test #1: a ....   Passed\n2/2 Test #2: b ....***Skipped\n"
     "\n100% tests passed, 0 tests failed out of 2\n", Counts("ctest", 1, 0, 1)),
    ("50% tests passed, 1 tests failed out of 2\n", Counts("ctest", 1, 1, 0)),
    # CTest 4 (pip's cmake, the GPU machine's) says nothing of failures when none failed
    ("1/2 Test #1: a ....   Passed\n2/2 Test #2: b ....***Skipped\n"
     "\n100% tests passed out of 2\n", Counts("ctest", 1, 0, 1)),
    ("100% tests passed out of 7598\n", Counts("ctest", 7598, 0, 0)),
    ("..s\n229 passed, 1 skipped in 12.31s\n", Counts("pytest", 229, 0, 1)),
    ("===== 3 failed, 2 passed, 1 error in 0.5s =====\n", Counts("pytest", 2, 4, 0)),
    ("\nno tests ran in 0.01s\n", Counts("pytest")),
    ("[==========] 5 tests from 2 test suites ran. (1 ms total)\n[  PASSED  ] 4 tests.\n"
     "[  SKIPPED ] 1 test, listed below:\n", Counts("gtest", 4, 0, 1)),
    ("[==========] 0 tests from 0 test suites ran. (0 ms total)\n[  PASSED  ] 0 tests.\n",
     Counts("gtest")),
    ("....\n---\nRan 4 tests in 0.001s\n\nOK (skipped=1)\n", Counts("unittest", 3, 0, 1)),
    ("Ran 0 tests in 0.000s\n\nNO TESTS RAN\n", Counts("unittest")),
    ("hello, builder\n", None),
])
def test_test_counts(output: str, want: Counts | None) -> None:
    assert count(output.splitlines()) == want


def test_preprocessing_is_no_compile_job() -> None:
    from builder.memory.launcher import source_of

    assert source_of(["g++", "-E", "-c", "/s/a.cpp"]) is None  # a compiler cache's first pass
    assert source_of(["g++", "-O2", "-c", "/s/a.cpp", "-o", "a.o"]) == "/s/a.cpp"


def test_wrapper_runs_the_launcher(tmp_path: Path) -> None:
    import subprocess

    from builder.execute.collect import prepare

    (tmp_path / ".builder-state").write_text("")  # a folder builder owns (the writer)
    w = tmp_path / "bin" / "cc"
    prepare(payloads.PrepareBuild(clean=(str(tmp_path / "dist"),), files=(),
                                  wrappers=((str(w), "/bin/echo"),), python=sys.executable))
    assert os.access(w, os.X_OK) and (tmp_path / "dist").is_dir()
    # no broker: the launcher runs the real command with the wrapper's arguments
    out = subprocess.run([str(w), "hello", "-c", "x.c"], capture_output=True, text=True,
                         env={**os.environ, "BUILDER_BROKER": ""}, check=True).stdout
    assert out == "hello -c x.c\n"


def test_verdicts() -> None:
    from builder.execute.testcounts import verdict

    none = ["no tests ran in 0.01s"]
    assert verdict(none, 5, False)[1].startswith("pytest collected no tests")
    assert verdict(none, 5, True)[1] is None  # allowed: a pass
    assert verdict(["No tests were found!!!"], 0, False)[1].startswith("it ran no test")
    assert verdict(["No tests were found!!!"], 0, True)[1] is None
    assert verdict(["2 passed in 0.1s"], 0, False) == (Counts("pytest", 2), None)
    assert verdict(["1 failed in 0.1s"], 1, False)[1] == ""  # its exit status says it
