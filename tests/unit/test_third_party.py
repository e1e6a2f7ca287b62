"""Third-party Conan requirements from system packages, legacy knobs, lockfiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.errors import PlanError
from builder.plan.model import BUILD, SKIP
from builder.resolve.request import OptionOverride
from builder.resolve.system import upstream_version
from builder.workspace.pins import check, lock_data
from tests.unit.test_resolve import plan_for

DEPS = """\
requires:
  conan: [protobuf/3.21.12, {ref: gtest/1.12.1, provider: system}]
  system:
    - packages: [libnuma-dev]
      when: "${options.numa}"
      why: NUMA support
"""


def _with(project: Path, name: str, extra: str) -> None:
    recipe = project / "recipes" / f"{name}.yaml"
    recipe.write_text(recipe.read_text() + extra)


def test_debian_versions() -> None:
    assert upstream_version("3.21.12-3+deb12u1") == "3.21.12"
    assert upstream_version("1:1.2.13.dfsg-1") == "1.2.13.dfsg"
    assert upstream_version("0.6.0-2") == "0.6.0"


def test_system_provider_renders_platform_requires(project: Path) -> None:
    _with(project, "greet", DEPS)
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text().replace(
        "options:\n", "options:\n  numa: {type: bool, default: false}\n"))
    plan = plan_for(project, ["greet"], "linux-cuda13")
    assert plan.variants[0].status == BUILD
    files = dict(plan.steps[0].payload.files)
    profile = next(t for p, t in files.items() if p.endswith("profile"))
    assert "[platform_requires]\nprotobuf/3.21.12\ngtest/1.12.1\n" in profile
    assert "[platform_tool_requires]\nprotobuf/3.21.12\n" in profile
    assert "conan.protobuf/3.21.12" in dict(plan.variants[0].pins)
    numa = plan_for(project, ["greet"], "linux-cuda13",
                    options=(OptionOverride("greet", "numa", "true"),))
    v = numa.variants[0]
    assert v.status == SKIP and "libnuma-dev not installed (NUMA support)" in v.reason
    assert v.fix == "apt-get install libnuma-dev"


def test_missing_or_mismatched_system_packages(project: Path) -> None:
    _with(project, "greet", "requires:\n  conan: [protobuf/3.20.0, zlib/1.2.13]\n")
    v = plan_for(project, ["greet"], "linux-cuda13").variants[0]
    assert v.status == SKIP
    # both problems at once, each with its fix
    assert v.reason == ("system package(s) zlib1g-dev not installed (zlib/1.2.13); "
                        "protobuf/3.20.0: the system has protobuf 3.21.12 (libprotobuf-dev "
                        "3.21.12-3+deb12u1)")
    assert v.fix.startswith("apt-get install zlib1g-dev; require protobuf/3.21.12")
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text().replace("protobuf/3.20.0, ", ""))
    v = plan_for(project, ["greet"], "linux-cuda13").variants[0]
    assert v.reason == "system package(s) zlib1g-dev not installed (zlib/1.2.13)"
    assert v.fix == "apt-get install zlib1g-dev"


def test_remote_provider_needs_a_remote(project: Path) -> None:
    _with(project, "greet", "requires:\n  conan: [{ref: fmt/10.2.1, provider: remote}]\n")
    v = plan_for(project, ["greet"], "linux-cuda13").variants[0]
    assert v.status == SKIP and "--conan-remote" in v.fix
    plan = plan_for(project, ["greet"], "linux-cuda13", conan_remote="team")
    install = plan.step(f"{plan.variants[0].id}/conan-install").commands[0]
    assert install[-2:] == ("-r", "team")


def test_legacy_arch_knob_with_embedded_quotes(project: Path) -> None:
    recipe = project / "recipes" / "vecadd.yaml"
    recipe.write_text(recipe.read_text().replace(
        "    archs: [sm_80, sm_90]", "    archs: [sm_80, sm_90]\n    archs_option: sm") +
        "options:\n  sm: {type: list, default: [], legacy_env: AS_CUDA_SM}\n")
    plan = plan_for(project, ["vecadd"], "linux-cuda13")
    assert plan.variants[0].archs == ("sm_80", "sm_90")
    env_plan = plan_for(project, ["vecadd"], "linux-cuda13",
                        env=(("HOME", "/h"), ("AS_CUDA_SM", "'80;86;89;90a'")))
    v = env_plan.variants[0]
    assert v.archs == ("sm_80", "sm_86", "sm_89", "sm_90a")
    assert any("AS_CUDA_SM is deprecated; use -o vecadd:sm=80;86;89;90a" in n
               for n in env_plan.notes)
    configure = env_plan.step(f"{v.id}/configure").commands[0]
    assert "-DCMAKE_CUDA_ARCHITECTURES=80;86;89;90a" in configure


def test_exact_cuda_pin(project: Path) -> None:
    recipe = project / "recipes" / "vecadd.yaml"
    recipe.write_text(recipe.read_text().replace('nvcc: ">=12.0"', 'nvcc: "${options.cuda}"') +
                      "options:\n"
                      "  cuda: {type: str, default: '>=12.0', legacy_env: AS_CUDA_VERSION}\n")
    assert plan_for(project, ["vecadd"], "linux-cuda13").variants[0].status == BUILD
    pinned = plan_for(project, ["vecadd"], "linux-cuda13",
                      env=(("HOME", "/h"), ("AS_CUDA_VERSION", "12.4")))
    v = pinned.variants[0]
    assert (v.status, v.reason) == (SKIP, "nvcc 13.0.88 (/usr/local/cuda/bin/nvcc) "
                                    "does not satisfy ==12.4.*")


def test_lockfile_refuses_differences(project: Path, tmp_path: Path) -> None:
    plan = plan_for(project, ["app"], "linux-cuda13")
    lock = tmp_path / "builder.workspace.lock"
    lock.write_text(json.dumps(lock_data(plan)))
    check(plan, lock)  # identical: fine
    loud = plan_for(project, ["app"], "linux-cuda13",
                    options=(OptionOverride("greet", "loud", "true"),))
    with pytest.raises(PlanError) as e:
        check(loud, lock)
    assert "greet/cpu-release: option loud: locked 'False', now 'True'" in str(e.value)
    h100 = plan_for(project, ["app"], "h100")
    with pytest.raises(PlanError, match=r"pin toolchain.cxx: locked '12.2.0', now '13.3.0'"):
        check(h100, lock)


@pytest.mark.parametrize("have,wanted,ok", [
    ("1.14.0", "[>=1.12 <2]", True), ("1.11.0", "[>=1.12 <2]", False),
    ("2.0.0", "[>=1.12 <2]", False), ("1.14.0", "[>=1.12, <2]", True),
    ("1.14.2", "[~1.14]", True), ("1.15.0", "[~1.14]", False), ("1.9", "[~1]", True),
    ("1.15.0", "[^1.12]", True), ("2.0", "[^1.12]", False),
    ("1.14.0", "[<1.13 || >=1.14]", True), ("1.13.0", "[<1.13 || >=1.14]", False),
    ("3.21.12", "3.21.12", True), ("3.21.12", "3.21", True), ("3.21.1", "3.21.12", False),
])
def test_system_versions_against_exact_refs_and_conan_ranges(have: str, wanted: str,
                                                             ok: bool) -> None:
    from builder.resolve.system import version_matches

    assert version_matches(have, wanted) is ok


def test_a_version_range_takes_the_systems_version(project: Path) -> None:
    _with(project, "greet", 'requires:\n  conan: ["gtest/[>=1.10 <2]", "protobuf/[~3.21]"]\n')
    plan = plan_for(project, ["greet"], "linux-cuda13")
    v = plan.variants[0]
    assert v.status == BUILD, v.reason
    files = dict(plan.steps[0].payload.files)
    profile = next(t for p, t in files.items() if p.endswith("profile"))
    conanfile = next(t for p, t in files.items() if p.endswith("conanfile.py"))
    # the recipe keeps the range; the profile says what the system provides
    assert "'gtest/[>=1.10 <2]'" in conanfile
    assert "[platform_requires]\ngtest/1.12.1\nprotobuf/3.21.12\n" in profile
    assert "[platform_tool_requires]\nprotobuf/3.21.12\n" in profile
    _with(project, "greet", "")
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text().replace("gtest/[>=1.10 <2]", "gtest/[>=1.13]"))
    v = plan_for(project, ["greet"], "linux-cuda13").variants[0]
    assert v.status == SKIP and "the system has gtest 1.12.1" in v.reason


def test_a_compiler_without_a_shared_libstdcxx_is_refused_for_system_cxx_deps(
        project: Path) -> None:
    """A gcc built without libstdc++.so (the GPU machine's /opt/gcc) links a private copy
    into each shared library; with glog/protobuf from the system that crashed in glog."""
    from dataclasses import replace

    from builder.recipe.recipeset import RecipeSet
    from builder.resolve.request import Request
    from builder.resolve.resolver import resolve
    from builder.workspace.paths import Workspace
    from builder.workspace.state import read_state
    from tests.conftest import host

    facts = host("linux-cuda13")
    static = replace(facts, tools=tuple(replace(t, static_runtime=True) if t.name == "cxx"
                                        else t for t in facts.tools))
    ws = Workspace.at(project)

    def greet(h):  # type: ignore[no-untyped-def]
        rs = RecipeSet.load(ws.recipes_dir)
        roots = rs.select(["greet"], ws.recipes_dir)
        return resolve(roots, rs, Request(env=(("HOME", "/h"),)), h,
                       read_state(ws, rs.closure(roots)), ws).variants[0]

    # without C++ libraries from the system the static runtime is no hazard
    assert greet(static).status == BUILD
    _with(project, "greet", "requires:\n  conan: [glog/0.6.0, protobuf/3.21.12]\n")
    assert greet(facts).status == BUILD
    v = greet(static)
    assert v.status == SKIP and "has no shared libstdc++" in v.reason
    assert "glog, protobuf" in v.reason and "CXX=/usr/bin/g++" in v.fix


@pytest.mark.parametrize("edit,said", [
    (("cxx: [-O2]", "cxx: [-O0]"), "greet/cpu-release: recipe flags changed in"),
    (("backends:\n", 'defines:\n  GREET_X: "${env.GREET_X}"\nbackends:\n'),
     "greet/cpu-release: recipe defines changed in"),
])
def test_lockfile_refuses_a_changed_recipe_input(project: Path, tmp_path: Path,
                                                  edit: tuple[str, str], said: str) -> None:
    """A lockfile pins the compile inputs: a changed flag or define is drift, named."""
    lock = tmp_path / "builder.workspace.lock"
    lock.write_text(json.dumps(lock_data(plan_for(project, ["app"], "linux-cuda13"))))
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text().replace(*edit, 1))
    with pytest.raises(PlanError) as e:
        check(plan_for(project, ["app"], "linux-cuda13",
                       env=(("HOME", "/h"), ("GREET_X", "a"))), lock)
    assert said in str(e.value) and "builder lock" in str(e.value), str(e.value)
    assert "recipe: " not in str(e.value)  # the field says it; not the whole digest too


def test_lockfile_refuses_a_changed_env_value(project: Path, tmp_path: Path) -> None:
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text().replace(
        "backends:\n", 'defines:\n  GREET_X: "${env.GREET_X}"\nbackends:\n', 1))
    lock = tmp_path / "builder.workspace.lock"
    lock.write_text(json.dumps(lock_data(plan_for(project, ["app"], "linux-cuda13",
                                                  env=(("HOME", "/h"), ("GREET_X", "a"))))))
    same = plan_for(project, ["app"], "linux-cuda13", env=(("HOME", "/h"), ("GREET_X", "a")))
    check(same, lock)
    with pytest.raises(PlanError, match=r"greet/cpu-release: \$\{env.GREET_X\} has another "
                                        r"value than when locked"):
        check(plan_for(project, ["app"], "linux-cuda13",
                       env=(("HOME", "/h"), ("GREET_X", "b"))), lock)
