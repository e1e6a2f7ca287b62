"""What GPU code a CUDA binary carries, read from its ``.nv_fatbin`` ELF section in
Python — so the check runs where ``cuobjdump`` is not installed (it gives the same
lists: ``cuobjdump --list-elf`` / ``--list-ptx``).

The section holds one or more fat-binary containers: a 16-byte header (magic
``0xBA55ED50``, version, header size, size of the entries) and entries back to back,
each with its own header: kind (1 PTX, 2 or 16 an ELF cubin = SASS), header size, the
padded payload size, the compressed payload size, the code version (minor, major: the
PTX ISA of a PTX entry, ``9.0``; the cubin ABI of an ELF one, ``1.8``) and the SM arch
(``90``).  An entry whose flags carry ``0x2000`` is LZ4-compressed, ``0x8000``
zstd-compressed (``nvcc --compress-mode``): the driver must know the codec.  An
uncompressed cubin names the toolkit that made it in its ``.note.nv.tkinfo`` section
(``Cuda compilation tools, release 13.0``).  What the driver must be follows from
these (:mod:`builder.wheels.driver`).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

__all__ = ["FATBIN_MAGIC", "Manifest", "artifact_manifest", "drift", "fatbin_size",
           "manifest"]

FATBIN_MAGIC = 0xBA55ED50
_PTX, _ELF = (1,), (2, 16)
_CODECS = ((0x2000, "lz4"), (0x8000, "zstd"))
_TKINFO = re.compile(rb"release (\d+\.\d+)")


@dataclass(frozen=True)
class Manifest:
    sass: tuple[int, ...] = ()  # the SM archs with machine code (``sm_90`` → 90)
    ptx: tuple[int, ...] = ()  # the virtual archs with PTX (JIT-compiled for newer GPUs)
    #: the PTX ISA versions of the PTX entries (``9.0``)
    ptx_isa: tuple[str, ...] = ()
    #: the codecs of compressed entries (``lz4``, ``zstd``); () when none is compressed
    codecs: tuple[str, ...] = ()
    #: the toolkit releases named by the uncompressed cubins (``13.0``)
    toolkits: tuple[str, ...] = ()
    #: the cubin ABI versions of the SASS entries (``8``: CUDA 13's)
    cubin_abi: tuple[int, ...] = ()

    @property
    def compressed(self) -> bool:
        return bool(self.codecs)

    def describe(self) -> str:
        return (f"SASS {', '.join(f'sm_{a}' for a in self.sass) or 'none'}; PTX "
                f"{', '.join(f'compute_{a}' for a in self.ptx) or 'none'}"
                + (f" (ISA {', '.join(self.ptx_isa)})" if self.ptx_isa else "")
                + (f"; compressed ({', '.join(self.codecs)})" if self.codecs else ""))


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


def fatbin_size(data: bytes) -> int:
    """The size of an ELF image's ``.nv_fatbin`` section (0 when it has none): the GPU
    code it carries, compressed or not."""
    sec = _section(data, ".nv_fatbin")
    return len(sec) if sec is not None else 0


def manifest(data: bytes) -> Manifest | None:
    """The GPU code in an ELF image; None when it has no ``.nv_fatbin`` section."""
    sec = _section(data, ".nv_fatbin")
    return None if sec is None else _containers(sec)


_PTX_VERSION = re.compile(rb"^\s*\.version\s+(\d+\.\d+)", re.M)


def artifact_manifest(data: bytes, fmt: str) -> Manifest | None:
    """The GPU code of a kernel artifact file: a ``fatbin`` (fat-binary containers), a
    ``cubin`` (one ELF of SASS, its toolkit in ``.note.nv.tkinfo``) or a ``ptx`` text
    (its ``.version``); None for another format or a file that is none of these."""
    if fmt == "fatbin":
        return _containers(data) if data[:4] == struct.pack("<I", FATBIN_MAGIC) else None
    if fmt == "cubin" and data[:4] == b"\x7fELF" and len(data) > 8:
        note = _section(data, ".note.nv.tkinfo")
        found = _TKINFO.search(note) if note else None
        return Manifest(toolkits=(found.group(1).decode(),) if found else (),
                        cubin_abi=(data[8],))
    if fmt == "ptx":
        m = _PTX_VERSION.search(data)
        return Manifest(ptx_isa=(m.group(1).decode(),)) if m else None
    return None


def _containers(sec: bytes) -> Manifest:
    """The GPU code of fat-binary containers laid end to end (8-aligned)."""
    sass: set[int] = set()
    ptx: set[int] = set()
    isa: set[str] = set()
    codecs: set[str] = set()
    toolkits: set[str] = set()
    abi: set[int] = set()
    pos = 0
    while pos + 16 <= len(sec):
        magic, _, head, size = struct.unpack_from("<IHHQ", sec, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # containers are 8-aligned in the section
            continue
        entry, end = pos + head, min(pos + head + size, len(sec))
        while entry + 64 <= end:
            kind, _, ehead, padded = struct.unpack_from("<HHIQ", sec, entry)
            minor, major, arch = struct.unpack_from("<HHI", sec, entry + 24)
            flags, = struct.unpack_from("<Q", sec, entry + 40)
            if ehead == 0:
                break
            packed = [codec for bit, codec in _CODECS if flags & bit]
            codecs.update(packed)
            if kind in _PTX:
                ptx.add(arch)
                isa.add(f"{major}.{minor}")
            elif kind in _ELF:
                sass.add(arch)
                abi.add(minor)
                payload = sec[entry + ehead:entry + ehead + padded]
                note = None if packed else _section(payload, ".note.nv.tkinfo")
                found = _TKINFO.search(note) if note else None
                if found:
                    toolkits.add(found.group(1).decode())
            entry += ehead + padded
        pos = max(end, pos + 16)

    def order(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split("."))

    return Manifest(tuple(sorted(sass)), tuple(sorted(ptx)), tuple(sorted(isa, key=order)),
                    tuple(sorted(codecs)), tuple(sorted(toolkits, key=order)),
                    tuple(sorted(abi)))


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
