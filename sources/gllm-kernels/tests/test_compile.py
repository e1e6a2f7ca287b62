"""Compile every kernel the way the builder does and check its entry points.

CUDA: nvcc -ptx for sm_75 and sm_90, every `.entry` in the PTX must be exactly
the documented extern "C" names. HIP: hipcc --genco for gfx1030, the code
object must define each name as a kernel (symbol + its `.kd` descriptor).
Metal cannot be compiled off macOS: its sources are checked to declare the
same names. Skips (with the reason) when a compiler is absent.
"""

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from gllm_kernels._spec import ENTRY_POINTS  # noqa: E402

KERNELS = sorted(ENTRY_POINTS)


def _run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{p.stdout}\n{p.stderr}"
    assert "warning" not in (p.stdout + p.stderr).lower(), p.stdout + p.stderr
    return p


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_cuda_ptx_entries(kernel, arch, tmp_path):
    if not shutil.which("nvcc"):
        pytest.skip("nvcc not found on PATH")
    out = tmp_path / f"{arch}.ptx"
    _run(["nvcc", "-ptx", f"-arch={arch}", "-O3", "--use_fast_math",
          str(ROOT / "kernels" / "cuda" / f"{kernel}.cu"), "-o", str(out)])
    ptx = out.read_text()
    assert re.search(rf"^\.target\s+{arch}\b", ptx, re.M), "wrong .target"
    entries = re.findall(r"^\s*(?:\.visible\s+)?\.entry\s+(\w+)\s*\(", ptx, re.M)
    assert sorted(entries) == sorted(ENTRY_POINTS[kernel])


def _code_object(blob):
    """The amdgcn ELF inside a clang offload bundle (hipcc --genco output), or
    blob itself if it already is an ELF."""
    magic = b"__CLANG_OFFLOAD_BUNDLE__"
    if not blob.startswith(magic):
        return blob
    (n,) = struct.unpack_from("<Q", blob, len(magic))
    pos = len(magic) + 8
    for _ in range(n):
        off, size, tlen = struct.unpack_from("<QQQ", blob, pos)
        triple = blob[pos + 24:pos + 24 + tlen].decode()
        pos += 24 + tlen
        if "amdgcn" in triple and size:
            return blob[off:off + size]
    raise AssertionError("no amdgcn code object in the bundle")


def _kernel_symbols(elf_path):
    """Defined kernel names per readelf (name with a `.kd` descriptor), or None."""
    for tool in ("llvm-readelf", "readelf"):
        if not shutil.which(tool):
            continue
        p = subprocess.run([tool, "--syms", "-W", str(elf_path)], capture_output=True, text=True)
        if p.returncode == 0:
            names = {ln.split()[-1] for ln in p.stdout.splitlines() if len(ln.split()) >= 8}
            return {n for n in names if n + ".kd" in names}
    return None


@pytest.mark.parametrize("kernel", KERNELS)
def test_hip_code_object_entries(kernel, tmp_path):
    if not shutil.which("hipcc"):
        pytest.skip("hipcc not found on PATH")
    out = tmp_path / "gfx1030.hsaco"
    _run(["hipcc", "--genco", "--offload-arch=gfx1030", "-O3",
          str(ROOT / "kernels" / "rocm" / f"{kernel}.hip"), "-o", str(out)],
         env={**os.environ, "HIP_PLATFORM": "amd"})
    elf = _code_object(out.read_bytes())
    assert elf[:4] == b"\x7fELF"
    (tmp_path / "co.elf").write_bytes(elf)
    syms = _kernel_symbols(tmp_path / "co.elf")
    if syms is None:  # no readelf: the strtab holds "name\0" and "name.kd\0"
        syms = {n for n in ENTRY_POINTS[kernel] if (n + ".kd\0").encode() in elf}
    assert syms == set(ENTRY_POINTS[kernel])


@pytest.mark.parametrize("kernel", KERNELS)
def test_metal_source_entries(kernel):
    # No Metal compiler off macOS; at least keep the names in step with CUDA/HIP.
    src = (ROOT / "kernels" / "metal" / f"{kernel}.metal").read_text()
    names = re.findall(r"^GLLM_\w+_ENTRY\((\w+),", src, re.M)
    assert sorted(names) == sorted(ENTRY_POINTS[kernel])
