"""AMD ROCm through hipcc (``HIP_PLATFORM=amd``, or hipcc silently drives nvcc).

A gfx target is supported when the ROCm release table lists it *and* the
installed device libraries carry its bitcode (Debian's ROCm 5.2 has none for
gfx11, so those compiles fail — reported at plan time, not hidden).
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from builder.backends import (
    Capture,
    CiRunner,
    HostView,
    KernelCommand,
    NoCompression,
    Unavailable,
    digits_order,
)
from builder.resources import data_table

__all__ = ["RocmBackend", "bitcode_targets"]


def _table() -> Any:
    return data_table("rocm.json")


def bitcode_targets(hipcc: str) -> tuple[str, ...]:
    """gfx targets whose device-library bitcode is installed (what hipcc can link)."""
    roots = [os.environ.get("ROCM_PATH", ""), "/opt/rocm", "/usr/lib/x86_64-linux-gnu",
             "/usr/lib", str(Path(hipcc).resolve().parent.parent)]
    found: set[str] = set()
    for root in filter(None, roots):
        for pat in ("amdgcn/bitcode/oclc_isa_version_*.bc",
                    "lib/amdgcn/bitcode/oclc_isa_version_*.bc"):
            for f in glob.glob(os.path.join(root, pat)):
                found.add("gfx" + Path(f).stem.rsplit("_", 1)[-1])
    return tuple(sorted(found, key=lambda g: (len(g), g)))


class RocmBackend(NoCompression):
    name = "rocm"
    tool: str | None = "hipcc"
    cmake_language: str | None = "HIP"
    device = "amd"
    tool_env: str | None = None
    flags_lang: str | None = "hip"
    conan_compiler: str | None = None
    source_suffixes: tuple[str, ...] = (".hip",)
    ci_runner = CiRunner(
        "ubuntu-latest",
        setup=("sudo apt-get update",
               "sudo apt-get install -y hipcc libamdhip64-dev rocm-device-libs"),
        env=(("HIP_PLATFORM", "amd"),))

    def probe_toolchain(self, exe: str, version_output: str, run: Capture
                        ) -> tuple[str, tuple[str, ...]]:
        m = re.search(r"(\d+\.\d+(?:\.\d+)?)", version_output.split("HIP version:", 1)[-1])
        return (m.group(1) if m else ""), bitcode_targets(exe)

    def arch_belongs(self, arch: str) -> bool:
        return re.match(_table()["pattern"], arch) is not None

    def normalize_arch(self, text: str) -> str:
        return text.strip()

    def arch_order(self, arch: str) -> tuple[int, str]:
        return digits_order(arch)

    def _release(self, version: str) -> dict[str, Any] | None:
        try:
            want = Version(".".join(version.split(".")[:2]))
        except InvalidVersion:
            return None
        best = None
        for row in _table()["releases"]:
            if Version(row["version"]) <= want:
                best = row
        return best

    def arch_unavailable(self, arch: str, host: HostView) -> Unavailable | None:
        hip = host.tool("hipcc")
        if hip is None or not self.arch_belongs(arch):
            return None
        mm = ".".join(hip.version.split(".")[:2])
        row = self._release(hip.version)
        if row is not None and arch not in row["targets"]:
            return Unavailable(f"{arch}: not supported by ROCm {mm}",
                               f"remove {arch} or install a ROCm release that supports it")
        if hip.archs and arch not in hip.archs:
            return Unavailable(f"{arch}: the installed ROCm {mm} device libraries have no "
                               f"bitcode for {arch}",
                               f"remove {arch} or install ROCm device libraries that include "
                               f"it (ROCm ≥ 5.7 for gfx11)")
        return None

    def host_unavailable(self, host: HostView) -> Unavailable | None:
        if host.os != "linux":
            return Unavailable("rocm: ROCm needs a Linux host", "build rocm on Linux")
        if host.tool("hipcc") is None:
            return Unavailable("rocm: hipcc not found",
                               "apt-get install hipcc libamdhip64-dev rocm-device-libs")
        return None

    def archs_cmake(self, archs: tuple[str, ...]) -> str:
        return ";".join(archs)

    def cmake_defines(self, archs: tuple[str, ...]) -> dict[str, str]:
        return {"CMAKE_HIP_ARCHITECTURES": self.archs_cmake(archs)} if archs else {}

    def build_env(self, archs: tuple[str, ...], wrapper: str, real: str) -> dict[str, str]:
        # torch.utils.cpp_extension reads PYTORCH_ROCM_ARCH; CMake's HIPARCHS initialises
        # CMAKE_HIP_ARCHITECTURES
        return {"PYTORCH_ROCM_ARCH": ";".join(archs), "HIPARCHS": ";".join(archs),
                "HIP_PLATFORM": "amd"} if archs else {"HIP_PLATFORM": "amd"}

    def kernel_formats(self) -> tuple[str, ...]:
        return (str(_table()["ext"]),)

    def kernel_command(self, source: str, arch: str, out: str, flags: tuple[str, ...],
                       host: HostView, fmt: str, depfile: str = "") -> KernelCommand:
        hip = host.tool("hipcc")
        exe = hip.path if hip else "hipcc"
        dep = ("-MD", "-MF", depfile) if depfile else ()  # clang's, with --genco too
        return KernelCommand(((exe, "--genco", f"--offload-arch={arch}", *flags, source,
                               "-o", out, *dep),), (("HIP_PLATFORM", "amd"),),
                             depfile=depfile)

    def artifact_facts(self, arch: str, host: HostView) -> dict[str, str]:
        hip = host.tool("hipcc")
        return {"toolchain": f"hipcc {hip.version}"} if hip else {}
