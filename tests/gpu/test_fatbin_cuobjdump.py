"""builder reads the GPU code of CUDA binaries in Python (builder.wheels.fatbin); this
cross-checks that reading with NVIDIA's ``cuobjdump`` on the same files: the SASS archs
(``--list-elf``), the PTX archs (``--list-ptx``), the PTX ISA (the PTX entries' ``code
version``) and whether entries are compressed.

Two sources of binaries:

* shared objects nvcc compiles here, once per ``--compress-mode`` (needs nvcc; no GPU);
* every ``.so`` inside the wheels below ``$BUILDER_GPU_WHEELS`` (e.g. the folder
  ``builder publish --index-dir`` wrote; ``tests/gpu/prebuilt_gpu.sh`` passes it).

cuobjdump is looked up on PATH, then in ``$CUDA_HOME/bin`` and ``/usr/local/cuda/bin``,
or named by ``$CUOBJDUMP`` (NVIDIA's ``nvidia-cuda-cuobjdump`` wheel ships one).

    python -m pytest tests/gpu/test_fatbin_cuobjdump.py
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from builder.wheels.driver import implied
from builder.wheels.fatbin import Manifest, manifest


def _cuobjdump() -> str:
    named = os.environ.get("CUOBJDUMP", "")
    if named:
        return named
    found = shutil.which("cuobjdump")
    for folder in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        if found is None and folder and (Path(folder) / "bin" / "cuobjdump").is_file():
            found = str(Path(folder) / "bin" / "cuobjdump")
    if found is None:
        pytest.skip("cuobjdump not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, "
                    "$CUOBJDUMP): install the CUDA toolkit or NVIDIA's "
                    "nvidia-cuda-cuobjdump wheel")
    return found


def _run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0 and "does not contain device code" not in done.stderr:
        raise AssertionError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr}")
    return done.stdout


def cuobjdump_view(tool: str, path: Path) -> Manifest:
    """What cuobjdump says a binary holds, in the shape builder's reading has."""
    elf = _run([tool, "--list-elf", str(path)])
    ptx = _run([tool, "--list-ptx", str(path)])
    sass = {int(m) for m in re.findall(r"\.sm_(\d+)[af]?\.cubin$", elf, re.M)}
    virt = {int(m) for m in re.findall(r"\.sm_(\d+)[af]?\.ptx$", ptx, re.M)}
    # the headers: one block per entry, "Fatbin ptx code:" ... "code version = [9,0]"
    blocks = re.split(r"\n(?=Fatbin (?:elf|ptx) code:)", _run([tool, str(path)]))
    isa = {f"{a}.{b}" for blk in blocks if blk.lstrip().startswith("Fatbin ptx code:")
           for a, b in re.findall(r"code version = \[(\d+),(\d+)\]", blk)}
    packed = any(re.search(r"^compressed\s*$", blk, re.M) for blk in blocks)
    return Manifest(tuple(sorted(sass)), tuple(sorted(virt)),
                    tuple(sorted(isa, key=lambda v: tuple(int(x) for x in v.split(".")))),
                    ("?",) if packed else ())


def agree(tool: str, path: Path, data: bytes) -> None:
    ours = manifest(data)
    theirs = cuobjdump_view(tool, path)
    if ours is None:
        assert not theirs.sass and not theirs.ptx, f"{path}: cuobjdump sees {theirs}"
        return
    where = f"{path}: builder read {ours}, cuobjdump says {theirs}"
    assert ours.sass == theirs.sass, where
    assert ours.ptx == theirs.ptx, where
    assert ours.ptx_isa == theirs.ptx_isa, where
    assert ours.compressed == theirs.compressed, where
    implied(ours)  # every PTX ISA found is one the driver table knows


@pytest.mark.parametrize("mode", ["", "default", "size", "speed", "balance", "none"])
def test_nvcc_built_shared_objects(tmp_path: Path, mode: str) -> None:
    tool = _cuobjdump()
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("needs nvcc to compile the shared objects")
    release = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                             check=True).stdout
    m = re.search(r"release (\d+)\.(\d+)", release)
    if mode and (m is None or (int(m.group(1)), int(m.group(2))) < (12, 8)):
        pytest.skip("nvcc has no --compress-mode before CUDA 12.8")
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* x, int n) {\n"
                   "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }\n"
                   "extern \"C\" void run(float* x, int n) {\n"
                   "  k<<<(n + 127) / 128, 128>>>(x, n); }\n")
    lib = tmp_path / "k.so"
    subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-o", str(lib), str(src),
                    "-gencode", "arch=compute_80,code=sm_80",
                    "-gencode", "arch=compute_86,code=[sm_86,compute_86]",
                    "-gencode", "arch=compute_90,code=[sm_90,compute_90]",
                    *([f"--compress-mode={mode}"] if mode else [])],
                   check=True, capture_output=True)
    agree(tool, lib, lib.read_bytes())


def test_the_shared_objects_of_built_wheels(tmp_path: Path) -> None:
    folder = os.environ.get("BUILDER_GPU_WHEELS", "")
    if not folder:
        pytest.skip("set BUILDER_GPU_WHEELS to a folder of wheels (builder publish "
                    "--index-dir, or .builder/wheels) to cross-check their .so files")
    tool = _cuobjdump()
    wheels = sorted(Path(folder).rglob("*.whl"))
    assert wheels, f"no wheel below {folder}"
    checked = 0
    for whl in wheels:
        with zipfile.ZipFile(whl) as z:
            for name in z.namelist():
                data = z.read(name)
                if data[:4] != b"\x7fELF":
                    continue
                path = tmp_path / whl.stem / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
                agree(tool, path, data)
                checked += manifest(data) is not None
    assert checked, f"no CUDA binary in the wheels below {folder}"
