"""Arch tables as data, checked against the live toolchain facts."""

from __future__ import annotations

from dataclasses import replace

from builder import backends
from builder.host.facts import ToolInfo
from tests.conftest import host


def test_cuda_13_floor_and_suffix_rules() -> None:
    h = host("linux-cuda13")
    cuda = backends.get("cuda")
    bad = cuda.arch_unavailable("sm_70", h)
    assert bad is not None
    assert bad.reason == "sm_70: not supported by nvcc 13.0 (lowest is sm_75)"
    assert "CUDA ≤ 12.9" in bad.fix
    for ok in ("sm_75", "sm_90", "sm_90a", "sm_100f", "sm_120a"):
        assert cuda.arch_unavailable(ok, h) is None, ok
    renamed = cuda.arch_unavailable("sm_101", h)
    assert renamed is not None and "renamed to sm_110" in renamed.reason
    nope = cuda.arch_unavailable("sm_89a", h)
    assert nope is not None and "'a' suffix is not available for sm_89" in nope.reason


def test_cuda_table_for_older_toolkit() -> None:
    h = host("linux-cuda13")
    old = replace(h, tools=tuple(
        ToolInfo("nvcc", t.path, "12.8.61", ()) if t.name == "nvcc" else t for t in h.tools))
    cuda = backends.get("cuda")
    assert cuda.arch_unavailable("sm_70", old) is None
    assert cuda.arch_unavailable("sm_101", old) is None
    f = cuda.arch_unavailable("sm_100f", old)
    assert f is not None and "'f' suffix" in f.reason


def test_live_toolchain_narrows_the_table() -> None:
    h = host("linux-cuda13")
    narrowed = replace(h, tools=tuple(
        replace(t, archs=("sm_75", "sm_80")) if t.name == "nvcc" else t for t in h.tools))
    bad = backends.get("cuda").arch_unavailable("sm_90", narrowed)
    assert bad is not None and "supported: sm_75, sm_80" in bad.reason


def test_rocm_device_libraries_decide() -> None:
    h = host("linux-cuda13")
    rocm = backends.get("rocm")
    assert rocm.arch_unavailable("gfx1030", h) is None
    bad = rocm.arch_unavailable("gfx1100", h)
    assert bad is not None and "ROCm 5.2" in bad.reason
    assert rocm.kernel_command("k.hip", "gfx1030", "o", ("-O3",), h, "hsaco").env == (
        ("HIP_PLATFORM", "amd"),)


def test_hosts_without_the_backend() -> None:
    mac = host("macos-m2")
    assert backends.get("cuda").host_unavailable(mac) is not None
    linux = host("linux-cuda13")
    metal = backends.get("metal").host_unavailable(linux)
    assert metal is not None and metal.reason == "metal: needs a macOS host with xcrun"
    assert backends.get("metal").host_unavailable(mac) is None
    cmd = backends.get("metal").kernel_command("k.metal", "apple-m3", "out.metallib", (), mac,
                                               "metallib")
    assert cmd.commands[0][:4] == ("xcrun", "-sdk", "macosx", "metal")
    assert cmd.commands[1][-1] == "out.metallib"


def test_arch_ownership() -> None:
    assert backends.get("cuda").arch_belongs("sm_90a")
    assert not backends.get("cuda").arch_belongs("gfx1030")
    assert backends.get("rocm").arch_belongs("gfx90a")
    assert backends.get("metal").arch_belongs("apple-m1")
    assert backends.get("cuda").archs_cmake(("sm_80", "sm_90a")) == "80;90a"
