"""Making a planned wheel (:class:`builder.wheels.metadata.WheelPlan`): write it, repair
it with auditwheel, put the result in its folder.

The wheel step's parameters carry the plan; its one command (when the wheel is
repaired) is the ``auditwheel repair`` argv the plan shows.  The executor calls
:func:`write_raw`, runs the command, then :func:`finish`.  A wheel that links libtorch
gets ``Requires-Dist: torch==X.Y.*``: whether it does is read from the ELF files'
``DT_NEEDED`` entries (:func:`needed`), not guessed from the recipe.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path

from builder.plan.payloads import WheelBuild
from builder.util import writer
from builder.wheels.build import build_wheel
from builder.wheels.metadata import TORCH_SONAMES, torch_pin

__all__ = ["RAW", "REPAIRED", "explain", "find", "finish", "links_torch", "needed", "write_raw"]

RAW = ".raw"  # below the wheel folder: the wheel as written, before repair
REPAIRED = ".repaired"  # auditwheel's output folder


def needed(path: Path) -> list[str]:
    """The ``DT_NEEDED`` sonames of an ELF file ([] for anything else)."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    if data[:4] != b"\x7fELF" or len(data) < 64:
        return []
    is64, little = data[4] == 2, data[5] == 1
    e = "<" if little else ">"
    if is64:
        phoff, = struct.unpack_from(e + "Q", data, 0x20)
        phentsize, phnum = struct.unpack_from(e + "HH", data, 0x36)
        ph_fmt, dyn_fmt = e + "IIQQQQQQ", e + "qQ"
    else:
        phoff, = struct.unpack_from(e + "I", data, 0x1C)
        phentsize, phnum = struct.unpack_from(e + "HH", data, 0x2A)
        ph_fmt, dyn_fmt = e + "IIIIIIII", e + "iI"
    loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    dynamic: tuple[int, int] | None = None
    for i in range(phnum):
        f = struct.unpack_from(ph_fmt, data, phoff + i * phentsize)
        if is64:
            p_type, _, p_offset, p_vaddr, _, p_filesz = f[:6]
        else:
            p_type, p_offset, p_vaddr, _, p_filesz = f[:5]
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 2:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return []
    size = struct.calcsize(dyn_fmt)
    entries = [struct.unpack_from(dyn_fmt, data, dynamic[0] + k * size)
               for k in range(dynamic[1] // size)]
    strtab = next((v for t, v in entries if t == 5), None)
    if strtab is None:
        return []
    base = next((off + strtab - va for va, off, sz in loads if va <= strtab < va + sz), None)
    if base is None:
        return []
    out = []
    for tag, val in entries:
        if tag == 0:
            break
        if tag == 1:
            end = data.find(b"\0", base + val)
            out.append(data[base + val:end].decode(errors="replace"))
    return out


def _files(src: Path) -> Iterator[Path]:
    return (p for p in sorted(src.rglob("*")) if p.is_file() and not p.is_symlink())


def links_torch(src: Path) -> list[str]:
    """The files under ``src`` that link libtorch or libc10 (relative paths)."""
    return [p.relative_to(src).as_posix() for p in _files(src)
            if any(TORCH_SONAMES.match(n) for n in needed(p))]


def write_raw(w: WheelBuild) -> tuple[Path, list[str]]:
    """Write the wheel as planned (before repair); returns it and what the log should say."""
    src, folder = Path(w.src), Path(w.out_dir)
    raw_dir = folder / RAW
    writer.remove(raw_dir)
    writer.remove(folder / REPAIRED)
    requires = list(w.requires)
    said = []
    torch = w.torch
    users = links_torch(src) if src.is_dir() else []
    if users and torch and torch_pin(torch):
        requires.insert(0, torch_pin(torch))
        said.append(f"{', '.join(users)} link(s) libtorch: requires {torch_pin(torch)} "
                    f"(built against torch {torch})")
    elif users:
        said.append(f"{', '.join(users)} link(s) libtorch, but the build interpreter's "
                    f"torch version is unknown: no torch pin")
    wheel = build_wheel(src, raw_dir, w.name, w.version, w.tag, requires=tuple(requires),
                        summary=w.summary, classifiers=w.classifiers, keywords=w.keywords,
                        requires_python=w.requires_python)
    said.append(f"wrote {wheel.name}")
    return wheel, said


def finish(w: WheelBuild, repaired: bool) -> Path:
    """Move the final wheel (repaired, or as written) into the wheel folder, replacing
    what an earlier build of the same variant left there; returns it."""
    folder = Path(w.out_dir)
    src = folder / (REPAIRED if repaired else RAW)
    made = sorted(src.glob("*.whl"))
    if len(made) != 1:
        raise ValueError(f"expected one wheel in {src}, found {len(made)}")
    dist = w.name.replace("-", "_").lower() + "-"
    for old in folder.glob("*.whl"):
        if old.name.lower().startswith(dist):
            writer.remove(old)
    final = folder / made[0].name
    writer.move(made[0], final)
    writer.remove(folder / RAW)
    writer.remove(folder / REPAIRED)
    return final


def find(w: WheelBuild) -> Path | None:
    """The wheel a wheel step made (None before it has run)."""
    folder = Path(w.out_dir)
    pattern = w.glob
    hits = sorted(p for p in folder.glob("*.whl") if fnmatch(p.name, pattern)) \
        if folder.is_dir() else []
    return hits[-1] if hits else None


_TOO_NEW = re.compile(r"too-recent versioned symbols", re.I)


def explain(tail: list[str], policy: str) -> str:
    """Why ``auditwheel repair`` refused, in words a maintainer can act on."""
    text = "\n".join(tail)
    symbols = sorted(set(re.findall(r"\b(GLIBC(?:XX)?_[0-9.]+|CXXABI_[0-9.]+)\b", text)))
    if _TOO_NEW.search(text):
        extra = f" ({', '.join(symbols)})" if symbols else ""
        return (f"the wheel cannot be {policy}: its binaries use symbol versions newer than "
                f"that policy allows{extra} — the compiler's glibc/libstdc++ is too new. "
                f"Build with an older toolchain (e.g. in a manylinux container), or set "
                f"wheel.manylinux: auto to take the oldest policy these binaries satisfy")
    missing = re.findall(r'required library "([^"]+)" could not be located', text, re.I)
    if missing:
        return ("auditwheel cannot find a library the wheel needs"
                + (f" ({', '.join(sorted(set(missing)))})" if missing else "")
                + "; add its folder to the install tree, or list it in wheel.exclude if the "
                  "runtime provides it")
    return ("auditwheel refused the wheel; the log says why (set wheel.manylinux: none to "
            "keep a linux wheel for local use only)")
