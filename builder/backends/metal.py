"""Apple Metal through ``xcrun metal`` + ``xcrun metallib`` (macOS only)."""

from __future__ import annotations

import re
from typing import Any

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

__all__ = ["MetalBackend"]


def _table() -> Any:
    return data_table("metal.json")


class MetalBackend(NoCompression):
    name = "metal"
    tool: str | None = "xcrun"
    cmake_language: str | None = None
    device = "mps"
    tool_env: str | None = None
    flags_lang: str | None = "metal"
    conan_compiler: str | None = None
    source_suffixes: tuple[str, ...] = (".metal",)
    ci_runner = CiRunner("macos-14")

    def probe_toolchain(self, exe: str, version_output: str, run: Capture
                        ) -> tuple[str, tuple[str, ...]]:
        m = re.search(r"(\d+\.\d+(?:\.\d+)?)", version_output)
        return (m.group(1) if m else ""), ()

    def arch_belongs(self, arch: str) -> bool:
        return re.match(_table()["pattern"], arch) is not None

    def normalize_arch(self, text: str) -> str:
        return text.strip()

    def arch_order(self, arch: str) -> tuple[int, str]:
        return digits_order(arch)

    def arch_unavailable(self, arch: str, host: HostView) -> Unavailable | None:
        if self.arch_belongs(arch) and arch not in _table()["families"]:
            known = ", ".join(_table()["families"])
            return Unavailable(f"{arch}: unknown Apple GPU family (known: {known})",
                               "add it to builder/resources/metal.json or remove it")
        return None

    def host_unavailable(self, host: HostView) -> Unavailable | None:
        if host.os != "macos":
            return Unavailable("metal: needs a macOS host with xcrun",
                               "build the metal backend on macOS (a macOS CI runner)")
        if host.tool("xcrun") is None:
            return Unavailable("metal: xcrun not found", "run `xcode-select --install`")
        return None

    def archs_cmake(self, archs: tuple[str, ...]) -> str:
        return ";".join(archs)

    def cmake_defines(self, archs: tuple[str, ...]) -> dict[str, str]:
        return {}

    def build_env(self, archs: tuple[str, ...], wrapper: str, real: str) -> dict[str, str]:
        return {}

    def kernel_formats(self) -> tuple[str, ...]:
        return (str(_table()["ext"]),)

    def kernel_command(self, source: str, arch: str, out: str, flags: tuple[str, ...],
                       host: HostView, fmt: str, depfile: str = "") -> KernelCommand:
        std = _table()["families"].get(arch, {}).get("std", "metal3.0")
        air = out + ".air"
        return KernelCommand(
            (("xcrun", "-sdk", "macosx", "metal", f"-std={std}", *flags, "-c", source,
              "-o", air),
             ("xcrun", "-sdk", "macosx", "metallib", air, "-o", out)),
            (), (air,))

    def artifact_facts(self, arch: str, host: HostView) -> dict[str, str]:
        fam = _table()["families"].get(arch, {})
        return {"gpu_family": str(fam.get("gpu_family", "")), "metal_std": str(fam.get("std", ""))}
