"""Lean GPU wheels: the CUDA toolkit's libraries come from NVIDIA's runtime wheels, the
way torch gets them, instead of being grafted into every wheel.

Terms:

* **runtime library** — a CUDA toolkit library NVIDIA ships as a wheel
  (``builder/resources/nvidia_wheels.json``: soname → distribution, and the folder under
  site-packages where that wheel installs it).  The table is per toolkit major: CUDA 13's
  wheels have no suffix (``nvidia-cublas``) and share ``nvidia/cu13/lib``; CUDA 12's are
  ``-cu12`` with one folder each.
* **exclusion** — auditwheel never copies a runtime library into the wheel (the plan
  lists them, so ``builder plan`` shows them).
* **requirement** — a wheel whose ELF files load one gets ``Requires-Dist`` on its wheel,
  floor the build's toolkit (``nvidia-cuda-runtime>=13.0,<14``), read from the binaries'
  ``DT_NEEDED`` entries, not guessed from the recipe.
* **runtime path** — each such ELF file gets an RPATH entry relative to itself
  (``$ORIGIN/../nvidia/cu13/lib``), so the installed package finds the libraries in
  site-packages with no ``LD_LIBRARY_PATH``.  It is set after auditwheel's repair, which
  drops RPATH entries that point outside the wheel.

``python -m builder.wheels.runtime FOLDER --toolkit 13.0.88`` sets the runtime paths of
the one wheel in FOLDER in place (the wheel step's planned command).
"""

from __future__ import annotations

import argparse
import posixpath
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from builder.resources import data_table
from builder.util import writer
from builder.wheels.build import Member, read_wheel, write_wheel
from builder.wheels.elf import is_elf, needed_in

__all__ = ["RuntimeLib", "exclusions", "libraries", "link", "match", "requirements",
           "runpath"]


@dataclass(frozen=True)
class RuntimeLib:
    soname: str  # without its version: ``libcublas.so``
    dist: str  # the wheel that ships it: ``nvidia-cublas``
    dir: str  # where that wheel installs it, relative to site-packages
    tracks_toolkit: bool  # its version is the toolkit's


def _major_minor(version: str) -> tuple[int, int] | None:
    parts = version.split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return int(parts[0]), int(parts[1])


def libraries(toolkit: str) -> tuple[RuntimeLib, ...]:
    """The runtime libraries of a CUDA toolkit version (``13.0.88``); () for one whose
    libraries NVIDIA ships no wheels of."""
    mm = _major_minor(toolkit)
    table = data_table("nvidia_wheels.json")["toolkits"]
    if mm is None or str(mm[0]) not in table:
        return ()
    return tuple(RuntimeLib(e["soname"], e["dist"], e["dir"], e["tracks_toolkit"])
                 for e in table[str(mm[0])]["libraries"])


def exclusions(toolkit: str) -> tuple[str, ...]:
    """auditwheel ``--exclude`` patterns for the toolkit's runtime libraries."""
    return tuple(f"{lib.soname}*" for lib in libraries(toolkit))


def match(soname: str, libs: tuple[RuntimeLib, ...]) -> RuntimeLib | None:
    """The runtime library a ``DT_NEEDED`` soname (``libcudart.so.13``) names."""
    return next((lib for lib in libs if soname == lib.soname or
                 soname.startswith(lib.soname + ".")), None)


def requirements(sonames: list[str], toolkit: str) -> list[str]:
    """``Requires-Dist`` lines for the runtime libraries among ``sonames``: floor the
    build's toolkit major.minor (or the soname's major for a library versioned on its
    own), below the next major (a new major is a new ABI)."""
    libs, mm = libraries(toolkit), _major_minor(toolkit)
    out: dict[str, str] = {}
    for so in sonames:
        lib = match(so, libs)
        if lib is None or mm is None:
            continue
        tail = so[len(lib.soname) + 1:].split(".")[0]
        major = int(tail) if tail.isdigit() else mm[0]
        floor = f"{mm[0]}.{mm[1]}" if lib.tracks_toolkit and major == mm[0] else f"{major}"
        out.setdefault(lib.dist, f"{lib.dist}>={floor},<{major + 1}")
    return sorted(out.values())


def _site_rel(member: str) -> str | None:
    """A member's path relative to site-packages (None for scripts, headers, data)."""
    parts = member.split("/")
    if parts[0].endswith(".data"):
        if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
            return None
        return "/".join(parts[2:])
    return member


def runpath(member: str, sonames: list[str], libs: tuple[RuntimeLib, ...]) -> str:
    """The RPATH entries (``$ORIGIN/…``) a member needs for its runtime libraries ("" if
    none)."""
    rel = _site_rel(member)
    if rel is None:
        return ""
    here = posixpath.dirname(rel) or "."
    dirs = dict.fromkeys(lib.dir for so in sonames if (lib := match(so, libs)) is not None)
    return ":".join("$ORIGIN/" + posixpath.relpath(d, here) for d in dirs)


def link(folder: Path, toolkit: str, patchelf: str = "patchelf") -> list[str]:
    """Add the runtime paths to the ELF files of the one wheel in ``folder``, rewriting
    it in place (atomically); returns what was done, for the log."""
    wheels = sorted(folder.glob("*.whl"))
    if len(wheels) != 1:
        raise ValueError(f"expected one wheel in {folder}, found {len(wheels)}")
    whl = wheels[0]
    libs = libraries(toolkit)
    members = read_wheel(whl)
    said: list[str] = []
    out: list[Member] = []
    tmp = writer.make_temp_dir(folder, "rpath-")
    try:
        for rel, data, mode in members:
            entries = runpath(rel, needed_in(data), libs) if is_elf(data) else ""
            if entries:
                f = tmp / "obj"
                writer.write_bytes(f, data, sync=False)
                subprocess.run([patchelf, "--add-rpath", entries, str(f)], check=True,
                               capture_output=True, text=True)
                said.append(f"{rel}: RPATH += {entries}")
                out.append((rel, f.read_bytes(), mode))
            else:
                out.append((rel, data, mode))
    finally:
        writer.remove(tmp)
    name, version, tag = whl.name[:-4].split("-", 2)
    info = f"{name}-{version}.dist-info"
    meta = next(d for r, d, _ in members if r == f"{info}/METADATA").decode()
    dist = next((line.split(":", 1)[1].strip() for line in meta.splitlines()
                 if line.startswith("Name:")), name)
    if said:
        tmp_dir = folder / ".linked"
        writer.remove(tmp_dir)
        made = write_wheel(out, tmp_dir, dist, version, tag)
        writer.move(made, whl)
        writer.remove(tmp_dir)
    return said or ["no ELF file loads a CUDA runtime library: nothing to link"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m builder.wheels.runtime",
                                 description="RPATH a wheel's ELF files into site-packages' "
                                             "NVIDIA runtime-library folders")
    ap.add_argument("folder", type=Path)
    ap.add_argument("--toolkit", required=True, help="the CUDA toolkit version built with")
    ap.add_argument("--patchelf", default="patchelf")
    args = ap.parse_args(argv)
    try:
        for line in link(args.folder, args.toolkit, args.patchelf):
            print(line)
    except (OSError, ValueError, subprocess.CalledProcessError) as exc:
        print(f"cannot set the wheel's runtime paths: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
