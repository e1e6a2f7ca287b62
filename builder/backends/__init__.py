"""Backends behind one protocol and a registry.

Core code never branches on a backend's name: it asks the registry for the
:class:`Backend` and calls its methods.  The tables that change with toolchain
releases (which archs a CUDA or ROCm version supports, file extensions) are JSON
files in ``builder/resources``; the live toolchain (``nvcc --list-gpu-code``, the
installed ROCm device libraries) is consulted through :class:`HostView`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "Backend",
    "Capture",
    "CiRunner",
    "HostView",
    "KernelCommand",
    "NoCompression",
    "ToolView",
    "Unavailable",
    "backends",
    "digits_order",
    "get",
    "names",
]


class ToolView(Protocol):
    """What a backend reads of an installed tool (``builder.host.facts.ToolInfo``)."""

    @property
    def path(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def archs(self) -> tuple[str, ...]: ...


class HostView(Protocol):
    """What a backend reads of the host (``builder.host.facts.HostView`` is one): backends
    sit below the host package, which asks them to probe their toolchains."""

    @property
    def os(self) -> str: ...
    @property
    def arch(self) -> str: ...
    def tool(self, name: str) -> ToolView | None: ...


#: runs an argv and returns (exit code, output): how a backend probes its toolchain
Capture = Callable[[list[str]], tuple[int, str]]


@dataclass(frozen=True)
class CiRunner:
    """Where a CI job for one backend runs."""

    runs_on: str
    container: str = ""
    #: shell lines run first (as root in a container, else with sudo available)
    setup: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"runs_on": self.runs_on, "container": self.container,
                "setup": list(self.setup), "env": dict(self.env)}


@dataclass(frozen=True)
class Unavailable:
    """Why a backend or arch cannot be built here, and what to do about it."""

    reason: str
    fix: str


@dataclass(frozen=True)
class KernelCommand:
    """How one (kernel, arch) artifact is produced."""

    commands: tuple[tuple[str, ...], ...]
    env: tuple[tuple[str, str], ...]
    intermediates: tuple[str, ...] = ()
    #: the make-style depfile the commands write (the files the compile read): the
    #: artifact is then keyed by what it read (builder.source.inputs); "": none written
    depfile: str = ""


class NoCompression:
    """The device-code compression methods of a backend whose toolchain has none."""

    def compress_modes(self) -> tuple[str, ...]:
        return ()

    def compress_mode(self, requested: str, host: HostView) -> str:
        return ""

    def code_flags(self, mode: str) -> tuple[str, ...]:
        return ()


class Backend(Protocol):
    name: str
    #: the tool that must exist for this backend (None for cpu)
    tool: str | None
    #: the CMake language this backend adds (None for cpu)
    cmake_language: str | None
    #: the device name tests get by default
    device: str
    #: the environment variable that names the tool's executable (CUDACXX), if any
    tool_env: str | None
    #: the recipe's ``flags`` layer for this backend's device code (cuda, hip, metal)
    flags_lang: str | None
    #: the key of the tool in Conan's ``tools.build:compiler_executables`` (cuda: nvcc)
    conan_compiler: str | None
    #: source files that only this backend compiles
    source_suffixes: tuple[str, ...]
    #: where this backend's CI jobs run
    ci_runner: CiRunner

    def probe_toolchain(self, exe: str, version_output: str, run: Capture
                        ) -> tuple[str, tuple[str, ...]]:
        """The installed toolchain's version (from ``exe --version``'s output) and the archs
        it can really build (it may run ``exe`` again through ``run``)."""

    def arch_belongs(self, arch: str) -> bool:
        """Is ``arch`` an architecture name of this backend at all?"""

    def normalize_arch(self, text: str) -> str:
        """An arch as users may write it (``80`` for CUDA) in this backend's naming."""

    def arch_order(self, arch: str) -> tuple[int, str]:
        """Sort key: lower means older hardware."""

    def arch_unavailable(self, arch: str, host: HostView) -> Unavailable | None:
        """Why the installed toolchain cannot build ``arch`` (None when it can)."""

    def host_unavailable(self, host: HostView) -> Unavailable | None:
        """Why this host cannot build the backend at all (None when it can)."""

    def archs_cmake(self, archs: tuple[str, ...]) -> str:
        """The arch list in CMake's form."""

    def cmake_defines(self, archs: tuple[str, ...]) -> dict[str, str]:
        """Defines every CMake variant of this backend gets."""

    def build_env(self, archs: tuple[str, ...], wrapper: str, real: str) -> dict[str, str]:
        """Environment that tells builds driven by other tools (setup.py with
        torch.utils.cpp_extension, scikit-build-core, a CMake run by setup.py) the archs
        and this backend's compiler: ``wrapper`` is the memory-launcher wrapper of the
        backend's tool, ``real`` the tool itself."""

    def compress_modes(self) -> tuple[str, ...]:
        """The device-code compression modes a recipe may choose
        (``backends.<name>.compress_mode``); () when the backend has none."""

    def compress_mode(self, requested: str, host: HostView) -> str:
        """The compression mode a build with the installed toolchain uses: ``requested``
        (the recipe's, "" for none) or the backend's default where the toolchain has one;
        "" = no flag.  A requested mode that comes back changed is one the toolchain
        lacks (the resolver says so)."""

    def code_flags(self, mode: str) -> tuple[str, ...]:
        """The device-code flags that select compression ``mode`` ("" → none)."""

    def kernel_formats(self) -> tuple[str, ...]:
        """Artifact formats a kernel can be compiled to; the first is the default.
        The format is also the file extension."""

    def kernel_command(self, source: str, arch: str, out: str, flags: tuple[str, ...],
                       host: HostView, fmt: str, depfile: str = "") -> KernelCommand:
        """The commands that compile ``source`` for ``arch`` into ``out``; asked for a
        ``depfile``, a backend whose compiler can write one returns it in the command
        (:attr:`KernelCommand.depfile`), one that cannot leaves it "" (the artifact is
        then keyed by its whole source folder)."""

    def artifact_facts(self, arch: str, host: HostView) -> dict[str, str]:
        """Facts recorded in the manifest for an artifact (ISA version, min driver…)."""


def digits_order(arch: str) -> tuple[int, str]:
    """Sort key for names like gfx1030 or apple-m2: by their number."""
    digits = "".join(c for c in arch if c.isdigit())
    return (int(digits) if digits else 0, arch)


def _registry() -> dict[str, Backend]:
    from builder.backends.cpu import CpuBackend
    from builder.backends.cuda import CudaBackend
    from builder.backends.metal import MetalBackend
    from builder.backends.rocm import RocmBackend

    items: list[Backend] = [CpuBackend(), CudaBackend(), RocmBackend(), MetalBackend()]
    return {b.name: b for b in items}


_REGISTRY: dict[str, Backend] = {}


def get(name: str) -> Backend:
    if not _REGISTRY:
        _REGISTRY.update(_registry())
    return _REGISTRY[name]


def backends() -> tuple[Backend, ...]:
    if not _REGISTRY:
        _REGISTRY.update(_registry())
    return tuple(_REGISTRY.values())


def names() -> tuple[str, ...]:
    if not _REGISTRY:
        _REGISTRY.update(_registry())
    return tuple(_REGISTRY)
