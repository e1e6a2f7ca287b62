"""The little of ELF that wheels need: is a file a shared object, and which sonames it
loads (``DT_NEEDED``) — read in Python, so that planning and checks need no binutils."""

from __future__ import annotations

import struct
from pathlib import Path

__all__ = ["is_elf", "needed", "needed_in"]


def needed(path: Path) -> list[str]:
    """The ``DT_NEEDED`` sonames of an ELF file ([] for anything else)."""
    try:
        return needed_in(path.read_bytes())
    except OSError:
        return []


def is_elf(data: bytes) -> bool:
    return data[:4] == b"\x7fELF"


def needed_in(data: bytes) -> list[str]:
    """The ``DT_NEEDED`` sonames of an ELF image in memory ([] for anything else)."""
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
