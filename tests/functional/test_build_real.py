"""Real Conan 2 + CMake + Ninja (+ nvcc) builds of the fixture recipes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from builder.util.files import file_sha256
from builder.util.runner import RecordingRunner
from tests.functional.conftest import need

pytestmark = pytest.mark.functional


def installed(project: Path, recipe: str) -> list[Path]:
    return sorted((project / ".builder" / "install" / recipe).glob("*/manifest.json"))


def test_two_recipes_through_the_conan_cache(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++")
    r = cli("build", "app", cwd=project)
    assert r.code == 0, r.out + r.err
    [manifest] = installed(project, "app")
    data = json.loads(manifest.read_text())
    exe = manifest.parent / "bin" / "app"
    assert subprocess.run([exe, "you"], capture_output=True, text=True,
                          check=True).stdout == "hello, you\n"
    for f in data["files"]:  # the manifest describes exactly what is on disk
        assert file_sha256(manifest.parent / f["path"]) == f["sha256"]
    assert data["toolchains"]["conan"].startswith("2.")
    # greet is in the project-local Conan cache, not ~/.conan2
    conan_home = project / ".builder" / "conan"
    listing = subprocess.run(["conan", "list", "greet/1.0.0:*", "--format=json"],
                             env={"CONAN_HOME": str(conan_home), "PATH": _path()},
                             capture_output=True, text=True, check=True).stdout
    assert "greet/1.0.0" in listing

    # Nothing changed: no command is started at all.
    recorder = RecordingRunner()
    r2 = cli("build", "app", cwd=project, runner=recorder)
    assert r2.code == 0 and recorder.calls == [] and "nothing to do" in r2.out

    # An option of the dependency changes both packages and the program's output.
    r3 = cli("build", "app", "-o", "greet:loud=true", cwd=project)
    assert r3.code == 0, r3.out + r3.err
    loud = [m for m in installed(project, "app") if m != manifest]
    assert len(loud) == 1
    assert subprocess.run([loud[0].parent / "bin" / "app", "you"], capture_output=True,
                          text=True, check=True).stdout == "HELLO, you!\n"

    # A source change rebuilds.
    src = project / "sources" / "greet" / "src" / "greet.cpp"
    src.write_text(src.read_text().replace('"hello, "', '"hi, "'))
    r4 = cli("build", "app", cwd=project)
    assert r4.code == 0 and "configure" in r4.out


def test_a_test_edit_reruns_the_tests_only(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Editing a test command changes the variant key, not the compile key: the next
    build runs that test against the published install and compiles nothing."""
    need("conan", "cmake", "ninja", "g++")
    assert cli("build", "app", cwd=project).code == 0
    [manifest] = installed(project, "app")
    before = manifest.read_text()
    recipe = project / "recipes" / "app.yaml"
    recipe.write_text(recipe.read_text().replace('"tester"]', '"edited-test"]'))
    r = cli("build", "app", cwd=project)
    assert r.code == 0, r.out + r.err
    record = json.loads((project / ".builder" / "last-build.json").read_text())
    status = {s["id"].rsplit("/", 1)[1]: s["status"] for s in record["steps"]
              if s["id"].startswith("app/")}
    assert [n for n, st in status.items() if st == "done"] == ["test:run"], status
    for step in ("render", "conan-install", "configure", "build", "stage", "export",
                 "publish"):
        assert status[step] == "cached", (step, status)
    assert all(s["status"] == "cached" for s in record["steps"]
               if s["id"].startswith("greet/"))
    log = next((project / ".builder" / "logs").glob("app_*test_run*.log"))
    assert "hello, edited-test" in log.read_text()  # the new command ran, on the install
    assert installed(project, "app") == [manifest] and manifest.read_text() == before
    recorder = RecordingRunner()  # and now it is up to date
    again = cli("build", "app", cwd=project, runner=recorder)
    assert again.code == 0 and recorder.calls == [] and "nothing to do" in again.out
    # a define is compiled: it rebuilds (into another install folder)
    recipe.write_text(recipe.read_text().replace("backends:\n", 'defines:\n  APP_X: "1"\n'
                                                 "backends:\n"))
    r = cli("build", "app", cwd=project)
    assert r.code == 0 and "configure" in r.out, r.out
    assert len(installed(project, "app")) == 2


def _path() -> str:
    import os

    return os.environ["PATH"]


def test_failed_compile_reports_and_publishes_nothing(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++")
    src = project / "sources" / "greet" / "src" / "greet.cpp"
    src.write_text(src.read_text() + "\nthis is not C++;\n")
    r = cli("build", "greet", cwd=project)
    assert r.code == 1
    assert "/build failed (exit code 1)" in r.err and "greet.cpp" in r.err
    assert installed(project, "greet") == []


def test_cuda_fixture_with_nvcc(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "nvcc")
    r = cli("build", "vecadd", cwd=project)
    assert r.code == 0, r.out + r.err
    [manifest] = installed(project, "vecadd")
    data = json.loads(manifest.read_text())
    assert data["archs"] == ["sm_80", "sm_90"]
    lib = manifest.parent / "lib" / "libvecadd.so"
    # both archs are embedded in the fat binary (its entries compressed: read, not grepped)
    from builder.wheels.fatbin import manifest

    found = manifest(lib.read_bytes())
    assert found is not None and {80, 90} <= set(found.sass), found


def test_per_arch_kernel_cache(project: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    need("nvcc")
    root = tmp_path / "kroot"
    r = cli("build", "kern", "-o", f"root={root}", cwd=project)
    assert r.code == 0, r.out + r.err
    tree = root / "cuda"
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*.ptx")) == [
        "scale/sm_75.ptx", "scale/sm_80.ptx", "tile/sm_80.ptx"]
    manifest = json.loads((tree / "manifest.json").read_text())
    a = manifest["artifacts"][0]
    assert a["toolchain"].startswith("nvcc ") and a["ptx_isa"] and a["min_driver"]
    # the driver the PTX itself needs (its .version), read at publish time
    assert a["min_driver_cuda"] and a["min_driver_why"] == [f"PTX ISA {a['ptx_isa']}"], a
    assert a["sha256"] == file_sha256(tree / a["path"])

    recipe = project / "recipes" / "kern.yaml"
    recipe.write_text(recipe.read_text().replace("[sm_75, sm_80]", "[sm_80, sm_90]"))
    r2 = cli("build", "kern", "-o", f"root={root}", cwd=project)
    assert r2.code == 0, r2.out + r2.err
    ran = [line.split()[-2] for line in r2.out.splitlines() if " done " in line]
    assert sorted(x.rsplit("/", 1)[1] for x in ran) == [
        "kernel:scale:sm_90", "kernel:tile:sm_90", "publish"]
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*.ptx")) == [
        "scale/sm_80.ptx", "scale/sm_90.ptx", "tile/sm_80.ptx", "tile/sm_90.ptx"]


def test_a_kernel_is_compiled_again_only_when_what_it_read_changed(project: Path, cli,  # type: ignore[no-untyped-def]
                                                                   tmp_path: Path) -> None:
    need("nvcc")
    src = project / "sources" / "kern"
    (src / "tile_width.h").write_text("#define TILE_SHIFT 1\n")
    tile = src / "tile.cu"
    tile.write_text('#include "tile_width.h"\n' + tile.read_text().replace(
        "out[i] = __ldg(in + i);", "out[i] = __ldg(in + i) * (1 << TILE_SHIFT);"))
    root = tmp_path / "kroot"

    def compiled() -> list[str]:
        r = cli("build", "kern", "-o", f"root={root}", cwd=project)
        assert r.code == 0, r.out + r.err
        return sorted(line.split()[-2].rsplit("/", 1)[1] for line in r.out.splitlines()
                      if " done " in line and "/kernel:" in line)

    assert compiled() == ["kernel:scale:sm_75", "kernel:scale:sm_80", "kernel:tile:sm_80"]
    ptx = root / "cuda" / "tile" / "sm_80.ptx"
    before = ptx.read_text()
    # a file of the folder that no CUDA kernel reads: nothing is compiled
    (src / "scale.hip").write_text((src / "scale.hip").read_text() + "// edited\n")
    assert compiled() == []
    # the header only tile includes: tile alone is compiled, and the tree has its new code
    (src / "tile_width.h").write_text("#define TILE_SHIFT 3\n")
    assert compiled() == ["kernel:tile:sm_80"]
    assert ptx.read_text() != before
    (src / "tile_width.h").write_text("#define TILE_SHIFT 1\n")  # back: found again
    assert compiled() == []
    assert ptx.read_text() == before


def test_failed_kernel_compile_yields_no_artifact(project: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    need("nvcc")
    src = project / "sources" / "kern" / "tile.cu"
    src.write_text(src.read_text() + "\nsyntax error here\n")
    root = tmp_path / "kroot"
    r = cli("build", "kern", "-o", f"root={root}", cwd=project)
    assert r.code == 1 and "kernel:tile:sm_80 failed" in r.err
    assert not (root / "cuda").exists()
    leftovers = list((project / ".builder" / "kernels").glob("*.partial"))
    assert leftovers == []


def test_generic_precompiled_headers(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++")
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text() + "memory:\n  pch:\n    enabled: true\n"
                      "    headers: ['<string>', '<vector>']\n")
    r = cli("build", "greet", cwd=project)
    assert r.code == 0, r.out + r.err
    pch = list((project / ".builder" / "build" / "greet").glob("*/cmake/**/cmake_pch.hxx"))
    assert pch and "#include <vector>" in pch[0].read_text()


def test_compiler_cache_chained_with_the_memory_launcher(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++", "ccache")
    r = cli("build", "app", "--compiler-cache", "ccache", cwd=project)
    assert r.code == 0, r.out + r.err
    assert "compiler cache: 0 hit(s), 2 miss(es)" in r.out
    for sub in ("build", "stage", "install"):
        shutil.rmtree(project / ".builder" / sub)
    again = cli("build", "app", "--compiler-cache", "ccache", cwd=project)
    assert again.code == 0 and "compiler cache: 2 hit(s), 0 miss(es)" in again.out
    [report] = (project / ".builder" / "reports").glob("greet_*build.jobs.json")
    assert json.loads(report.read_text())["compiler_cache"] == {"hits": 1, "misses": 0,
                                                                 "remote_hits": 0}
