"""NVIDIA CUDA through nvcc.

Arch names are ``sm_XY`` with an optional ``a`` (architecture-specific) or ``f``
(family) suffix.  Support is decided by ``data/cuda.json`` for the installed
toolkit's version, narrowed by the live ``nvcc --list-gpu-code``.
"""

from __future__ import annotations

import re
from typing import Any

from packaging.version import InvalidVersion, Version

from builder.backends import Capture, CiRunner, HostView, KernelCommand, Unavailable
from builder.resources import data_table

__all__ = ["CudaBackend"]


def _table() -> Any:
    return data_table("cuda.json")


def _toolkit(version: str) -> dict[str, Any] | None:
    """The newest table row not newer than ``version`` (major.minor)."""
    try:
        want = Version(".".join(version.split(".")[:2]))
    except InvalidVersion:
        return None
    best = None
    for row in _table()["toolkits"]:
        if Version(row["version"]) <= want:
            best = row
    return best


def _mm(version: str) -> str:
    return ".".join(version.split(".")[:2])


class CudaBackend:
    name = "cuda"
    tool: str | None = "nvcc"
    cmake_language: str | None = "CUDA"
    device = "nvidia"
    tool_env: str | None = "CUDACXX"
    flags_lang: str | None = "cuda"
    conan_compiler: str | None = "cuda"
    source_suffixes: tuple[str, ...] = (".cu",)
    ci_runner = CiRunner(
        "ubuntu-latest", container="nvidia/cuda:13.0.0-devel-ubuntu24.04",
        setup=("apt-get update",
               "apt-get install -y --no-install-recommends git g++ ca-certificates curl"))

    def probe_toolchain(self, exe: str, version_output: str, run: Capture
                        ) -> tuple[str, tuple[str, ...]]:
        m = re.search(r"V(\d+\.\d+\.\d+)", version_output) or \
            re.search(r"(\d+\.\d+(?:\.\d+)?)", version_output)
        rc, codes = run([exe, "--list-gpu-code"])
        archs = tuple(sorted(set(re.findall(r"\bsm_\d+[af]?\b", codes)),
                             key=lambda a: int(re.sub(r"\D", "", a)))) if rc == 0 else ()
        return (m.group(1) if m else ""), archs

    def _parse(self, arch: str) -> tuple[int, str] | None:
        m = re.match(_table()["pattern"], arch)
        return (int(m.group(1)), m.group(2)) if m else None

    def arch_belongs(self, arch: str) -> bool:
        return self._parse(arch) is not None

    def normalize_arch(self, text: str) -> str:
        """Legacy knobs and CMake write CUDA archs as `80` or `90a`; builder's are sm_XX."""
        t = text.strip()
        return f"sm_{t}" if t[:1].isdigit() else t

    def arch_order(self, arch: str) -> tuple[int, str]:
        p = self._parse(arch)
        return p if p else (0, arch)

    def arch_unavailable(self, arch: str, host: HostView) -> Unavailable | None:
        nvcc = host.tool("nvcc")
        parsed = self._parse(arch)
        if nvcc is None or parsed is None:
            return None  # reported as a host/backend problem instead
        base, suffix = parsed
        ver = _mm(nvcc.version)
        renamed = _table()["renamed"].get(arch)
        if renamed and Version(ver) >= Version(renamed["since"]):
            return Unavailable(f"{arch}: renamed to {renamed['to']} in CUDA {renamed['since']} "
                               f"(nvcc {nvcc.version} is installed)",
                               f"write {renamed['to']} instead")
        row = _toolkit(nvcc.version)
        bases = set(row["bases"]) if row else set()
        live = {int(re.sub(r"\D", "", a)) for a in nvcc.archs}
        if live:  # the live toolchain narrows the table (and stands in when it is stale)
            bases = (bases & live) if bases else live
        if base not in bases:
            lowest = min(bases) if bases else 0
            if bases and base < lowest:
                return Unavailable(
                    f"{arch}: not supported by nvcc {ver} (lowest is sm_{lowest})",
                    f"remove {arch}, or build with a CUDA toolkit that still supports it "
                    f"(CUDA ≤ 12.9 for archs below sm_75)")
            return Unavailable(f"{arch}: not supported by nvcc {ver} (supported: "
                               f"{', '.join(f'sm_{b}' for b in sorted(bases))})",
                               f"remove {arch} or install a CUDA toolkit that supports it")
        if suffix:
            allowed = set(row.get(f"suffix_{suffix}", ())) if row else set()
            if base not in allowed:
                return Unavailable(f"{arch}: the '{suffix}' suffix is not available for "
                                   f"sm_{base} with nvcc {ver}",
                                   f"use sm_{base} (or one of: "
                                   f"{', '.join(f'sm_{b}{suffix}' for b in sorted(allowed))})")
        return None

    def host_unavailable(self, host: HostView) -> Unavailable | None:
        if host.os == "macos":
            return Unavailable("cuda: CUDA is not available on macOS",
                               "build the cuda backend on a Linux or Windows host")
        if host.tool("nvcc") is None:
            return Unavailable("cuda: nvcc not found",
                               "install the CUDA toolkit or put nvcc on PATH (or set CUDACXX)")
        return None

    def archs_cmake(self, archs: tuple[str, ...]) -> str:
        return ";".join(a.removeprefix("sm_") for a in archs)

    def cmake_defines(self, archs: tuple[str, ...]) -> dict[str, str]:
        return {"CMAKE_CUDA_ARCHITECTURES": self.archs_cmake(archs)} if archs else {}

    def build_env(self, archs: tuple[str, ...], wrapper: str, real: str) -> dict[str, str]:
        # torch.utils.cpp_extension: TORCH_CUDA_ARCH_LIST ("8.0;9.0a") and PYTORCH_NVCC (the
        # nvcc it writes into build.ninja; it still finds CUDA_HOME from the nvcc on PATH,
        # since the wrapper is not put there); CMake: CUDAARCHS initialises
        # CMAKE_CUDA_ARCHITECTURES
        env = {"PYTORCH_NVCC": wrapper}
        if archs:
            nums = [a.removeprefix("sm_") for a in archs]
            env["TORCH_CUDA_ARCH_LIST"] = ";".join(f"{n[:-1]}.{n[-1:]}" if n[-1].isdigit()
                                                   else f"{n[:-2]}.{n[-2:]}" for n in nums)
            env["CUDAARCHS"] = ";".join(nums)
        return env

    def compress_modes(self) -> tuple[str, ...]:
        return tuple(_table()["compress_modes"]["modes"])

    def compress_mode(self, requested: str, host: HostView) -> str:
        """``nvcc --compress-mode`` exists from CUDA 12.8; builder's default there is
        ``size`` (data/cuda.json: the smallest fatbins, a little more compile time)."""
        nvcc = host.tool("nvcc")
        modes = _table()["compress_modes"]
        if nvcc is None or Version(_mm(nvcc.version)) < Version(modes["since"]):
            return ""
        return requested or str(modes["builder_default"])

    def code_flags(self, mode: str) -> tuple[str, ...]:
        return (f"--compress-mode={mode}",) if mode else ()

    def kernel_formats(self) -> tuple[str, ...]:
        return tuple(_table()["formats"])

    def kernel_command(self, source: str, arch: str, out: str, flags: tuple[str, ...],
                       host: HostView, fmt: str, depfile: str = "") -> KernelCommand:
        nvcc = host.tool("nvcc")
        exe = nvcc.path if nvcc else "nvcc"
        target: tuple[str, ...]
        if fmt == "fatbin":  # SASS for the arch plus its PTX, for JIT on newer GPUs
            base = arch.removeprefix("sm_")
            target = ("-gencode", f"arch=compute_{base},code=[sm_{base},compute_{base}]")
        else:
            target = (f"-arch={arch}",)
        # nvcc writes the depfile with -ptx, -cubin and -fatbin alike
        dep = ("-MD", "-MF", depfile) if depfile else ()
        return KernelCommand(((exe, f"-{fmt}", *target, *flags, source, "-o", out, *dep),), (),
                             depfile=depfile)

    def artifact_facts(self, arch: str, host: HostView) -> dict[str, str]:
        nvcc = host.tool("nvcc")
        if nvcc is None:
            return {}
        mm = _mm(nvcc.version)
        row = _toolkit(nvcc.version)
        key = row["version"] if row else mm
        # the most this toolkit's code can need (its own PTX ISA): the publish step
        # records what each artifact does need (builder.wheels.driver) and refuses more
        drivers = sorted(_table()["driver"]["linux"].items(), key=lambda kv: Version(kv[0]))
        first = next((drv for rel, drv in drivers if Version(rel) >= Version(mm)), "")
        return {"toolchain": f"nvcc {nvcc.version}",
                "ptx_isa": str(_table()["ptx_isa"].get(key, "")),
                "min_driver": first, "min_driver_cuda": mm}
