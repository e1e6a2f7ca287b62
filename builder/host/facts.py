"""Host facts: what this machine offers, probed once and passed on as a value.

:mod:`builder.host.probe` looks at the machine; its result,
:class:`HostFacts`, is a frozen value with a JSON round trip, so that
``builder plan --host-facts h100.json`` plans for another machine and the
resolver never touches the environment.  Tool versions are cached on disk keyed
by each executable's path, size and mtime, so that a command that finds nothing
to do stays well under a second.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from builder.errors import Diagnostic, Location, RecipeError

__all__ = [
    "DEFAULT_PY_PACKAGES",
    "PYTHON_MINORS",
    "HostFacts",
    "MemoryFacts",
    "PythonInfo",
    "ToolInfo",
    "load_host_facts",
]

#: Python packages whose installed version every probe records (recipes may add more).
DEFAULT_PY_PACKAGES = ("torch", "numpy", "pybind11")
PYTHON_MINORS = tuple(range(8, 15))


@dataclass(frozen=True)
class ToolInfo:
    name: str
    path: str
    version: str
    archs: tuple[str, ...] = ()  # GPU archs the installed toolchain really supports
    #: a C++ compiler with no shared libstdc++ next to it: it links a private static copy
    #: into every shared library it builds
    static_runtime: bool = False
    #: sha256 of what runs (resolved binary, wrapper targets, the programs a compiler
    #: driver runs) and the version output (:mod:`builder.host.identity`); "" when unknown
    identity: str = ""


@dataclass(frozen=True)
class MemoryFacts:
    total: int = 0
    available: int = 0
    swap: int = 0
    cgroup_version: int = 0  # 0: none found, 1 or 2
    cgroup_limit: int = 0  # bytes; 0: no limit
    cgroup_writable: bool = False

    def usable(self) -> int:
        """Memory a build may use before any reserve: min(cgroup limit, available)."""
        cands = [v for v in (self.available, self.cgroup_limit) if v > 0]
        return min(cands) if cands else 0


@dataclass(frozen=True)
class PythonInfo:
    version: str  # "3.11"
    full: str  # "3.11.7"
    path: str
    packages: tuple[tuple[str, str], ...] = ()  # (name, installed version)
    #: (package, CMake prefix) for Python packages that ship CMake config files
    cmake_prefixes: tuple[tuple[str, str], ...] = ()

    @property
    def torch_cmake(self) -> str:
        """torch's CMake prefix path, when torch is installed."""
        return dict(self.cmake_prefixes).get("torch", "")

    def package(self, name: str) -> str | None:
        return dict(self.packages).get(name.lower())


@dataclass(frozen=True)
class HostFacts:
    os: str
    arch: str
    cpus: int
    memory: MemoryFacts
    tools: tuple[ToolInfo, ...] = ()
    pythons: tuple[PythonInfo, ...] = ()
    default_python: str = ""
    gpus: tuple[str, ...] = ()  # "NVIDIA H100 (9.0)"
    system_packages: tuple[tuple[str, str], ...] = ()  # (Debian package, version) asked about
    source: str = "probed"  # or the host-facts file it was read from
    builder_python: str = ""  # the interpreter running builder (compiler launchers use it)

    def tool(self, name: str) -> ToolInfo | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None

    def python(self, version: str) -> PythonInfo | None:
        for p in self.pythons:
            if p.version == version:
                return p
        return None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any], file: str = "<host facts>") -> HostFacts:
        try:
            mem = MemoryFacts(**data.get("memory", {}))
            tools = tuple(ToolInfo(**{**t, "archs": tuple(t.get("archs", ()))})
                          for t in data.get("tools", ()))
            pythons = tuple(_python_from_json(p) for p in data.get("pythons", ()))
            return HostFacts(os=str(data["os"]), arch=str(data["arch"]), cpus=int(data["cpus"]),
                             memory=mem, tools=tools, pythons=pythons,
                             default_python=str(data.get("default_python", "")),
                             gpus=tuple(data.get("gpus", ())), source=file,
                             system_packages=tuple(tuple(x) for x in data.get(
                                 "system_packages", ())),
                             builder_python=str(data.get("builder_python", "")))
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise RecipeError([Diagnostic(Location(file), "", f"not a host-facts file: {what}",
                                          "write one with `builder host --format json`")]) \
                from None


def _python_from_json(p: dict[str, Any]) -> PythonInfo:
    prefixes = [tuple(x) for x in p.get("cmake_prefixes", ())]
    if p.get("torch_cmake") and not prefixes:  # files written before cmake_prefixes
        prefixes = [("torch", p["torch_cmake"])]
    return PythonInfo(version=str(p["version"]), full=str(p["full"]), path=str(p["path"]),
                      packages=tuple(tuple(x) for x in p.get("packages", ())),
                      cmake_prefixes=tuple(prefixes))


def load_host_facts(path: Path) -> HostFacts:
    from builder.util.records import read_json

    try:
        data = read_json(path)
    except OSError as exc:
        raise RecipeError([Diagnostic(Location(str(path)), "", f"cannot read: {exc.strerror}")]) \
            from None
    except ValueError as exc:  # not a regular file, not UTF-8, not JSON
        raise RecipeError([Diagnostic(Location(str(path)), "", str(exc),
                                      "write one with `builder host --format json`")]) \
            from None
    if not isinstance(data, dict):
        raise RecipeError([Diagnostic(Location(str(path)), "", "expected a JSON object")])
    try:
        return HostFacts.from_json(data, path.name)
    except RecipeError as exc:  # named by its whole path in the message
        from dataclasses import replace

        raise RecipeError([replace(d, location=Location(str(path)))
                           for d in exc.diagnostics]) from None
