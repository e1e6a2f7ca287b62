"""What a wheel depends on, decided from its binaries and data tables
(builder.wheels.runtime, builder.wheels.repair.write_raw) — no tools needed."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from builder.plan.payloads import WheelBuild
from builder.wheels.build import build_wheel
from builder.wheels.repair import write_raw
from builder.wheels.runtime import exclusions, libraries, requirements, runpath


def test_cuda_13_wheels_have_no_suffix_and_cuda_12_ones_do() -> None:
    assert requirements(["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13",
                         "libc.so.6"], "13.0.88") == [
        "nvidia-cublas>=13.0,<14", "nvidia-cuda-runtime>=13.0,<14"]
    assert requirements(["libcudart.so.12", "libcufft.so.11"], "12.4.131") == [
        "nvidia-cuda-runtime-cu12>=12.4,<13", "nvidia-cufft-cu12>=11,<12"]
    assert requirements(["libcudart.so.13"], "") == []  # not a CUDA build
    assert requirements(["libcudart.so.11"], "11.8.89") == []  # no wheels in the table
    assert "libcublasLt.so*" in exclusions("13.0.88") and exclusions("") == ()


def test_the_runtime_path_is_relative_to_the_member_and_per_wheel_folder() -> None:
    libs13, libs12 = libraries("13.0"), libraries("12.8")
    assert runpath("llaisys/libllaisys.so", ["libcublas.so.13"], libs13) == \
        "$ORIGIN/../nvidia/cu13/lib"
    assert runpath("a/b/x.so", ["libcudart.so.12", "libcublas.so.12"], libs12) == \
        "$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/cublas/lib"
    assert runpath("top.so", ["libcudart.so.13"], libs13) == "$ORIGIN/nvidia/cu13/lib"
    assert runpath("p-1.0.data/platlib/p/x.so", ["libcudart.so.13"], libs13) == \
        "$ORIGIN/../nvidia/cu13/lib"
    assert runpath("p-1.0.data/scripts/tool", ["libcudart.so.13"], libs13) == ""
    assert runpath("p/x.so", ["libm.so.6"], libs13) == ""


def payload(tmp_path: Path, **kw: str) -> WheelBuild:
    base = dict(src=str(tmp_path / "src"), name="pkg-cu13", version="0.1.0",
                tag="py3-none-linux_x86_64", summary="", out_dir=str(tmp_path / "out"),
                policy="auto")
    base.update(kw)
    return WheelBuild(**base)  # type: ignore[arg-type]


def test_a_package_with_no_binary_is_written_pure(tmp_path: Path) -> None:
    (tmp_path / ".builder-owned").write_text("builder\n")  # the writer's marker
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("")
    whl, said, native = write_raw(payload(tmp_path))
    assert whl.name == "pkg_cu13-0.1.0-py3-none-any.whl" and not native
    assert any("no binary" in s for s in said)


def test_the_projects_own_wheel_is_renamed_and_keeps_its_metadata(tmp_path: Path) -> None:
    (tmp_path / ".builder-owned").write_text("builder\n")  # the writer's marker
    (tmp_path / "tree" / "fo").mkdir(parents=True)
    (tmp_path / "tree" / "fo" / "__init__.py").write_text("")
    (tmp_path / "tree" / "fo" / "_ext.so").write_bytes(b"\x7fELF" + b"\0" * 60)
    made = build_wheel(tmp_path / "tree", tmp_path / "dist", "fo", "0.1.0",
                       "cp311-cp311-linux_x86_64", requires=("numpy",), summary="fused")
    w = payload(tmp_path, from_wheel=str(tmp_path / "dist"), name="fo-cu13",
                tag="cp311-cp311-linux_x86_64")
    whl, _, native = write_raw(w)
    assert native and whl.name == "fo_cu13-0.1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(whl) as z:
        meta = z.read("fo_cu13-0.1.0.dist-info/METADATA").decode()
        assert not [n for n in z.namelist() if n.startswith("fo-0.1.0")]
    assert "Name: fo-cu13" in meta and "Requires-Dist: numpy" in meta
    assert "Summary: fused" in meta
    # a recipe whose version or ABI differs from what the project builds is an error
    with pytest.raises(ValueError, match=r"set package\.version to 0\.1\.0"):
        write_raw(payload(tmp_path, from_wheel=str(made.parent), version="0.2.0"))
    with pytest.raises(ValueError, match=r"set python\.abi"):
        write_raw(payload(tmp_path, from_wheel=str(made.parent), name="fo"))


def test_symbol_versions_beyond_the_tag_are_named() -> None:
    from builder.wheels.checks import check_symbols

    ls = Path("/usr/bin/ls")
    if not ls.is_file() or ls.read_bytes()[:4] != b"\x7fELF":
        pytest.skip("needs an ELF /usr/bin/ls")
    members = [("pkg/tool", ls.read_bytes(), 0o755)]
    problems = check_symbols(members, ["manylinux_2_17_x86_64", "manylinux2014_x86_64"])
    assert problems and all(p.startswith("pkg/tool: GLIBC_2.") for p in problems), problems
    assert "manylinux_2_17 allows up to GLIBC_2.17" in problems[0]
    assert check_symbols(members, ["manylinux_2_39_x86_64"]) == []
    assert check_symbols(members, ["linux_x86_64"]) == []  # no promise made


def test_the_sbom_lists_every_shared_object_with_its_digest() -> None:
    from builder.wheels.checks import check_sbom
    from builder.wheels.sbom import sbom_json

    pytest.importorskip("cyclonedx", reason="needs cyclonedx-python-lib")
    elf = b"\x7fELF" + b"\0" * 60
    members = [("p/a.so", elf, 0o755), ("p.libs/libz-1.so", elf + b"z", 0o755),
               ("p/__init__.py", b"", 0o644)]
    text = sbom_json("p", "1.0", members, (("source", "/src/p", "ab" * 32, "path"),
                                            ("compiler", "nvcc", "13.0.88", "/usr/bin/nvcc")))
    assert check_sbom(members, text) == []
    assert '"name": "nvcc"' in text and '"version": "13.0.88"' in text
    changed = [("p/a.so", elf + b"patched", 0o755), *members[1:]]
    assert check_sbom(changed, text) == ["p/a.so: not in the SBOM with sha256 " +
                                         __import__("hashlib").sha256(elf + b"patched")
                                         .hexdigest()]
    extra = [*members, ("p/b.so", elf + b"b", 0o755)]
    assert [p.split(":")[0] for p in check_sbom(extra, text)] == ["p/b.so"]


VARIANTS = """\
package: {name: vx, version: "0.1.0"}
source: {path: ../src}
backends:
  cuda: {archs: [sm_80, sm_90]}
python: {versions: ["3.11"], abi: none}
"""


def _variant_project(tmp_path: Path, text: str) -> Path:
    (tmp_path / "src").mkdir(parents=True)
    (tmp_path / "src" / "CMakeLists.txt").write_text("project(vx LANGUAGES CXX CUDA)\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "vx.yaml").write_text(text)
    return tmp_path


@pytest.mark.parametrize("how", ["flag", "recipe"])
def test_wheel_variants_build_each_arch_alone_with_a_labelled_wheel(
        tmp_path: Path, how: str) -> None:
    from tests.unit.test_resolve import plan_for

    text = VARIANTS + ("wheel: {variants: true}\n" if how == "recipe" else "")
    plan = plan_for(_variant_project(tmp_path, text), ["vx"], "h100",
                    wheel_variants=how == "flag")
    by_archs = {v.archs: v for v in plan.variants}
    assert set(by_archs) == {("sm_80", "sm_90"), ("sm_80",), ("sm_90",)}
    keys = {v.compile_key for v in plan.variants}
    assert len(keys) == 3  # each arch group compiles on its own
    for archs, label in ((("sm_80",), "cu13_sm80"), (("sm_90",), "cu13_sm90")):
        v = by_archs[archs]
        assert f"-{archs[0]}-" in v.id
        configure = next(s for s in plan.steps_of(v.id) if s.id.endswith("/configure"))
        assert any(a == f"-DCMAKE_CUDA_ARCHITECTURES={archs[0][3:]}"
                   for a in configure.commands[0]), configure.commands[0]
        wheel = next(s.payload for s in plan.steps_of(v.id) if s.id.endswith("/wheel"))
        assert isinstance(wheel, WheelBuild) and wheel.variant_label == label
        assert f"nvidia :: sm_arch :: {archs[0][3:]}_real" in wheel.variant_properties
        assert wheel.wheel.endswith(f"-{label}.whl")
    fallback = next(s.payload for s in plan.steps_of(by_archs[("sm_80", "sm_90")].id)
                    if s.id.endswith("/wheel"))
    assert isinstance(fallback, WheelBuild) and not fallback.variant_label
    # without the setting: the all-arch wheel only
    assert len(plan_for(_variant_project(tmp_path / "b", VARIANTS), ["vx"], "h100")
               .variants) == 1


def test_variant_json_says_what_the_installer_matches() -> None:
    import json

    from builder.wheels.variants import label, properties, variant_json

    pytest.importorskip("variantlib", reason="needs variantlib")
    assert label("13.0.88", "sm_90a") == "cu13_sm90a"
    doc = json.loads(variant_json(properties("13.0.88", "sm_86"), "cu13_sm86"))
    assert doc["variants"]["cu13_sm86"]["nvidia"] == {
        "cuda_version_lower_bound": ["13.0"], "cuda_version_upper_bound": ["14"],
        "sm_arch": ["86_real"]}
    assert doc["providers"]["nvidia"]["plugin-api"].startswith("nvidia_variant_provider")


def test_the_fatbin_manifest_names_the_sass_and_ptx_inside(tmp_path: Path) -> None:
    """Compiled here with nvcc; cross-checked with cuobjdump where it is installed."""
    import shutil
    import subprocess

    from builder.wheels.checks import check_gpu_code
    from builder.wheels.fatbin import manifest

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("needs nvcc")
    (tmp_path / "k.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] += 1; }\n")
    lib = tmp_path / "k.so"
    subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-o", str(lib),
                    str(tmp_path / "k.cu"), "-gencode", "arch=compute_80,code=sm_80",
                    "-gencode", "arch=compute_90,code=[sm_90,compute_90]"], check=True)
    found = manifest(lib.read_bytes())
    assert found is not None and found.sass == (80, 90) and found.ptx == (90,), found
    if shutil.which("cuobjdump"):
        elf = subprocess.run(["cuobjdump", "--list-elf", str(lib)], capture_output=True,
                             text=True, check=True).stdout
        assert {int(a) for a in __import__("re").findall(r"sm_(\d+)", elf)} == {80, 90}
    members = [("p/k.so", lib.read_bytes(), 0o755)]
    assert check_gpu_code(members, ("sm_80", "sm_90")) == []
    [drifted] = check_gpu_code(members, ("sm_80", "sm_86", "sm_90"))
    assert drifted.startswith("p/k.so: no SASS for sm_86"), drifted
    [extra] = check_gpu_code(members, ("sm_90",))
    assert "SASS for sm_80, which the recipe does not build" in extra, extra
    assert manifest(Path(__file__).read_bytes()) is None
    assert check_gpu_code([("x.libs/k.so", lib.read_bytes(), 0o755)], ("sm_90",)) == []


def test_an_abi3_extension_beyond_its_floor_is_named(tmp_path: Path) -> None:
    """A real extension compiled here that imports PyUnicode_AsUTF8AndSize (limited API
    from 3.10) and PyObject_GetBuffer (3.11)."""
    import shutil
    import subprocess

    from builder.wheels.checks import check_abi3

    pytest.importorskip("abi3info", reason="needs abi3info")
    cc = shutil.which("gcc")
    if cc is None:
        pytest.skip("needs gcc")
    (tmp_path / "m.c").write_text(
        "extern void* PyUnicode_AsUTF8AndSize(void*, long*);\n"
        "extern int PyObject_GetBuffer(void*, void*, int);\n"
        "extern void* PyType_FromSpec(void*);\n"
        "void* f(void* o) { PyObject_GetBuffer(o, 0, 0); PyType_FromSpec(0);\n"
        "  return PyUnicode_AsUTF8AndSize(o, 0); }\n")
    so = tmp_path / "m.abi3.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(so), str(tmp_path / "m.c")], check=True)
    members = [("p/m.abi3.so", so.read_bytes(), 0o755)]
    problems = check_abi3(members, "cp39")
    assert sorted(p.split(":")[1].split()[0] for p in problems) == [
        "PyObject_GetBuffer", "PyUnicode_AsUTF8AndSize"], problems
    assert any("from Python 3.10, above the wheel's floor 3.9" in p for p in problems)
    assert [p for p in check_abi3(members, "cp310") if "PyObject_GetBuffer" in p]
    assert check_abi3(members, "cp311") == []


def test_adding_an_arch_leaves_the_other_variant_builds_alone(tmp_path: Path) -> None:
    from tests.unit.test_resolve import plan_for

    def keys(root: Path, archs: str) -> dict[tuple[str, ...], str]:
        text = VARIANTS.replace("[sm_80, sm_90]", archs)
        plan = plan_for(_variant_project(root, text), ["vx"], "h100", wheel_variants=True)
        return {v.archs: v.compile_key for v in plan.variants}

    before = keys(tmp_path / "a", "[sm_80, sm_90]")
    after = keys(tmp_path / "b", "[sm_80, sm_89, sm_90]")
    # the new arch's build and the all-arch fallback are new; sm_80 and sm_90 are kept
    assert after[("sm_80",)] == before[("sm_80",)]
    assert after[("sm_90",)] == before[("sm_90",)]
    assert ("sm_89",) in after and ("sm_80", "sm_89", "sm_90") in after
