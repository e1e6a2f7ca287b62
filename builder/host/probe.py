"""Probing this machine: tools and their versions, Python interpreters and their
packages, memory and cgroups, GPUs, distribution packages.  ``probe()`` is the only
function that looks at the machine; what a GPU backend's toolchain can build is asked
of the backend (:meth:`builder.backends.Backend.probe_toolchain`).  Slow probes are cached
on disk keyed by each executable's path, size and mtime, so that a command that finds
nothing to do stays well under a second."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import platform
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from builder import backends as registry
from builder.backends.platforms import cross_compiler_names
from builder.host.facts import (
    DEFAULT_PY_PACKAGES,
    PYTHON_MINORS,
    HostFacts,
    MemoryFacts,
    PythonInfo,
    ToolInfo,
)
from builder.host.identity import driver_programs, identity, stats_match, tool_files
from builder.util.runner import capture

__all__ = ["IDENTIFIED", "find_executable", "first_version", "probe", "probe_memory",
           "tightest_limit", "tool_search_path"]


class _ProbeCache:
    """Results of slow probes keyed by the probed file's identity."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.data: dict[str, Any] = {}
        self.dirty = False
        if path is not None:
            from builder.util.records import read_host_cache

            self.data = read_host_cache(path)  # checked; a damaged one is set aside

    @staticmethod
    def key(kind: str, exe: str, extra: str = "") -> str:
        try:
            st = os.stat(exe)
            ident = f"{st.st_size}:{st.st_mtime_ns}"
        except OSError:
            ident = "?"
        return f"{kind}|{exe}|{ident}|{extra}"

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def put(self, key: str, value: Any) -> None:
        self.data[key] = value
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        from builder.util.records import write_json

        write_json(self.path, self.data)  # a cache: not saved where it cannot be


_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)")


def first_version(text: str, pattern: re.Pattern[str] = _VERSION) -> str:
    """The first dotted version number in a tool's output."""
    m = pattern.search(text)
    return m.group(1) if m else ""


def _version(tool: str, exe: str, args: list[str]) -> tuple[int, str]:
    """Run ``exe args`` for its version, touching no tool's home: conan creates (and
    migrates) the Conan home it is given, so it gets a throwaway one — never the user's
    ``~/.conan2``, never builder's project-local home."""
    if tool == "xmake":  # xmake refuses to run as root unless told it may (as builds are)
        return capture([exe, *args], env={**os.environ, "XMAKE_ROOT": "y"})
    if tool == "conan":
        from builder.util.scratch import private_tmp

        with private_tmp("builder-conan-probe-") as home:
            if home is None:
                return 1, "no temporary folder for a throwaway Conan home"
            return capture([exe, *args], env={**os.environ, "CONAN_HOME": home})
    return capture([exe, *args])


_TOOL_PROBES: dict[str, tuple[list[str], tuple[str, ...]]] = {
    # tool name: (version argv after the executable, candidate executable names);
    # each GPU backend's tool (nvcc, hipcc, xcrun) is added from the backend registry
    "cmake": (["--version"], ("cmake",)),
    "ninja": (["--version"], ("ninja",)),
    "conan": (["--version"], ("conan",)),
    "cc": (["-dumpfullversion", "-dumpversion"], ("gcc", "cc", "clang")),
    "cxx": (["-dumpfullversion", "-dumpversion"], ("g++", "c++", "clang++")),
    "ccache": (["--version"], ("ccache",)),
    "sccache": (["--version"], ("sccache",)),
    "git": (["--version"], ("git",)),
    "patch": (["--version"], ("patch",)),
    "xmake": (["--version"], ("xmake",)),
    # wheel repair (manylinux tags): auditwheel needs patchelf
    "auditwheel": (["--version"], ("auditwheel",)),
    "patchelf": (["--version"], ("patchelf",)),
}


#: tools whose output ends up in a build: identified by content, not by version alone
IDENTIFIED = frozenset({"cc", "cxx", "cmake", "conan", "xmake"})


def tool_search_path() -> str:
    """Where tools are looked for: the folder of builder's own interpreter first, then
    PATH.  A virtual environment's ``bin`` holds the conan, cmake and ninja installed
    with builder, and ``venv/bin/builder`` is often run without that folder on PATH."""
    own = os.path.dirname(sys.executable) if sys.executable else ""
    return os.pathsep.join(d for d in (own, os.environ.get("PATH", os.defpath)) if d)


def find_executable(name: str) -> str | None:
    """``name`` next to builder's interpreter, else on PATH (an absolute path as is)."""
    return shutil.which(name, path=tool_search_path())


def _find_exe(tool: str, names: tuple[str, ...]) -> str | None:
    env_override = {"cc": "CC", "cxx": "CXX"}.get(tool) or next(
        (be.tool_env for be in registry.backends() if be.tool == tool), None)
    if env_override and os.environ.get(env_override):
        found = find_executable(os.environ[env_override])
        if found:
            return found
    for n in names:
        found = find_executable(n)
        if found:
            return found
    if tool in ("conan", "cmake", "ninja"):
        # installed from PyPI next to builder's interpreter (conan is a dependency of builder):
        # found without an activated venv too, e.g. `.venv/bin/builder` or pipx
        scripts = os.path.dirname(sys.executable)
        for n in names:
            found = shutil.which(n, path=scripts)
            if found:
                return found
    return None


def _probe_tool(tool: str, cache: _ProbeCache,
                spec: tuple[list[str], tuple[str, ...]] | None = None) -> ToolInfo | None:
    args, names = spec or _TOOL_PROBES[tool]
    exe = _find_exe(tool, names)
    if exe is None:
        return None
    # (":rt": C++ compiler entries also say where the C++ runtime is; older ones re-probe)
    key = cache.key("tool:" + tool + (":rt" if tool == "cxx" else ""), exe)
    hit = cache.get(key)
    # an identity is used only while every file it was read from is unchanged (a wrapper's
    # target upgraded behind an unchanged wrapper is noticed by its own stat)
    if hit is not None and ((tool not in IDENTIFIED and not _identified(tool)) or
                            ("identity" in hit and stats_match(hit.get("files", ())))):
        return ToolInfo(tool, exe, hit["version"], tuple(hit.get("archs", ())),
                        bool(hit.get("static_runtime", False)), hit.get("identity", ""))
    rc, out = _version(tool, exe, args)
    if rc != 0:
        return None
    backend = next((be for be in registry.backends() if be.tool == tool), None)
    if backend is not None:  # a GPU toolchain: the backend reads its version and archs
        version, archs = backend.probe_toolchain(exe, out, capture)
    else:
        version = first_version(out)
        archs = ()
    static = False
    if tool == "cxx":  # where the shared C++ runtime is, as the linker will look for it
        rc3, lib = capture([exe, "-print-file-name=libstdc++.so"])
        static = rc3 == 0 and sys.platform.startswith("linux") and \
            "clang" not in Path(exe).name and not os.path.isabs(lib.strip())
    entry: dict[str, Any] = {"version": version, "archs": list(archs),
                             "static_runtime": static}
    if tool in IDENTIFIED or _identified(tool):
        search = tool_search_path()
        files = tool_files(exe, search)
        files = tool_files(exe, search, driver_programs(tool, exe, capture, files))
        entry["identity"], stats = identity(files, out)
        entry["files"] = [list(s) for s in stats]
    cache.put(key, entry)
    return ToolInfo(tool, exe, version, archs, static, entry.get("identity", ""))


def _identified(tool: str) -> bool:
    """A GPU backend's compiler or a cross compiler: identified by content too."""
    return tool.endswith(("-gcc", "-g++")) or any(be.tool == tool
                                                  for be in registry.backends())


_PY_PROBE = r"""
import sys, json, platform, importlib.metadata as md, importlib.util
names = sys.argv[1:]
pk = {}
for n in names:
    try:
        pk[n.lower()] = md.version(n)
    except Exception:
        pass
prefixes = []
for name, sub in (("torch", "/share/cmake"), ("pybind11", "")):
    if name in pk:
        try:
            spec = importlib.util.find_spec(name)
            if spec and spec.submodule_search_locations:
                where = list(spec.submodule_search_locations)[0] + sub
                prefixes.append([name, where])
        except Exception:
            pass
import sysconfig
print(json.dumps({"version": "%d.%d" % sys.version_info[:2],
                  "purelib": sysconfig.get_paths()["purelib"],
                  "full": platform.python_version(), "packages": sorted(pk.items()),
                  "cmake_prefixes": prefixes}))
"""


# the probe script is part of the cache key: a new probe re-probes every interpreter
_PROBE_ID = "#" + hashlib.sha256(_PY_PROBE.encode()).hexdigest()[:8]


def _python_candidates() -> list[str]:
    cands: list[str] = [sys.executable]
    for minor in PYTHON_MINORS:
        exe = shutil.which(f"python3.{minor}")
        if exe:
            cands.append(exe)
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for d in sorted(glob.glob(os.path.join(root, "versions", "*", "bin", "python3"))):
        cands.append(d)
    return cands


def _probe_pythons(cache: _ProbeCache, packages: tuple[str, ...]) -> tuple[PythonInfo, ...]:
    seen_real: set[str] = set()
    by_version: dict[str, PythonInfo] = {}
    for exe in _python_candidates():
        # Probe the path as found, not its realpath: a virtual environment's python is a
        # symlink to the base interpreter, and only the link sees the venv's packages.
        real = os.path.abspath(exe)
        if real in seen_real or not os.access(real, os.X_OK) or "/shims/" in real:
            continue  # pyenv shims are scripts that fail for non-global versions
        seen_real.add(real)
        key = cache.key("python", real, ",".join(packages) + _PROBE_ID)
        hit = cache.get(key)
        if hit is not None and hit.get("purelib") and \
                _mtime(hit["purelib"]) != hit.get("purelib_mtime"):
            hit = None  # a package was installed or removed since the last probe
        if hit is None:
            rc, out = capture([real, "-I", "-c", _PY_PROBE, *packages], timeout=30)
            try:
                hit = json.loads(out.strip().splitlines()[-1]) if rc == 0 else {}
            except (ValueError, IndexError):
                hit = {}
            if hit:
                hit["purelib_mtime"] = _mtime(hit.get("purelib", ""))
            cache.put(key, hit)
        if not hit:
            continue
        info = PythonInfo(hit["version"], hit["full"], real,
                          tuple((str(a), str(b)) for a, b in hit["packages"]),
                          tuple((str(a), str(b)) for a, b in hit.get("cmake_prefixes", ())))
        by_version.setdefault(info.version, info)
    return tuple(sorted(by_version.values(), key=lambda p: int(p.version.split(".")[1])))


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _read_int(path: str) -> int:
    try:
        raw = Path(path).read_text().strip()
    except OSError:
        return 0
    if raw in ("max", ""):
        return 0
    try:
        v = int(raw)
    except ValueError:
        return 0
    return 0 if v >= 1 << 60 else v  # cgroup v1 writes ~2^63 for "no limit"


def _meminfo() -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            name, _, rest = line.partition(":")
            parts = rest.split()
            if parts:
                out[name] = int(parts[0]) * 1024
    except OSError:
        pass
    return out


def tightest_limit(root: Path, own: str, name: str) -> int:
    """The tightest memory limit (file ``name``) on the way from our cgroup ``own`` (a path
    below the hierarchy's ``root``) up to the root, in bytes; 0 when none.  Every one of
    them applies: a build started in a leaf of a capped group (a bench's, a CI job's, a
    systemd scope in a capped slice) sees no limit in its own group."""
    parts = [p for p in own.split("/") if p]
    limits = [_read_int(str(root.joinpath(*parts[:i]) / name)) for i in range(len(parts) + 1)]
    return min((x for x in limits if x), default=0)


def probe_memory() -> MemoryFacts:
    mi = _meminfo()
    version, limit, writable = 0, 0, False
    if os.path.isfile("/sys/fs/cgroup/cgroup.controllers"):
        version = 2
        own = ""
        try:
            for line in Path("/proc/self/cgroup").read_text().splitlines():
                if line.startswith("0::"):
                    own = line[3:]
        except OSError:
            pass
        limit = tightest_limit(Path("/sys/fs/cgroup"), own, "memory.max")
        writable = os.access("/sys/fs/cgroup", os.W_OK) and "memory" in Path(
            "/sys/fs/cgroup/cgroup.controllers").read_text()
    elif os.path.isdir("/sys/fs/cgroup/memory"):
        version = 1
        own = "/"
        try:
            for line in Path("/proc/self/cgroup").read_text().splitlines():
                _, ctrl, path = line.split(":", 2)
                if "memory" in ctrl.split(","):
                    own = path
        except (OSError, ValueError):
            pass
        v1_root = Path("/sys/fs/cgroup/memory")
        limit = tightest_limit(v1_root, own, "memory.limit_in_bytes")
        writable = os.access(v1_root / own.lstrip("/"), os.W_OK)
    return MemoryFacts(total=mi.get("MemTotal", 0), available=mi.get("MemAvailable", 0),
                       swap=mi.get("SwapTotal", 0), cgroup_version=version,
                       cgroup_limit=limit, cgroup_writable=writable)


def _probe_gpus() -> tuple[str, ...]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return ()
    rc, out = capture([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"], 10)
    if rc != 0:
        return ()
    return tuple(f"{n.strip()} ({c.strip()})" for n, _, c in
                 (line.partition(",") for line in out.splitlines() if line.strip()))


def _probe_system_packages(cache: _ProbeCache, names: tuple[str, ...]
                           ) -> tuple[tuple[str, str], ...]:
    """Installed versions of the Debian packages ``names`` (missing ones are left out).
    A name qualified with a foreign architecture (``libprotobuf-dev:arm64``, Debian
    multiarch, for cross builds) is reported under that qualified name; an unqualified
    name only counts when it is installed for the native architecture (or ``all``)."""
    dpkg = shutil.which("dpkg-query")
    if not names or dpkg is None:
        return ()
    key = cache.key("dpkg-multiarch", "/var/lib/dpkg/status", ",".join(names))
    hit = cache.get(key)
    if hit is None:
        rc, native = capture([shutil.which("dpkg") or "dpkg", "--print-architecture"])
        native = native.strip() if rc == 0 else ""
        _, out = capture([dpkg, "-W", "-f", "${Package} ${Architecture} ${Status} ${Version}\n",
                          *names])
        wanted = set(names)
        hit = []
        for line in out.splitlines():
            parts = line.split()
            if len(parts) < 6 or parts[4] != "installed":
                continue
            pkg, arch, version = parts[0], parts[1], parts[5]
            if f"{pkg}:{arch}" in wanted:
                hit.append([f"{pkg}:{arch}", version])
            elif pkg in wanted and (not native or arch in (native, "all")):
                hit.append([pkg, version])
        cache.put(key, hit)
    return tuple((str(a), str(b)) for a, b in hit)


def probe(cache_file: Path | None = None, python_packages: tuple[str, ...] = (),
          system_packages: tuple[str, ...] = ()) -> HostFacts:
    """Look at this machine once.  ``cache_file`` keeps slow tool probes between runs."""

    cache = _ProbeCache(cache_file)
    system = {"Linux": "linux", "Darwin": "macos", "Windows": "windows"}.get(
        platform.system(), platform.system().lower())
    specs = {**_TOOL_PROBES, **{be.tool: (["--version"], (be.tool,))
                                for be in registry.backends() if be.tool}}
    tools = tuple(t for t in (_probe_tool(name, cache, spec) for name, spec in specs.items())
                  if t)
    # cross compilers of the target platforms (data/targets.json), probed by name on PATH
    tools += tuple(t for t in (_probe_tool(exe, cache, (["-dumpfullversion", "-dumpversion"],
                                                        (exe,)))
                               for exe in cross_compiler_names(system)) if t)
    packages = tuple(sorted({*DEFAULT_PY_PACKAGES, *(p.lower() for p in python_packages)}))
    pythons = _probe_pythons(cache, packages)
    installed = _probe_system_packages(cache, tuple(sorted(set(system_packages))))
    cache.save()
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS
        cpus = os.cpu_count() or 1
    return HostFacts(os=system, arch=platform.machine(), cpus=cpus, memory=probe_memory(),
                     tools=tools, pythons=pythons,
                     default_python="{}.{}".format(*sys.version_info[:2]), gpus=_probe_gpus(),
                     builder_python=sys.executable, system_packages=installed)
