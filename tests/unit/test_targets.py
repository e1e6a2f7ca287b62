"""Target platforms: arm cross-compiled where the cross compiler is, macOS on macOS hosts,
and everywhere else a skip naming the reason and the fix (pure resolve, fixture host facts)."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from builder.backends import platforms as targets
from builder.ci import jobs as cimatrix
from builder.ci import sessions as matrix
from builder.errors import RecipeError, UsageError
from builder.host.facts import HostFacts, ToolInfo
from builder.plan.model import BUILD, SKIP, BuildPlan
from builder.recipe.recipeset import RecipeSet
from builder.resolve.request import Request
from builder.resolve.resolver import resolve
from builder.resolve.system import needed_packages
from builder.util.runner import RecordingRunner
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import FIXTURES, REPO, host

ENV = (("HOME", "/home/user"),)
CROSS_SKIP = "cross-compiled for linux-armv8; run the tests on an arm64 machine"


def plan_with(project: Path, names: list[str], facts: HostFacts, **req: object) -> BuildPlan:
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select(names, ws.recipes_dir)
    req.setdefault("env", ENV)
    return resolve(roots, rs, Request(**req), facts,  # type: ignore[arg-type]
                   read_state(ws, rs.closure(roots)), ws)


def without(facts: HostFacts, *tools: str) -> HostFacts:
    return replace(facts, tools=tuple(t for t in facts.tools if t.name not in tools))


def files_of(plan: BuildPlan, variant: str) -> dict[str, str]:
    files: dict[str, str] = dict(plan.step(f"{variant}/render").payload.files)
    return {Path(p).name: text for p, text in files.items()}


# ---------------------------------------------------------------------------- arm


def test_arm_is_cross_compiled_where_the_cross_compiler_is(project: Path) -> None:
    plan = plan_with(project, ["greetx"], host("linux-cuda13"), backends=("arm",))
    [v] = plan.variants
    assert (v.backend, v.status) == ("arm", BUILD)
    files = files_of(plan, v.id)
    profile, build = files["profile"], files["profile-build"]
    assert "os=Linux\narch=armv8\ncompiler=gcc\ncompiler.version=12\n" in profile
    assert ('tools.build:compiler_executables={"c": "/usr/bin/aarch64-linux-gnu-gcc", '
            '"cpp": "/usr/bin/aarch64-linux-gnu-g++"}') in profile
    assert "tools.cmake.cmaketoolchain:system_name=Linux\n" in profile
    assert "tools.cmake.cmaketoolchain:system_processor=aarch64\n" in profile
    assert "tools.build:sysroot" not in profile  # Debian's cross gcc breaks with --sysroot
    assert "arch=x86_64" in build and '"cpp": "/usr/bin/g++"' in build  # this machine
    install = plan.step(f"{v.id}/conan-install").commands[0]
    pr = install[install.index("-pr:h"):install.index("-pr:h") + 4]
    assert [Path(x).name if "/" in x else x for x in pr] == ["-pr:h", "profile", "-pr:b",
                                                              "profile-build"]
    assert "-pr:a" not in install
    assert "-pr:h" in plan.step(f"{v.id}/export").commands[0]
    # the tests cannot run on this machine: skipped with why, and the build goes on
    test = plan.step(f"{v.id}/test:header")
    assert (test.status, test.reason) == (SKIP, CROSS_SKIP)
    assert plan.step(f"{v.id}/export").deps == (f"{v.id}/stage",)
    assert ("toolchain.aarch64-linux-gnu-g++", "12.2.0") in v.pins


def test_arm_without_the_cross_compiler_is_a_skip_with_the_fix(project: Path) -> None:
    facts = without(host("linux-cuda13"), "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")
    plan = plan_with(project, ["greetx"], facts)
    arm = next(v for v in plan.variants if v.backend == "arm")
    assert arm.status == SKIP
    assert arm.reason == ("arm: cross compiler aarch64-linux-gnu-gcc for linux-armv8 not "
                          "found on this linux-x86_64 host")
    assert arm.fix == "apt-get install gcc-aarch64-linux-gnu g++-aarch64-linux-gnu"
    assert all(s.status == SKIP for s in plan.steps if s.variant == arm.id)
    cpu = next(v for v in plan.variants if v.backend == "cpu")
    assert cpu.status == BUILD  # the other platforms are not held back


def test_arm_builds_natively_on_an_arm64_linux_host(project: Path) -> None:
    facts = replace(without(host("linux-cuda13"), "aarch64-linux-gnu-gcc",
                            "aarch64-linux-gnu-g++"), arch="aarch64")
    plan = plan_with(project, ["greetx"], facts, backends=("arm",))
    [v] = plan.variants
    assert v.status == BUILD
    assert "-pr:a" in plan.step(f"{v.id}/conan-install").commands[0]
    assert plan.step(f"{v.id}/test:header").status == BUILD


def test_cross_key_differs_and_changes_with_the_cross_compiler(project: Path) -> None:
    facts = host("linux-cuda13")
    a = plan_with(project, ["greetx"], facts)
    keys = {v.backend: v.key for v in a.variants}
    assert keys["cpu"] != keys["arm"]
    newer = replace(facts, tools=tuple(replace(t, version="13.1.0") if t.name.startswith(
        "aarch64-") else t for t in facts.tools))
    b = plan_with(project, ["greetx"], newer)
    assert {v.backend: v.key for v in b.variants}["arm"] != keys["arm"]
    assert {v.backend: v.key for v in b.variants}["cpu"] == keys["cpu"]


# ---------------------------------------------------------------------------- macOS


def test_macos_is_skipped_on_linux_and_planned_on_a_mac(project: Path) -> None:
    plan = plan_with(project, ["greetx"], host("linux-cuda13"))
    mac = next(v for v in plan.variants if v.backend == "macos")
    assert (mac.status, mac.reason) == (SKIP, "macos: macOS targets build on a macOS host "
                                              "only")
    assert "macos-14" in mac.fix
    on_mac = plan_with(project, ["greetx"], host("macos-m2"))
    by_backend = {v.backend: v for v in on_mac.variants}
    assert by_backend["macos"].status == BUILD
    install = on_mac.step(f"{by_backend['macos'].id}/conan-install").commands[0]
    assert "-pr:a" in install  # native on Apple silicon
    assert on_mac.step(f"{by_backend['macos'].id}/test:header").status == BUILD
    profile = files_of(on_mac, by_backend["macos"].id)["profile"]
    assert "os=Macos\narch=armv8\ncompiler=apple-clang" in profile
    # and the arm Linux target is a skip there, with why
    assert by_backend["arm"].status == SKIP
    assert by_backend["arm"].reason.startswith("arm: linux-armv8 targets build on a Linux "
                                               "host only")


def test_macos_host_without_xcrun(project: Path) -> None:
    plan = plan_with(project, ["greetx"], without(host("macos-m2"), "xcrun"),
                     backends=("macos",))
    [v] = plan.variants
    assert v.status == SKIP and v.reason == ("macos: xcrun not found (needed to build for "
                                             "macos-armv8)")
    assert v.fix.endswith("xcode-select --install")


def test_backend_named_on_the_command_line(project: Path) -> None:
    with pytest.raises(UsageError, match=r"unknown backend 'vulkan' \(backends: cpu, cuda, "
                                         r"rocm, metal, .*arm"):
        plan_with(project, ["greetx"], host("linux-cuda13"), backends=("vulkan",))
    plan = plan_with(project, ["greetx"], host("linux-cuda13"), backends=("macos",))
    assert [v.backend for v in plan.variants] == ["macos"]


# ---------------------------------------------------------------------------- dependencies


def test_cross_dependency_needs_the_same_target(project: Path) -> None:
    recipe = project / "recipes" / "app.yaml"
    recipe.write_text(recipe.read_text().replace(
        "backends:\n  cpu: {}\n", "backends:\n  cpu: {}\n  arm: {kind: cpu, target: "
        "linux-armv8}\n"))
    plan = plan_with(project, ["app"], host("linux-cuda13"), backends=("arm",))
    app = next(v for v in plan.variants if v.recipe == "app")
    assert app.status == SKIP
    assert app.reason == ("requires greet, which has no arm backend (its cpu build is for "
                          "this host, not linux-armv8)")
    assert "add backends.arm (kind: cpu, target: linux-armv8)" in app.fix
    greet = project / "recipes" / "greet.yaml"
    greet.write_text(greet.read_text().replace(
        "backends:\n  cpu: {}\n", "backends:\n  cpu: {}\n  arm: {kind: cpu, target: "
        "linux-armv8}\n"))
    plan = plan_with(project, ["app"], host("linux-cuda13"), backends=("arm",))
    assert [(v.recipe, v.backend, v.status) for v in plan.variants] == [
        ("greet", "arm", BUILD), ("app", "arm", BUILD)]


# ---------------------------------------------------------------------------- dashinfer


def _dashinfer(project: Path) -> None:
    shutil.copy(REPO / "recipes" / "dashinfer.yaml", project / "recipes")
    shutil.copytree(REPO / "sources" / "dashinfer", project / "sources" / "dashinfer",
                    ignore=shutil.ignore_patterns("__pycache__", "build"))


def test_dashinfer_arm_needs_the_arm64_packages(project: Path) -> None:
    _dashinfer(project)
    facts = host("linux-cuda13")
    plan = plan_with(project, ["dashinfer"], facts)
    by_backend = {v.backend: v for v in plan.variants}
    assert set(by_backend) == {"cpu", "cuda", "arm", "macos"}
    assert by_backend["cpu"].status == BUILD
    arm = by_backend["arm"]
    assert arm.status == SKIP
    assert arm.reason == ("system package(s) libprotobuf-dev:arm64, libgtest-dev:arm64, "
                          "libgoogle-glog-dev:arm64 for linux-armv8 not installed "
                          "(protobuf/3.21.12, gtest/[>=1.12 <2], glog/0.6.0)")
    assert arm.fix == ("dpkg --add-architecture arm64 && apt-get update && apt-get install "
                       "libprotobuf-dev:arm64 libgtest-dev:arm64 libgoogle-glog-dev:arm64")
    assert by_backend["macos"].reason == "macos: macOS targets build on a macOS host only"
    # with the arm64 packages installed (multiarch), arm cross-compiles
    arm64 = [(f"{p}:arm64", v) for p, v in facts.system_packages
             if p != "protobuf-compiler"]
    plan = plan_with(project, ["dashinfer"], replace(
        facts, system_packages=facts.system_packages + tuple(arm64)), backends=("arm",))
    [v] = plan.variants
    assert v.status == BUILD
    assert ("conan.protobuf/3.21.12", "system 3.21.12-3+deb12u1") in v.pins
    profile = files_of(plan, v.id)["profile"]
    assert "[platform_requires]\nprotobuf/3.21.12\ngtest/1.12.1\nglog/0.6.0\n" in profile
    configure = plan.step(f"{v.id}/configure").commands[0]
    assert "-DDASHINFER_PLATFORM=arm" in configure
    assert "-DPYTHON_MODULE_EXTENSION=.cpython-311-aarch64-linux-gnu.so" in configure
    assert {s.id.rsplit("/", 1)[1]: s.status for s in plan.steps if s.kind == "test"} == {
        "test:ctest": SKIP, "test:python": SKIP}
    wheel = plan.step(f"{v.id}/wheel")
    assert wheel.payload.wheel.endswith("cp311-cp311-linux_aarch64.whl")
    # not repaired here, and the plan says why (an index would refuse linux_aarch64)
    assert not wheel.commands and "cross-compiled for linux-armv8" in wheel.payload.note


def test_probe_asks_for_the_target_architecture_packages() -> None:
    rs = RecipeSet.load(REPO / "recipes")
    names = needed_packages([rs.by_name["dashinfer"]])
    assert {"libprotobuf-dev", "libprotobuf-dev:arm64", "protobuf-compiler",
            "libgtest-dev:arm64", "libgoogle-glog-dev:arm64"} <= set(names)
    assert "protobuf-compiler:arm64" not in names  # protoc runs on the build machine


# ---------------------------------------------------------------------------- validation


def _recipe(tmp_path: Path, backends: str, name: str = "demo") -> Path:
    d = tmp_path / "recipes"
    d.mkdir(exist_ok=True)
    (tmp_path / "src").mkdir(exist_ok=True)
    f = d / f"{name}.yaml"
    f.write_text(f'package: {{name: {name}, version: "1.0"}}\nsource: {{path: ../src}}\n'
                 f"backends:\n{backends}")
    return f


def _errors(tmp_path: Path) -> str:
    with pytest.raises(RecipeError) as e:
        RecipeSet.load(tmp_path / "recipes")
    return e.value.render()


def test_named_backend_needs_a_kind(tmp_path: Path) -> None:
    _recipe(tmp_path, "  arm: {target: linux-armv8}\n")
    out = _errors(tmp_path)
    assert "demo.yaml:4:3: backends.arm: unknown name 'arm': not a built-in backend" in out
    assert "needs a `kind`" in out


def test_kind_must_agree_with_a_builtin_name(tmp_path: Path) -> None:
    _recipe(tmp_path, "  cuda: {kind: cpu}\n")
    assert "kind cpu contradicts the name 'cuda'" in _errors(tmp_path)


def test_unknown_target_did_you_mean(tmp_path: Path) -> None:
    _recipe(tmp_path, "  arm: {kind: cpu, target: linux-arm64}\n")
    out = _errors(tmp_path)
    assert "demo.yaml:4:28: backends.arm.target: unknown target platform 'linux-arm64'" in out
    assert "did you mean 'linux-armv8'?" in out


def test_a_backend_name_means_one_thing_in_every_recipe(tmp_path: Path) -> None:
    _recipe(tmp_path, "  arm: {kind: cpu, target: linux-armv8}\n", "one")
    _recipe(tmp_path, "  arm: {kind: cpu, target: macos-armv8}\n", "two")
    out = _errors(tmp_path)
    assert ("backends.arm: backend 'arm' is kind cpu, target macos-armv8 here but kind cpu, "
            "target linux-armv8 in") in out


def test_every_target_is_well_formed() -> None:
    for name in targets.names():
        t = targets.get(name)
        assert t is not None and t.os in ("linux", "macos", "windows")
        assert t.conan_os and t.system_name and t.machine
        assert t.unavailable[0] and t.unavailable[1], name


# ---------------------------------------------------------------------------- matrix


def test_sessions_and_runners_of_the_target_backends() -> None:
    recipes = RecipeSet.load(FIXTURES / "project" / "recipes").recipes
    s = {x.name: x for x in matrix.sessions(recipes, "3.11")}
    arm, mac = s["build-arm-3.11"], s["build-macos-3.11"]
    assert (arm.kind, arm.target, arm.recipes) == ("cpu", "linux-armv8", ("greetx",))
    assert (mac.kind, mac.target) == ("cpu", "macos-armv8")
    assert s["build-cpu-3.11"].kind == ""  # a built-in backend keeps the plain form
    linux, macos = host("linux-cuda13"), host("macos-m2")
    assert matrix.session_unavailable(arm, linux) is None
    why = matrix.session_unavailable(mac, linux)
    assert why is not None and why.reason == "macos: macOS targets build on a macOS host only"
    assert matrix.session_unavailable(mac, macos) is None
    nocross = without(linux, "aarch64-linux-gnu-g++")
    why = matrix.session_unavailable(arm, nocross)
    assert why is not None and "aarch64-linux-gnu-g++" in why.reason
    jobs = {j.session: j for j in cimatrix.ci_matrix(
        [r for r in recipes if r.name == "greetx"]).jobs}
    assert jobs["build-macos-3.11"].runner.runs_on == "macos-14"
    arm_runner = jobs["build-arm-3.11"].runner
    assert arm_runner.runs_on == "ubuntu-latest"
    assert any("g++-aarch64-linux-gnu" in line for line in arm_runner.setup)
    assert matrix.unknown_session_hint("build-arm-3.8", list(s.values())) == (
        "build-arm-3.8: no recipe supports arm with Python 3.8 (sessions for arm: "
        "build-arm-3.11)")


def test_host_facts_round_trip_keeps_the_cross_compilers() -> None:
    facts = host("linux-cuda13")
    again = HostFacts.from_json(json.loads(json.dumps(facts.to_json())))
    assert again.tool("aarch64-linux-gnu-g++") == ToolInfo(
        "aarch64-linux-gnu-g++", "/usr/bin/aarch64-linux-gnu-g++", "12.2.0")


def test_probe_tells_native_and_foreign_architecture_packages_apart(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from builder.host import probe as host_mod

    def fake_capture(argv: list[str], timeout: float = 20.0) -> tuple[int, str]:
        if argv[-1] == "--print-architecture":
            return 0, "amd64\n"
        return 1, ("libprotobuf-dev amd64 install ok installed 3.21.12-3+deb12u1\n"
                   "libgtest-dev arm64 install ok installed 1.12.1-0.2\n"
                   "protobuf-compiler amd64 install ok installed 3.21.12-3+deb12u1\n"
                   "libgoogle-glog-dev arm64 deinstall ok config-files 0.6.0-2\n"
                   "dpkg-query: no packages found matching libprotobuf-dev:arm64\n")

    monkeypatch.setattr(host_mod, "capture", fake_capture)
    monkeypatch.setattr("builder.host.probe.shutil.which", lambda name: f"/usr/bin/{name}")
    got = dict(host_mod._probe_system_packages(host_mod._ProbeCache(None), (
        "libgtest-dev", "libgtest-dev:arm64", "libgoogle-glog-dev:arm64", "libprotobuf-dev",
        "libprotobuf-dev:arm64", "protobuf-compiler")))
    # libgtest-dev is only installed for arm64: not a native package
    assert got == {"libprotobuf-dev": "3.21.12-3+deb12u1", "libgtest-dev:arm64": "1.12.1-0.2",
                   "protobuf-compiler": "3.21.12-3+deb12u1"}


# ---------------------------------------------------------------------------- command line


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS builds the macos target")
def test_cli_names_the_platform_it_cannot_build(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    facts = str(FIXTURES / "hosts" / "linux-cuda13.json")
    r = cli("plan", "greetx", "--backend", "macos", "--host-facts", facts, cwd=project)
    assert r.code == 0
    assert "skip: macos: macOS targets build on a macOS host only" in r.out
    assert "fix:  run the build on a macOS machine or runner" in r.out
    recorder = RecordingRunner()
    r = cli("build", "greetx", "--backend", "macos", cwd=project, runner=recorder)
    assert r.code == 4 and recorder.calls == []
    assert "cannot build greetx/macos-release-" in r.err
    assert "macOS targets build on a macOS host only\n  fix: run the build on a macOS" in r.err
    # skipping it leaves nothing to build: still exit 4 (a CI job must not pass having
    # built nothing), naming the variant and why
    r = cli("build", "greetx", "--backend", "macos", "--skip-unsupported", cwd=project,
            runner=recorder)
    assert r.code == 4 and recorder.calls == []
    assert "nothing to build: every selected variant is skipped; greetx/macos-release-" \
        in r.err
