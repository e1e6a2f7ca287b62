"""The resolver: pure, deterministic, golden-tested."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from builder.errors import UnsupportedError, UsageError
from builder.plan.model import BUILD, CACHED, SKIP, BuildPlan
from builder.recipe.recipeset import RecipeSet
from builder.resolve.request import OptionOverride, Request
from builder.resolve.resolver import resolve
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import REPO, host

GOLDEN = REPO / "tests" / "golden"
ENV = (("HOME", "/home/user"),)


def plan_for(project: Path, names: list[str], facts: str, **req: object) -> BuildPlan:
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select(names, ws.recipes_dir)
    req.setdefault("env", ENV)
    request = Request(**req)  # type: ignore[arg-type]
    return resolve(roots, rs, request, host(facts), read_state(ws, rs.closure(roots)), ws)


def normalized(plan: BuildPlan, project: Path) -> str:
    text = json.dumps(plan.to_json(), indent=1, sort_keys=True)
    return text.replace(str(project.resolve()), "$PROJECT") + "\n"


@pytest.mark.parametrize("facts", ["linux-cuda13", "h100", "macos-m2"])
def test_golden_plans(project: Path, facts: str, update_goldens: bool) -> None:
    plan = plan_for(project, ["app", "vecadd", "kern"], facts)
    got = normalized(plan, project)
    golden = GOLDEN / f"plan-{facts}.json"
    if update_goldens:
        golden.write_text(got)
    assert golden.exists(), "run pytest --update-goldens once to create the golden file"
    assert got == golden.read_text(), f"plan changed; review and run --update-goldens ({golden})"


def test_resolve_is_pure_and_round_trips(project: Path) -> None:
    a = plan_for(project, ["app"], "linux-cuda13")
    b = plan_for(project, ["app"], "linux-cuda13")
    assert a == b
    assert BuildPlan.from_json(json.loads(json.dumps(a.to_json()))) == a


def test_dependency_order_and_conan_wiring(project: Path) -> None:
    plan = plan_for(project, ["app"], "linux-cuda13")
    assert [v.recipe for v in plan.variants] == ["greet", "app"]
    app = plan.variants[1]
    render = plan.step(f"{app.id}/render")
    assert render.deps == (f"{plan.variants[0].id}/publish",)
    conanfile = next(t for p, t in dict(render.payload.files).items()
                     if p.endswith("conanfile.py"))
    assert "requires = ('greet/1.0.0',)" in conanfile
    # the option values, the dependency's pinned to the variant built first, are given
    # on the command line: one conanfile (one recipe revision) serves every variant
    greet = plan.variants[0]
    install = plan.step(f"{app.id}/conan-install").commands[0]
    assert "greet/*:loud=False" in install and f"greet/*:builder_key={greet.compile_key}" in install
    assert f"&:builder_key={app.compile_key}" in install
    other = plan_for(project, ["app"], "linux-cuda13", options=(
        OptionOverride("greet", "loud", "true"),))
    files = dict(other.step(f"{other.variants[1].id}/render").payload.files)
    assert next(t for p, t in files.items() if p.endswith("conanfile.py")) == conanfile


def test_option_override_changes_keys_of_dependents(project: Path) -> None:
    base = plan_for(project, ["app"], "linux-cuda13")
    loud = plan_for(project, ["app"], "linux-cuda13",
                    options=(OptionOverride("greet", "loud", "yes"),))
    assert base.variants[0].key != loud.variants[0].key
    assert base.variants[1].key != loud.variants[1].key
    configure = loud.step(f"{loud.variants[0].id}/configure")
    assert "-DGREET_LOUD=ON" in configure.commands[0]


def test_bad_option_values(project: Path) -> None:
    with pytest.raises(UsageError, match="option 'loud' is a bool"):
        plan_for(project, ["greet"], "linux-cuda13",
                 options=(OptionOverride("greet", "loud", "maybe"),))
    with pytest.raises(UsageError, match="has no option 'volume'"):
        plan_for(project, ["greet"], "linux-cuda13",
                 options=(OptionOverride("greet", "volume", "3"),))


def test_cached_when_installed(project: Path) -> None:
    plan = plan_for(project, ["greet"], "linux-cuda13")
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    state = replace(read_state(ws, rs.recipes),
                    installed=frozenset({plan.variants[0].compile_key}))
    again = resolve(rs.select(["greet"], ws.recipes_dir), rs, Request(env=ENV),
                    host("linux-cuda13"), state, ws)
    assert again.variants[0].status == CACHED
    assert {s.status for s in again.steps} == {CACHED}


def test_installed_compile_key_leaves_only_the_tests(project: Path) -> None:
    """An install under the compile key makes every compile step up to date; tests run
    (against the install) until one passed with the variant key, or the install was
    published with it."""
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select(["app"], ws.recipes_dir)
    first = plan_for(project, ["app"], "linux-cuda13", backends=("cpu",))
    installed = frozenset(v.compile_key for v in first.variants)
    state = replace(read_state(ws, rs.recipes), installed=installed)
    plan = resolve(roots, rs, Request(env=ENV, backends=("cpu",)), host("linux-cuda13"),
                   state, ws)
    app = next(v for v in plan.variants if v.recipe == "app")
    greet = next(v for v in plan.variants if v.recipe == "greet")
    assert (greet.status, app.status) == (CACHED, BUILD)
    todo = [s for s in plan.steps if s.status == BUILD]
    assert [s.id.rsplit("/", 1)[1] for s in todo] == ["test:run"]
    assert todo[0].commands[0][0] == f"{app.prefix}/bin/app"  # the stage is published
    test_hash = todo[0].inputs_hash
    for done in (test_hash, app.key):
        again = resolve(roots, rs, Request(env=ENV, backends=("cpu",)), host("linux-cuda13"),
                        replace(state, done=frozenset({done})), ws)
        assert {s.status for s in again.steps} == {CACHED}
        assert {v.status for v in again.variants} == {CACHED}


def test_skip_has_reason_and_fix(project: Path) -> None:
    plan = plan_for(project, ["vecadd"], "macos-m2")
    v = plan.variants[0]
    assert (v.status, v.reason) == (SKIP, "cuda: CUDA is not available on macOS")
    assert all(s.status == SKIP for s in plan.steps)
    # the plan still shows the exact commands
    assert plan.step(f"{v.id}/configure").commands[0][1:3] == ("-S", str(
        (project / "sources" / "vecadd").resolve()))


def test_unsupported_arch_is_located_error_or_visible_skip(project: Path) -> None:
    recipe = project / "recipes" / "kern.yaml"
    recipe.write_text(recipe.read_text().replace("[sm_75, sm_80]", "[sm_70, sm_75, sm_80]"))
    with pytest.raises(UnsupportedError) as e:
        plan_for(project, ["kern"], "linux-cuda13")
    text = e.value.render()
    assert "kern.yaml:15:13: backends.cuda.archs[0]: sm_70: not supported by nvcc 13.0" in text
    assert "--skip-unsupported" in text
    plan = plan_for(project, ["kern"], "linux-cuda13", skip_unsupported=True)
    skipped = [s for s in plan.steps if s.status == SKIP]
    assert [s.id.rsplit("/", 1)[1] for s in skipped] == ["kernel:scale:sm_70"]


def test_per_kernel_min_arch_and_layout(project: Path) -> None:
    plan = plan_for(project, ["kern"], "linux-cuda13")
    ids = [s.id.rsplit("/", 1)[1] for s in plan.steps]
    assert ids == ["kernel:scale:sm_75", "kernel:scale:sm_80", "kernel:tile:sm_80", "publish"]
    publish = plan.steps[-1]
    paths = [a["path"] for a in publish.payload.artifacts]
    assert paths == ["cuda/scale/sm_75.ptx", "cuda/scale/sm_80.ptx", "cuda/tile/sm_80.ptx"]
    assert publish.payload.root == "/home/user/.kern-kernels"


def test_adding_an_arch_keeps_the_other_artifact_keys(project: Path) -> None:
    before = plan_for(project, ["kern"], "linux-cuda13")
    recipe = project / "recipes" / "kern.yaml"
    recipe.write_text(recipe.read_text().replace("[sm_75, sm_80]", "[sm_75, sm_80, sm_90]"))
    after = plan_for(project, ["kern"], "linux-cuda13")
    keys_before = {s.id.rsplit("/", 1)[1]: s.inputs_hash for s in before.steps if
                   s.kind == "kernel"}
    keys_after = {s.id.rsplit("/", 1)[1]: s.inputs_hash for s in after.steps if
                  s.kind == "kernel"}
    assert {k: keys_after[k] for k in keys_before} == keys_before
    assert set(keys_after) - set(keys_before) == {"kernel:scale:sm_90", "kernel:tile:sm_90"}


def test_python_abi_none_builds_once_for_every_python(project: Path) -> None:
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text() + 'python:\n  versions: ["3.10", "3.11", "3.12"]\n'
                      "test:\n  - name: import\n    run: ['${python}', -c, 'print(1)']\n")
    plan = plan_for(project, ["greet"], "linux-cuda13", pythons=("all",))
    assert len(plan.variants) == 1 and plan.variants[0].python == ""
    tests = [s.id.rsplit("/", 1)[1] for s in plan.steps if s.kind == "test"]
    assert tests == ["test:import@py3.10", "test:import@py3.11", "test:import@py3.12"]
    builds = [s for s in plan.steps if s.kind == "build"]
    assert len(builds) == 1 and builds[0].status == BUILD


def test_python_abi_cpython_builds_per_python(project: Path) -> None:
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text() +
                      'python:\n  versions: ["3.11", "3.12"]\n  abi: cpython\n')
    plan = plan_for(project, ["greet"], "linux-cuda13", pythons=("all",))
    assert [v.python for v in plan.variants] == ["3.11", "3.12"]
    configure = plan.step(f"{plan.variants[1].id}/configure").commands[0]
    assert "-DPython_EXECUTABLE=/opt/python/3.12.1/bin/python3.12" in configure


def test_missing_python_requirement_is_a_skip_with_the_install_command(project: Path) -> None:
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text() + "requires:\n  python: ['torch>=2.0']\n"
                      'python:\n  versions: ["3.12"]\n')
    plan = plan_for(project, ["greet"], "linux-cuda13")
    v = plan.variants[0]
    assert v.status == SKIP
    assert v.reason.startswith("torch is not installed for Python 3.12")
    # a fix that does what it says: the interpreter that has torch, else PyTorch's CPU index
    # (PyPI's own Linux wheel is the multi-GB CUDA build)
    assert v.fix == ("--python 3.11 (/opt/python/3.11.7/bin/python3.11 has them); or "
                     "/opt/python/3.12.1/bin/python3.12 -m pip install 'torch>=2.0' "
                     "--index-url https://download.pytorch.org/whl/cpu")
    old = plan_for(project, ["greet"], "h100", pythons=("3.12",))
    assert old.variants[0].status == BUILD  # torch 2.11 satisfies >=2.0


def test_everything_missing_is_named_at_once(project: Path) -> None:
    """Python packages, a too-old tool and system packages: one skip naming all of them, with
    one fix line that installs all of them."""
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text().replace("  cpu: {}", "  cpu:\n    tools:\n"
                                                 "      cmake: '>=3.28'") +
                      "requires:\n  python: ['numpy', 'pybind11>=2.10']\n"
                      "  conan: [zlib/1.2.13, protobuf/3.21.12, eigen/3.4.0]\n"
                      "  system:\n    - packages: [libnuma-dev]\n      why: NUMA\n"
                      'python:\n  versions: ["3.12"]\n')
    plan = plan_for(project, ["greet"], "linux-cuda13", backends=("cpu",))
    v = plan.variants[0]
    assert v.status == SKIP
    assert "cmake 3.25.1 (/usr/bin/cmake) does not satisfy >=3.28" in v.reason
    assert "python3 -m pip install 'cmake>=3.28'" in v.fix
    assert "system package(s) zlib1g-dev, libeigen3-dev, libnuma-dev not installed " \
           "(zlib/1.2.13, eigen/3.4.0, NUMA)" in v.reason  # protobuf is installed there
    assert "apt-get install zlib1g-dev libeigen3-dev libnuma-dev" in v.fix
    assert "numpy, pybind11 are not installed for Python 3.12" in v.reason
    assert "python3.12 -m pip install numpy 'pybind11>=2.10'" in v.fix


def test_python_independent_variant_is_one_for_every_python(project: Path) -> None:
    """`plan --all` and `plan greet` plan the same abi: none variant (built with the default
    interpreter, which has torch); a test Python without torch skips its own test only."""
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text() + "requires:\n  python: ['torch>=2.0']\n"
                      'python:\n  versions: ["3.10", "3.11", "3.12"]\n  abi: none\n'
                      "test:\n  - name: py\n    run: ['${python}', '-c', 'import torch']\n")
    one = plan_for(project, ["greet"], "linux-cuda13")
    every = plan_for(project, ["greet"], "linux-cuda13", pythons=("all",))
    assert [v.id for v in one.variants] == [v.id for v in every.variants]
    assert every.variants[0].status == BUILD
    tests = {s.id.rsplit("/", 1)[1]: s for s in every.steps if s.kind == "test"}
    assert tests["test:py@py3.11"].status == BUILD
    assert tests["test:py@py3.12"].status == SKIP
    assert tests["test:py@py3.12"].reason.startswith("torch is not installed for Python 3.12")
    publish = next(s for s in every.steps if s.kind == "publish")
    assert publish.status == BUILD  # another Python's missing torch does not hold it back


def test_cmake_arch_left_out_is_said(project: Path) -> None:
    recipe = project / "recipes" / "vecadd.yaml"
    recipe.write_text(recipe.read_text().replace("archs: [sm_80, sm_90]",
                                                 "archs: [sm_70, sm_80, sm_90]"))
    plan = plan_for(project, ["vecadd"], "linux-cuda13", skip_unsupported=True)
    assert plan.variants[0].archs == ("sm_80", "sm_90")
    assert any(n.startswith("vecadd cuda: left out by --skip-unsupported: sm_70") and
               "fix:" in n for n in plan.notes), plan.notes


def test_kernel_formats_one_step_each(project: Path) -> None:
    recipe = project / "recipes" / "kern.yaml"
    recipe.write_text(recipe.read_text().replace("archs: [sm_75, sm_80]",
                                                 "archs: [sm_75, sm_80]\n"
                                                 "    formats: [ptx, cubin, fatbin]"))
    plan = plan_for(project, ["kern"], "linux-cuda13")
    steps = {s.id.rsplit("/", 1)[1]: s for s in plan.steps if s.kind == "kernel"}
    assert len(steps) == 9
    assert steps["kernel:scale:sm_80:cubin"].commands[0][1:3] == ("-cubin", "-arch=sm_80")
    fat = steps["kernel:tile:sm_80:fatbin"].commands[0]
    assert fat[1:4] == ("-fatbin", "-gencode", "arch=compute_80,code=[sm_80,compute_80]")
    paths = sorted(a["path"] for a in plan.steps[-1].payload.artifacts)
    assert "cuda/tile/sm_80.fatbin" in paths and "cuda/scale/sm_75.cubin" in paths


def test_torch_cuda_build_without_a_cuda_toolkit(project: Path) -> None:
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text() + "requires:\n  python: ['torch>=2.0']\n"
                      'python:\n  versions: ["3.12"]\n')
    assert plan_for(project, ["greet"], "h100").variants[0].status == BUILD  # has nvcc
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    h = host("h100")
    no_nvcc = replace(h, tools=tuple(t for t in h.tools if t.name != "nvcc"))
    plan = resolve(rs.select(["greet"], ws.recipes_dir), rs, Request(env=ENV), no_nvcc,
                   read_state(ws, rs.recipes), ws)
    v = plan.variants[0]
    assert v.status == SKIP
    assert "torch 2.11.0+cu130 for Python 3.12" in v.reason and "is a CUDA build" in v.reason
    # `torch>=2.0` would be "already satisfied" by the CUDA build: the fix pins the CPU one
    assert v.fix == ("/usr/bin/python3.12 -m pip install torch==2.11.0+cpu --index-url "
                     "https://download.pytorch.org/whl/cpu")


def test_recipe_default_compiler_cache_and_its_override(project: Path) -> None:
    recipe = project / "recipes" / "greet.yaml"
    plain = plan_for(project, ["greet"], "linux-cuda13")
    text = recipe.read_text()
    assert "build:" not in text
    recipe.write_text(text + "build:\n  compiler_cache: ccache\n")
    cached = plan_for(project, ["greet"], "linux-cuda13")
    off = plan_for(project, ["greet"], "linux-cuda13", compiler_cache="none")

    def build_env(p: BuildPlan) -> dict[str, str]:
        return dict(p.step(f"{p.variants[0].id}/build").env)

    assert "CCACHE_DIR" in build_env(cached) and "CCACHE_DIR" not in build_env(off)
    configure = " ".join(cached.step(f"{cached.variants[0].id}/configure").commands[0])
    assert "builder.memory.launcher;" in configure and "ccache" in configure
    # how it is compiled, not what: the variant key (and install folder) stay the same
    assert plain.variants[0].key == cached.variants[0].key == off.variants[0].key
