"""The minimum driver of CUDA binaries (builder.wheels.driver), read from real fatbins that
nvcc compiles here, and nvcc's --compress-mode as a keyed recipe setting that the plan
shows."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from builder.errors import RecipeError
from builder.plan.model import SKIP
from builder.plan.payloads import WheelBuild
from builder.plan.text import text as render_text
from builder.wheels.driver import MinimumDriver, codec_of, implied, planned
from builder.wheels.fatbin import Manifest, manifest
from tests.conftest import host
from tests.unit.test_resolve import plan_for

KERNEL = ("__global__ void add(float* a, const float* b, int n) {\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += b[i]; }\n"
          "extern \"C\" void launch(float* a, const float* b, int n) {\n"
          "  add<<<(n + 255) / 256, 256>>>(a, b, n); }\n")


def _nvcc() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("needs nvcc (the CUDA toolkit) to compile a real fatbin")
    return nvcc


def _nvcc_version(nvcc: str) -> str:
    import re

    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    assert m, out
    return m.group(1)


def build_so(tmp: Path, mode: str, ptx: bool = True) -> bytes:
    """A shared object with SASS for sm_80 and sm_90 (and PTX for compute_90)."""
    nvcc = _nvcc()
    src = tmp / "k.cu"
    src.write_text(KERNEL)
    out = tmp / f"k_{mode or 'plain'}_{int(ptx)}.so"
    code = "[sm_90,compute_90]" if ptx else "sm_90"
    argv = [nvcc, "-shared", "-Xcompiler", "-fPIC", "-o", str(out), str(src),
            "-gencode", "arch=compute_80,code=sm_80", "-gencode", f"arch=compute_90,code={code}",
            *([f"--compress-mode={mode}"] if mode else [])]
    subprocess.run(argv, check=True, capture_output=True)
    return out.read_bytes()


def test_the_tables_say_what_each_part_needs() -> None:
    # SASS alone runs on any driver of its major; zstd in CUDA 12 needs 12.4's driver
    sass = implied(Manifest(sass=(90,), toolkits=("12.8",), cubin_abi=(7,)))
    assert sass == MinimumDriver("12.0", "525.60.13", ("SASS of CUDA 12.8",))
    zstd = implied(Manifest(sass=(90,), toolkits=("12.8",), codecs=("zstd",)))
    assert zstd is not None and (zstd.cuda, zstd.linux) == ("12.4", "550.54.14")
    # PTX needs the driver of its ISA's release
    ptx = implied(Manifest(sass=(90,), ptx=(90,), ptx_isa=("8.7",), codecs=("lz4",)))
    assert ptx is not None and (ptx.cuda, ptx.linux) == ("12.8", "570.26")
    assert ptx.why == ("PTX ISA 8.7",)
    with pytest.raises(ValueError, match=r"PTX ISA 99.0 is not in .*cuda.json"):
        implied(Manifest(ptx=(90,), ptx_isa=("99.0",)))
    assert implied(Manifest()) is None
    # the plan: the toolkit's own PTX counts, and the codec its mode writes
    p = planned("12.8.93", "size")
    assert (p.cuda, p.linux) == ("12.8", "570.26") and "PTX ISA 8.7" in p.why[0]
    assert codec_of("12.8", "speed") == "lz4" and codec_of("13.0", "size") == "zstd"
    assert codec_of("13.0", "none") == "" and codec_of("12.4", "") == "lz4"


@pytest.mark.parametrize(("mode", "codec"), [("size", "zstd"), ("speed", "lz4"),
                                             ("none", None), ("balance", "zstd")])
def test_a_real_fatbin_names_its_ptx_isa_toolkit_and_codec(tmp_path: Path, mode: str,
                                                           codec: str | None) -> None:
    nvcc = _nvcc()
    release = _nvcc_version(nvcc)
    if tuple(int(x) for x in release.split(".")) < (12, 8):
        pytest.skip(f"nvcc {release} has no --compress-mode (CUDA 12.8+)")
    found = manifest(build_so(tmp_path, mode))
    assert found is not None
    assert found.sass == (80, 90) and found.ptx == (90,)
    assert found.codecs == ((codec,) if codec else ()), found
    assert found.ptx_isa and found.ptx_isa[0].split(".")[0].isdigit()
    if mode == "none":  # an uncompressed cubin names the toolkit that made it
        assert found.toolkits == (release,)
    need = implied(found)
    assert need is not None and need.cuda == release, need
    # what the plan states for this toolkit and mode covers what the binary needs
    promised = planned(release, mode)
    assert promised.cuda == release


def test_a_binary_needing_a_newer_driver_than_planned_fails_the_seal(tmp_path: Path) -> None:
    """The plan said CUDA 12.8 with nvcc's default compression; the binary was made by
    this machine's newer nvcc: its PTX ISA needs a newer driver — a drift."""
    from builder.wheels.build import metadata_text, write_wheel
    from builder.wheels.checks import check_driver
    from builder.wheels.repair import BUILDER_JSON, seal

    nvcc = _nvcc()
    release = _nvcc_version(nvcc)
    if release.startswith("12."):
        pytest.skip("needs a CUDA 13 nvcc to be newer than the planned 12.8")
    lib = build_so(tmp_path, "size" if not release.startswith("12.") else "")
    members = [("pkg/k.so", lib, 0o755)]
    old = planned("12.8", "")
    [drift] = check_driver(members, old)
    assert drift.startswith("pkg/k.so: needs a CUDA 13.0 driver (") and "PTX ISA 9.0" in drift
    assert "the plan said CUDA 12.8 (Linux ≥ 570.26)" in drift
    assert check_driver([("pkg.libs/k.so", lib, 0o755)], old) == []  # grafted: not ours
    assert check_driver(members, planned(release, "size")) == []

    (tmp_path / ".builder-state").write_text("")  # a folder builder owns (the writer)
    meta = metadata_text("pkg-cu13", "0.1.0", [], "", (), (), "").encode()
    whl = write_wheel([*members, ("pkg_cu13-0.1.0.dist-info/METADATA", meta, 0o644)],
                      tmp_path / "w", "pkg-cu13", "0.1.0", "py3-none-linux_x86_64")
    with pytest.raises(ValueError, match=r"pkg/k.so: needs a CUDA 13.0 driver"):
        seal(whl, (), ("sm_80", "sm_90"), old, "")
    seal(whl, (), ("sm_80", "sm_90"), planned(release, "size"), "size")
    with zipfile.ZipFile(whl) as z:
        doc = json.loads(z.read(f"pkg_cu13-0.1.0.dist-info/{BUILDER_JSON}"))
        sbom = z.read("pkg_cu13-0.1.0.dist-info/sboms/builder.cdx.json").decode()
    gpu = doc["gpu"]
    assert gpu["minimum_driver"]["cuda"] == release and gpu["compress_mode"] == "size"
    assert gpu["planned_driver"]["cuda"] == release
    assert gpu["binaries"]["pkg/k.so"]["minimum_driver"]["linux"] == \
        gpu["minimum_driver"]["linux"] != ""
    assert "compressed (zstd)" in gpu["binaries"]["pkg/k.so"]["code"]
    assert f"minimum driver CUDA {release}" in sbom


def _wheel_payload(plan_steps: list[object]) -> WheelBuild:
    for s in plan_steps:
        payload = getattr(s, "payload", None)
        if isinstance(payload, WheelBuild):
            return payload
    raise AssertionError("no wheel step")


def _cuda_flags(plan: object) -> str:
    for s in plan.steps:  # type: ignore[attr-defined]
        for argv in s.commands:
            for a in argv:
                if a.startswith("-DCMAKE_CUDA_FLAGS="):
                    return str(a)
    return ""


def test_compress_mode_is_size_by_default_keyed_and_shown(project: Path) -> None:
    recipe = project / "recipes" / "vecadd.yaml"
    default = plan_for(project, ["vecadd"], "linux-cuda13")
    assert "--compress-mode=size" in _cuda_flags(default)
    recipe.write_text(recipe.read_text().replace("archs: [sm_80, sm_90]",
                                                 "archs: [sm_80, sm_90]\n"
                                                 "    compress_mode: speed"))
    speed = plan_for(project, ["vecadd"], "linux-cuda13")
    assert "--compress-mode=speed" in _cuda_flags(speed)
    assert "--compress-mode=size" not in _cuda_flags(speed)
    assert speed.variants[0].key != default.variants[0].key  # it changes the binaries


def test_plan_shows_the_minimum_driver_of_a_cuda_wheel(project: Path) -> None:
    recipe = project / "recipes" / "vecadd.yaml"
    recipe.write_text(recipe.read_text() + "python:\n  versions: ['3.11']\n"
                      "  package: python\n")
    plan = plan_for(project, ["vecadd"], "linux-cuda13")
    w = _wheel_payload(list(plan.steps))
    assert (w.min_driver, w.min_driver_linux, w.compress_mode) == ("13.0", "580.65.06", "size")
    text = render_text(plan)
    assert "minimum driver: CUDA 13.0 (Linux ≥ 580.65.06) at most" in text
    assert "zstd-compressed fatbin entries (--compress-mode=size)" in text


def test_an_older_nvcc_has_no_compress_mode(project: Path) -> None:
    facts = host("linux-cuda13")
    old = replace(facts, tools=tuple(replace(t, version="12.4.131") if t.name == "nvcc" else t
                                     for t in facts.tools))
    from builder.recipe.recipeset import RecipeSet
    from builder.resolve.request import Request
    from builder.resolve.resolver import resolve
    from builder.workspace.paths import Workspace
    from builder.workspace.state import read_state

    def plan_on(h: object) -> object:
        ws = Workspace.at(project)
        rs = RecipeSet.load(ws.recipes_dir)
        roots = rs.select(["vecadd"], ws.recipes_dir)
        return resolve(roots, rs, Request(env=(("HOME", "/home/user"),)), h,  # type: ignore[arg-type]
                       read_state(ws, rs.closure(roots)), ws)

    assert "--compress-mode" not in _cuda_flags(plan_on(old))  # no flag: nvcc 12.4 lacks it
    recipe = project / "recipes" / "vecadd.yaml"
    recipe.write_text(recipe.read_text().replace("archs: [sm_80, sm_90]",
                                                 "archs: [sm_80, sm_90]\n"
                                                 "    compress_mode: size"))
    v = plan_on(old).variants[0]  # type: ignore[attr-defined]
    assert v.status == SKIP and "compress_mode size" in v.reason and "12.4.131" in v.reason
    assert "CUDA 12.8" in v.fix


def test_compress_mode_on_a_backend_without_it_is_a_recipe_error(project: Path) -> None:
    recipe = project / "recipes" / "greet.yaml"
    text = recipe.read_text()
    assert "cpu: {}" in text
    recipe.write_text(text.replace("cpu: {}", "cpu: {compress_mode: size}", 1))
    with pytest.raises(RecipeError) as err:
        plan_for(project, ["greet"], "linux-cuda13")
    said = err.value.render()
    assert "greet.yaml:13:" in said and "backends.cpu.compress_mode" in said, said
    assert "no device-code compression" in said and "remove it" in said


@pytest.mark.parametrize("fmt", ["ptx", "cubin", "fatbin"])
def test_a_kernel_artifact_records_the_driver_it_needs(tmp_path: Path, fmt: str) -> None:
    """The publish step replaces the plan's most with what the file itself needs, and
    refuses a file that needs more than the plan said."""
    from builder.execute.publishing import artifact_driver

    nvcc = _nvcc()
    release = _nvcc_version(nvcc)
    src = tmp_path / "k.cu"
    src.write_text(KERNEL)
    out = tmp_path / f"sm_90.{fmt}"
    target = ["-gencode", "arch=compute_90,code=[sm_90,compute_90]"] if fmt == "fatbin" \
        else ["-arch=sm_90"]
    subprocess.run([nvcc, f"-{fmt}", *target, str(src), "-o", str(out)], check=True,
                   capture_output=True)
    record: dict[str, object] = {"format": fmt, "min_driver_cuda": release,
                                 "min_driver": "planned"}
    assert artifact_driver(record, out) == ""
    assert record["min_driver_cuda"] == release and record["min_driver"] != "planned"
    why = record["min_driver_why"]
    assert isinstance(why, list) and why, record
    assert ("PTX ISA" in why[0]) if fmt == "ptx" else True
    assert any("SASS" in w for w in why) if fmt == "cubin" else True
    older = {"format": fmt, "min_driver_cuda": "11.8"}
    problem = artifact_driver(older, out)
    assert problem.startswith("needs a CUDA ") and "newer than the plan's CUDA 11.8" in problem
