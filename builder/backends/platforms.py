"""Target platforms: what a backend with ``target:`` builds for, and how this host gets there.

A recipe names a target platform on a backend (``arm: {kind: cpu, target: linux-armv8}``).
The table of targets is data (``data/targets.json``): the platform's Conan settings and
CMake system name/processor, and per host operating system the cross toolchain that
reaches it (compiler executables, the packages that install them, the Debian multiarch
name of the target's libraries).  :func:`for_host` decides, purely from the host facts,
whether this host builds the target natively, cross-compiles it, or cannot build it (and
why, and what to do) — so that a platform this machine cannot build is a visible skip
with its fix, never a silent success.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from builder.backends import HostView, Unavailable
from builder.resources import data_table

__all__ = ["Platform", "Target", "Toolchain", "conan_arch", "cross_compiler_names", "for_host",
           "get", "multiarch_names", "names"]

#: ``uname -m`` / platform.machine() spellings → Conan's arch names
_CONAN_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "armv8", "arm64": "armv8"}


def conan_arch(machine: str) -> str:
    """A host's ``platform.machine()`` in Conan's naming (``aarch64`` → ``armv8``)."""
    return _CONAN_ARCH.get(machine.lower(), machine)


@dataclass(frozen=True)
class Toolchain:
    """How a host of one OS cross-compiles to a target."""

    compilers: tuple[tuple[str, str], ...]  # (Conan compiler_executables key, executable)
    install: str
    sysroot: str = ""
    multiarch: str = ""  # Debian architecture of the target's libraries (arm64)
    triplet: str = ""  # aarch64-linux-gnu
    test_machine: str = ""


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    os: str
    arch: str  # Conan's
    machine: str  # uname -m; CMAKE_SYSTEM_PROCESSOR
    conan_os: str
    system_name: str
    cross: tuple[tuple[str, Toolchain], ...]  # (host os, toolchain)
    needs: tuple[tuple[str, str], ...] = ()  # (tool, fix) a host building it must have
    unavailable: tuple[str, str] = ("", "")  # (reason, fix) for hosts of another OS
    runs_on: str = "ubuntu-latest"
    setup: tuple[str, ...] = ()

    def toolchain(self, host_os: str) -> Toolchain | None:
        return dict(self.cross).get(host_os)


@dataclass(frozen=True)
class Platform:
    """How this host builds a target: natively, or cross with these compilers."""

    target: Target
    cross: bool
    #: (Conan compiler_executables key, absolute path) of the cross compilers
    compilers: tuple[tuple[str, str], ...] = ()
    #: (executable name, version) of the cross compilers, for keys and manifests
    versions: tuple[tuple[str, str], ...] = ()
    toolchain: Toolchain | None = None

    @property
    def multiarch(self) -> str:
        return self.toolchain.multiarch if self.cross and self.toolchain else ""

    def test_skip(self) -> tuple[str, str]:
        """Why the tests of a cross-compiled variant do not run here, and the fix."""
        where = (self.toolchain.test_machine if self.toolchain else "") or \
            f"a {self.target.name} machine"
        return (f"cross-compiled for {self.target.name}; run the tests on {where}",
                f"copy the install tree to {where} and run the recipe's tests there, or "
                f"build there natively")


def _target(name: str, raw: dict[str, Any]) -> Target:
    cross = tuple((host_os, Toolchain(tuple(tc.get("compilers", {}).items()),
                                      tc.get("install", ""), tc.get("sysroot", ""),
                                      tc.get("multiarch", ""), tc.get("triplet", ""),
                                      tc.get("test_machine", "")))
                  for host_os, tc in raw.get("cross", {}).items())
    un = raw.get("unavailable", {})
    ci = raw.get("ci", {})
    return Target(name=name, description=raw.get("description", ""), os=raw["os"],
                  arch=raw["arch"], machine=raw["machine"], conan_os=raw["conan_os"],
                  system_name=raw["system_name"], cross=cross,
                  needs=tuple(raw.get("needs", {}).items()),
                  unavailable=(un.get("reason", ""), un.get("fix", "")),
                  runs_on=ci.get("runs_on", "ubuntu-latest"), setup=tuple(ci.get("setup", ())))


def names() -> tuple[str, ...]:
    return tuple(data_table("targets.json")["targets"])


def get(name: str) -> Target | None:
    raw = data_table("targets.json")["targets"].get(name)
    return _target(name, raw) if raw is not None else None


def cross_compiler_names(host_os: str) -> tuple[str, ...]:
    """Every cross compiler executable a host of ``host_os`` may use (for the probe)."""
    out: list[str] = []
    for name in names():
        t = get(name)
        tc = t.toolchain(host_os) if t else None
        if tc:
            out += [exe for _, exe in tc.compilers if exe not in out]
    return tuple(out)


def multiarch_names() -> tuple[str, ...]:
    """Debian architectures of every target's libraries (for the system-package probe)."""
    found: list[str] = []
    for name in names():
        t = get(name)
        for _, tc in (t.cross if t else ()):
            if tc.multiarch and tc.multiarch not in found:
                found.append(tc.multiarch)
    return tuple(found)


def for_host(name: str, host: HostView, backend: str = "") -> tuple[Platform | None,
                                                                      Unavailable | None]:
    """How ``host`` builds target ``name`` (the Platform), or why it cannot (Unavailable,
    its reason prefixed with ``backend:``).  Pure: only the host facts are consulted."""
    prefix = f"{backend}: " if backend else ""
    t = get(name)
    if t is None:
        return None, Unavailable(f"{prefix}unknown target platform '{name}'",
                                 f"known targets: {', '.join(names())}")
    tc = t.toolchain(host.os)
    native = host.os == t.os and conan_arch(host.arch) == t.arch
    if not native and tc is None:
        reason, fix = t.unavailable
        return None, Unavailable(prefix + (reason or f"{name} targets cannot be built on a "
                                           f"{host.os}-{host.arch} host"),
                                 fix or f"build it on a {t.description or name} host")
    for tool, fix in t.needs:
        if host.tool(tool) is None:
            return None, Unavailable(f"{prefix}{tool} not found (needed to build for {name})",
                                     fix)
    if native:
        return Platform(t, cross=False), None
    assert tc is not None
    paths: list[tuple[str, str]] = []
    versions: list[tuple[str, str]] = []
    for key, exe in tc.compilers:
        info = host.tool(exe)
        if info is None:
            return None, Unavailable(
                f"{prefix}cross compiler {exe} for {name} not found on this "
                f"{host.os}-{host.arch} host", tc.install or f"install {exe} and put it on PATH")
        paths.append((key, info.path))
        versions.append((exe, info.version))
    return Platform(t, cross=True, compilers=tuple(paths), versions=tuple(versions),
                    toolchain=tc), None
