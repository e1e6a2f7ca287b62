"""What GPU code a CUDA binary carries, read from its ``.nv_fatbin`` ELF section in
Python — so the check runs where ``cuobjdump`` is not installed (it gives the same
lists: ``cuobjdump --list-elf`` / ``--list-ptx``).

The section holds one or more fat-binary containers: a 16-byte header (magic
``0xBA55ED50``, version, header size, size of the entries) and entries back to back,
each with its own header: kind (1 PTX, 2 or 16 an ELF cubin = SASS), header size, the
padded payload size, the compressed payload size, and the SM arch (``90``).  An entry
whose flags carry ``0x8000`` is compressed (``nvcc --compress-mode``), which needs a
newer driver to load.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["FATBIN_MAGIC", "Manifest", "drift", "manifest"]

FATBIN_MAGIC = 0xBA55ED50
_PTX, _ELF = (1,), (2, 16)
_COMPRESSED = 0x8000


@dataclass(frozen=True)
class Manifest:
    sass: tuple[int, ...] = ()  # the SM archs with machine code (``sm_90`` → 90)
    ptx: tuple[int, ...] = ()  # the virtual archs with PTX (JIT-compiled for newer GPUs)
    compressed: bool = False

    def describe(self) -> str:
        return (f"SASS {', '.join(f'sm_{a}' for a in self.sass) or 'none'}; PTX "
                f"{', '.join(f'compute_{a}' for a in self.ptx) or 'none'}"
                + ("; compressed" if self.compressed else ""))


def _section(data: bytes, wanted: str) -> bytes | None:
    """A section's bytes from a 64-bit little-endian ELF image (None if absent)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1 or len(data) < 64:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if not shoff or shstrndx >= shnum or shoff + shnum * shentsize > len(data):
        return None
    heads = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = heads[shstrndx][4]
    for name_off, sh_type, _, _, offset, size in heads:
        start = names + name_off
        if data[start:data.find(b"\0", start)].decode(errors="replace") == wanted:
            return None if sh_type == 8 else data[offset:offset + size]  # 8: NOBITS
    return None


def manifest(data: bytes) -> Manifest | None:
    """The GPU code in an ELF image; None when it has no ``.nv_fatbin`` section."""
    sec = _section(data, ".nv_fatbin")
    if sec is None:
        return None
    sass: set[int] = set()
    ptx: set[int] = set()
    compressed = False
    pos = 0
    while pos + 16 <= len(sec):
        magic, _, head, size = struct.unpack_from("<IHHQ", sec, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # containers are 8-aligned in the section
            continue
        entry, end = pos + head, min(pos + head + size, len(sec))
        while entry + 64 <= end:
            kind, _, ehead, padded = struct.unpack_from("<HHIQ", sec, entry)
            arch, = struct.unpack_from("<I", sec, entry + 28)
            flags, = struct.unpack_from("<Q", sec, entry + 40)
            if ehead == 0:
                break
            if kind in _PTX:
                ptx.add(arch)
            elif kind in _ELF:
                sass.add(arch)
            compressed = compressed or bool(flags & _COMPRESSED)
            entry += ehead + padded
        pos = max(end, pos + 16)
    return Manifest(tuple(sorted(sass)), tuple(sorted(ptx)), compressed)


def drift(found: Manifest, archs: tuple[str, ...]) -> str:
    """What differs between the code found and the recipe's archs (``sm_90a`` counts as
    90), in words; "" when they agree: SASS for exactly those archs, PTX for none
    other."""
    want = sorted({int("".join(c for c in a[3:] if c.isdigit())) for a in archs})
    problems = []
    missing = [a for a in want if a not in found.sass]
    extra = [a for a in found.sass if a not in want]
    stray_ptx = [a for a in found.ptx if a not in want]
    if missing:
        problems.append(f"no SASS for {', '.join(f'sm_{a}' for a in missing)}")
    if extra:
        problems.append(f"SASS for {', '.join(f'sm_{a}' for a in extra)}, which the "
                        f"recipe does not build")
    if stray_ptx:
        problems.append(f"PTX for {', '.join(f'compute_{a}' for a in stray_ptx)}")
    return "; ".join(problems)
