"""The host CPU: a C/C++ compiler and CMake are all it needs."""

from __future__ import annotations

import re

from builder.backends import Capture, CiRunner, HostView, KernelCommand, NoCompression, Unavailable

__all__ = ["CpuBackend"]


class CpuBackend(NoCompression):
    name = "cpu"
    tool: str | None = None
    cmake_language: str | None = None
    device = "cpu"
    tool_env: str | None = None
    flags_lang: str | None = None
    conan_compiler: str | None = None
    source_suffixes: tuple[str, ...] = ()
    ci_runner = CiRunner("ubuntu-latest")

    def probe_toolchain(self, exe: str, version_output: str, run: Capture
                        ) -> tuple[str, tuple[str, ...]]:
        m = re.search(r"(\d+\.\d+(?:\.\d+)?)", version_output)
        return (m.group(1) if m else ""), ()

    def arch_belongs(self, arch: str) -> bool:
        return False  # a CPU variant has no GPU archs

    def normalize_arch(self, text: str) -> str:
        return text.strip()

    def arch_order(self, arch: str) -> tuple[int, str]:
        return (0, arch)

    def arch_unavailable(self, arch: str, host: HostView) -> Unavailable | None:
        return Unavailable(f"{arch}: the cpu backend has no GPU architectures",
                           "remove `archs` from backends.cpu")

    def host_unavailable(self, host: HostView) -> Unavailable | None:
        if host.tool("cxx") is None:
            return Unavailable("cpu: no C++ compiler found",
                               "install g++ (apt-get install g++) or set CXX")
        return None

    def archs_cmake(self, archs: tuple[str, ...]) -> str:
        return ""

    def cmake_defines(self, archs: tuple[str, ...]) -> dict[str, str]:
        return {}

    def build_env(self, archs: tuple[str, ...], wrapper: str, real: str) -> dict[str, str]:
        return {}

    def kernel_formats(self) -> tuple[str, ...]:
        return ()

    def kernel_command(self, source: str, arch: str, out: str, flags: tuple[str, ...],
                       host: HostView, fmt: str, depfile: str = "") -> KernelCommand:
        raise NotImplementedError("cpu has no standalone kernels")

    def artifact_facts(self, arch: str, host: HostView) -> dict[str, str]:
        return {}
