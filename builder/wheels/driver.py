"""The minimum NVIDIA driver a CUDA binary needs, derived twice: from the plan (the
toolkit and the fatbin compression it will use) and from the binary's own
``.nv_fatbin`` (:mod:`builder.wheels.fatbin`).

What sets it (the tables are ``driver`` in ``builder/resources/cuda.json``):

* **SASS** runs on any driver of the toolkit's major release (CUDA minor version
  compatibility): a cubin made by CUDA 12.8 needs a CUDA 12.0 driver (525.60.13);
* **PTX** is compiled by the driver, which knows the PTX ISA of its own release and
  older ones: PTX ISA 8.7 needs a CUDA 12.8 driver (570.26);
* **compression**: a compressed fatbin entry needs a driver that knows its codec
  (``nvcc --compress-mode``): zstd in a CUDA 12 binary needs a CUDA 12.4 driver
  (550.54.14), LZ4 any CUDA 12 one; in CUDA 13 every codec is known to its first driver.

The requirement is the newest of these.  The plan cannot know whether a build embeds
PTX (CMake's ``CMAKE_CUDA_ARCHITECTURES=90`` does, ``TORCH_CUDA_ARCH_LIST=9.0`` does not),
so :func:`planned` counts it in: the plan states the most the binaries may need, the wheel
records what they do need (:func:`implied`), and a binary that needs more than the plan
said — another toolkit's PTX, a codec the plan did not choose — fails the wheel's check
(:func:`exceeds`).  The driver's CUDA release is what installers compare
(``nvidia :: cuda_version_lower_bound``); the Linux driver version is what users read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from builder.resources import data_table
from builder.wheels.fatbin import Manifest

__all__ = ["MinimumDriver", "codec_of", "exceeds", "implied", "newest", "planned"]


def _table() -> Any:
    return data_table("cuda.json")


def _v(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".") if x.isdigit())


def _mm(version: str) -> str:
    return ".".join([*version.split("."), "0"][:2])


@dataclass(frozen=True)
class MinimumDriver:
    """The oldest driver that loads a binary: the CUDA release it must support and that
    release's first Linux driver ("" when the table does not know it), with the reasons."""

    cuda: str
    linux: str
    why: tuple[str, ...] = ()

    def describe(self) -> str:
        linux = f" (Linux ≥ {self.linux})" if self.linux else ""
        return f"CUDA {self.cuda}{linux}" + (f": {'; '.join(self.why)}" if self.why else "")

    def to_json(self) -> dict[str, object]:
        return {"cuda": self.cuda, "linux": self.linux, "why": list(self.why)}


def _linux(cuda: str) -> str:
    """The first Linux driver of CUDA ``cuda`` or of the oldest release after it."""
    rows = sorted(_table()["driver"]["linux"].items(), key=lambda kv: _v(kv[0]))
    return next((drv for rel, drv in rows if _v(rel) >= _v(cuda)), "")


def _pick(needs: list[tuple[str, str]]) -> MinimumDriver | None:
    """The newest of (CUDA release, reason) requirements, with every reason that needs it."""
    if not needs:
        return None
    top = max((c for c, _ in needs), key=_v)
    why = tuple(dict.fromkeys(r for c, r in needs if _v(c) == _v(top)))
    return MinimumDriver(top, _linux(top), why)


def newest(drivers: list[MinimumDriver]) -> MinimumDriver | None:
    """The requirement of several binaries together."""
    return _pick([(d.cuda, r) for d in drivers for r in d.why or ("",)])


def codec_of(toolkit: str, mode: str) -> str:
    """The codec ``nvcc --compress-mode=mode`` of CUDA ``toolkit`` writes ("" for none;
    ``mode`` "" = no ``--compress-mode`` flag, nvcc's default)."""
    modes = _table()["compress_modes"]
    if _v(_mm(toolkit)) < _v(modes["since"]):
        return "lz4"  # older nvcc compresses large fatbin entries with LZ4 by default
    row = modes["codec"].get(toolkit.split(".", maxsplit=1)[0]) or modes["codec"][max(
        modes["codec"], key=int)]
    return str(row.get(mode or "default", ""))


def _codec_need(codec: str, major: str) -> tuple[str, str] | None:
    per_major = _table()["driver"]["codecs"].get(codec, {})
    cuda = per_major.get(major)
    return (cuda, f"{codec}-compressed fatbin entries") if cuda else None


def planned(toolkit: str, mode: str) -> MinimumDriver:
    """The most a build with CUDA ``toolkit`` and ``--compress-mode=mode`` ("": nvcc's
    default) can need: its SASS, its own release's PTX, its codec."""
    major, mm = toolkit.split(".", maxsplit=1)[0], _mm(toolkit)
    isa = {cuda: isa for isa, cuda in _table()["driver"]["ptx_isa"].items()}.get(mm, "")
    needs = [(f"{major}.0", f"SASS of CUDA {mm}"),
             (mm, f"PTX ISA {isa or 'of CUDA ' + mm} if the binaries embed PTX")]
    codec = codec_of(toolkit, mode)
    need = _codec_need(codec, major) if codec else None
    if need:
        needs.append((need[0], f"{codec}-compressed fatbin entries "
                               f"(--compress-mode={mode or 'default'})"))
    found = _pick(needs)
    assert found is not None
    return found


def implied(found: Manifest) -> MinimumDriver | None:
    """What the GPU code of one binary needs (None: it has none); raises ValueError for a
    PTX ISA the table does not know (a toolkit newer than builder's data)."""
    table = _table()["driver"]
    needs: list[tuple[str, str]] = []
    isa_cuda = []
    for isa in found.ptx_isa:
        cuda = table["ptx_isa"].get(isa)
        if cuda is None:
            raise ValueError(f"PTX ISA {isa} is not in builder/resources/cuda.json "
                             f"(driver.ptx_isa): add the CUDA release that introduced it")
        isa_cuda.append(cuda)
        needs.append((cuda, f"PTX ISA {isa}"))
    # the toolkit major: named by an uncompressed cubin, else by the PTX or the cubin ABI
    majors = [t.split(".")[0] for t in found.toolkits] or \
        [c.split(".")[0] for c in isa_cuda] or \
        [str(table["cubin_abi"][str(a)]) for a in found.cubin_abi
         if str(a) in table["cubin_abi"]]
    major = max(majors, key=int) if majors else ""
    for tk in found.toolkits:
        needs.append((f"{tk.split('.')[0]}.0", f"SASS of CUDA {tk}"))
    if found.sass and not found.toolkits and major:
        needs.append((f"{major}.0", f"SASS of CUDA {major}.x"))
    for codec in found.codecs:
        need = _codec_need(codec, major)
        if need:
            needs.append(need)
    return _pick(needs)


def exceeds(found: MinimumDriver, promised: MinimumDriver) -> str:
    """Why ``found`` needs a newer driver than ``promised`` ("" when it does not)."""
    if _v(found.cuda) <= _v(promised.cuda):
        return ""
    return (f"needs a CUDA {found.cuda} driver ({'; '.join(found.why)}), newer than the "
            f"plan's CUDA {promised.cuda}")
