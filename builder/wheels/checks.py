"""What a finished wheel must satisfy before it is kept — each failure names the file and
the symbol or line at fault:

* **symbol versions** — every versioned symbol its ELF files import from glibc,
  libstdc++, libgcc (``GLIBC_2.34``, ``GLIBCXX_3.4.30``, ``CXXABI_1.3.13``…) is one the
  wheel's manylinux tag allows (auditwheel's own policy table); a wheel tagged for an
  older glibc than its binaries need would install and then fail to load;
* **abi3** — an ``abi3`` wheel's extension modules import from libpython only what the
  limited API offers at the wheel's floor (``cp39-abi3``: Python 3.9), read from their
  dynamic symbols against ``abi3info``'s table (what ``abi3audit`` checks);
* **torch pin** — a wheel whose binaries link libtorch/libc10 requires
  ``torch==X.Y.*``: the C++ ABI of torch changes with every release;
* **GPU code** — every CUDA binary of the package (not the libraries auditwheel grafted)
  carries SASS for exactly the recipe's archs and PTX for none other
  (:mod:`builder.wheels.fatbin`): a build flag that adds or drops an arch is a drift;
* **minimum driver** — no CUDA binary of the package needs a newer driver than the plan
  stated (:mod:`builder.wheels.driver`: its PTX ISA, its toolkit, its fatbin codec): a
  PTX from another toolkit or a codec the plan did not choose is a drift;
* **SBOM coverage** — every shared object in the wheel is in its SBOM with the sha256
  of its bytes.
"""

from __future__ import annotations

import io
import json
import re
from functools import cache
from typing import Any

from builder.wheels.build import Member
from builder.wheels.driver import MinimumDriver, exceeds, implied
from builder.wheels.elf import is_elf, needed_in
from builder.wheels.fatbin import drift, manifest
from builder.wheels.metadata import TORCH_SONAMES
from builder.wheels.sbom import shared_objects

__all__ = ["check_abi3", "check_driver", "check_gpu_code", "check_sbom", "check_symbols",
           "check_torch_pin", "drivers", "gpu_code", "symbol_versions"]

_LIB = {"GLIBC": "libc", "GLIBCXX": "libstdc++", "CXXABI": "libstdc++", "GCC": "libgcc_s"}


def symbol_versions(data: bytes) -> list[tuple[str, str]]:
    """(soname, version name) pairs an ELF file requires (``.gnu.version_r``)."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection

    out: list[tuple[str, str]] = []
    elf = ELFFile(io.BytesIO(data))
    for sec in elf.iter_sections():
        if isinstance(sec, GNUVerNeedSection):
            for verneed, auxes in sec.iter_versions():
                out += [(str(verneed.name), str(aux.name)) for aux in auxes]
    return out


@cache
def _policies() -> dict[str, Any]:
    from importlib import resources

    text = resources.files("auditwheel.policy").joinpath("manylinux-policy.json").read_text()
    return {p["name"]: p for p in json.loads(text)}


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def check_symbols(members: list[Member], platform_tags: list[str]) -> list[str]:
    """The symbol versions the wheel's binaries need beyond what its manylinux tags
    allow, as ``file: GLIBC_2.34 (manylinux_2_28 allows up to GLIBC_2.28)`` lines."""
    wanted = [t for t in platform_tags if t.startswith("manylinux_")]
    if not wanted:
        return []
    try:
        policies = _policies()
    except (ImportError, OSError):
        return []
    problems: list[str] = []
    for tag in wanted:
        m = re.match(r"^(manylinux_\d+_\d+)_(.+)$", tag)
        if m is None:
            continue
        name, arch = m.groups()
        allowed = policies.get(name, {}).get("symbol_versions", {}).get(arch)
        if not allowed:
            continue
        for rel, data, _ in members:
            if not is_elf(data):
                continue
            for _so, ver in symbol_versions(data):
                prefix, _, number = ver.partition("_")
                if prefix not in allowed or not number:
                    continue
                ok = allowed[prefix]
                if _key(number) > max(_key(v) for v in ok):
                    problems.append(f"{rel}: {ver} from {_LIB.get(prefix, prefix)} ({name} "
                                    f"allows up to {prefix}_{max(ok, key=_key)})")
    return sorted(set(problems))


def check_torch_pin(members: list[Member], metadata: str) -> list[str]:
    """Files that link libtorch in a wheel whose metadata pins no torch release."""
    users = [rel for rel, data, _ in members if is_elf(data)
             and any(TORCH_SONAMES.match(n) for n in needed_in(data))]
    pinned = re.search(r"^Requires-Dist: torch ?==\s*\d+\.\d+\.\*", metadata, re.M)
    return [] if not users or pinned else \
        [f"{rel}: links libtorch, but the wheel requires no torch==X.Y.*" for rel in users]


def check_sbom(members: list[Member], sbom: str) -> list[str]:
    """Shared objects missing from the SBOM, or listed with another sha256."""
    listed = {c.get("name"): {h.get("content") for h in c.get("hashes", [])}
              for c in json.loads(sbom).get("components", [])}
    return [f"{rel}: not in the SBOM with sha256 {sha}"
            for rel, sha in shared_objects(members) if sha not in listed.get(rel, set())]


def gpu_code(members: list[Member]) -> dict[str, str]:
    """The GPU code manifest of each ELF member that has one, with the minimum driver it
    implies."""
    out = {}
    for rel, data, _ in members:
        found = manifest(data) if is_elf(data) else None
        if found is not None:
            try:
                need = implied(found)
            except ValueError:
                need = None
            out[rel] = found.describe() + (f"; minimum driver {need.describe()}"
                                           if need else "")
    return out


def drivers(members: list[Member]) -> dict[str, MinimumDriver]:
    """The minimum driver each ELF member with GPU code needs (grafted libraries too:
    the user's driver must load them as well); raises ValueError for a PTX ISA
    builder's table does not know."""
    out = {}
    for rel, data, _ in members:
        found = manifest(data) if is_elf(data) else None
        need = implied(found) if found is not None else None
        if need is not None:
            out[rel] = need
    return out


def check_driver(members: list[Member], promised: MinimumDriver | None) -> list[str]:
    """The package's CUDA binaries (not the libraries auditwheel grafted) that need a
    newer driver than the plan stated."""
    if promised is None:
        return []
    try:
        found = drivers(members)
    except ValueError as exc:
        return [str(exc)]
    return [f"{rel}: {why} (found {need.describe()}; the plan said "
            f"{promised.describe()})" for rel, need in sorted(found.items())
            if not rel.split("/")[0].endswith(".libs") and (why := exceeds(need, promised))]


def check_gpu_code(members: list[Member], archs: tuple[str, ...]) -> list[str]:
    """Binaries whose GPU code differs from the recipe's archs (grafted libraries, under
    ``*.libs/``, are someone else's build and not compared)."""
    if not archs:
        return []
    problems = []
    for rel, data, _ in members:
        if not is_elf(data) or rel.split("/")[0].endswith(".libs"):
            continue
        found = manifest(data)
        if found is not None and (why := drift(found, archs)):
            problems.append(f"{rel}: {why} (found {found.describe()}; the recipe builds "
                            f"{', '.join(archs)})")
    return problems


def _undefined(data: bytes) -> list[str]:
    """The undefined dynamic symbols of an ELF image (what it imports)."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    sec = ELFFile(io.BytesIO(data)).get_section_by_name(".dynsym")
    if not isinstance(sec, SymbolTableSection):
        return []
    return [str(sym.name) for sym in sec.iter_symbols()
            if sym.name and sym["st_shndx"] == "SHN_UNDEF"]


def check_abi3(members: list[Member], python_tag: str) -> list[str]:
    """Python C-API symbols an abi3 wheel's extensions use beyond the limited API of its
    floor (``cp39`` → 3.9), each named with the version that added it (or "not in the
    limited API")."""
    m = re.match(r"^cp(\d)(\d+)$", python_tag)
    if m is None:
        return []
    try:
        import abi3info  # type: ignore[import-untyped]  # no py.typed
    except ImportError:
        return ["abi3 wheel not checked: abi3info is not installed "
                "(pip install 'builder[wheels]')"]
    floor = (int(m.group(1)), int(m.group(2)))
    known = {sym.name: item for table in (abi3info.FUNCTIONS, abi3info.DATAS)
             for sym, item in table.items()}
    problems = []
    for rel, data, _ in members:
        if not is_elf(data) or rel.split("/")[0].endswith(".libs"):
            continue
        for name in _undefined(data):
            if not name.startswith(("Py", "_Py")):
                continue
            item = known.get(name)
            added = (item.added.major, item.added.minor) if item is not None else None
            if added is None:
                problems.append(f"{rel}: {name} is not in the limited API (abi3)")
            elif added > floor:
                problems.append(f"{rel}: {name} is in the limited API from Python "
                                f"{added[0]}.{added[1]}, above the wheel's floor "
                                f"{floor[0]}.{floor[1]}")
    return problems
