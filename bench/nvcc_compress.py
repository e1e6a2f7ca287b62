"""Fatbin size and compile time of real kernels at each ``nvcc --compress-mode``.

Compiles LLAISYS's CUDA sources (``sources/llaisys/src/ops/nvidia``; those that need no
cuBLAS) to object files with SASS and PTX per arch (what its CMake build's
``CMAKE_CUDA_ARCHITECTURES=80;86;89;90`` asks for), ``-O3``, without relocatable device
code (whose fatbins sit in another section), once per mode and repeat, and prints per
mode: the ``.nv_fatbin`` bytes (summed over the files; the same in every repeat), the
object bytes, the compile wall time (median and min–max band over the repeats), and the
ratios to nvcc's ``default``.  No GPU needed.  The modes run interleaved within a
repeat, so that load from other processes spreads over all of them.

    python bench/nvcc_compress.py [--files attention.cu,reduce.cu] [--archs 80,90]
                                  [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.wheels.fatbin import fatbin_size, manifest  # noqa: E402

__all__ = ["compile_once", "main"]

SRC = REPO / "sources" / "llaisys"
OPS = SRC / "src" / "ops" / "nvidia"
MODES = ("default", "size", "speed", "balance", "none")


def compile_once(nvcc: str, src: Path, out: Path, archs: list[str], mode: str) -> float:
    """Compile ``src`` to ``out``; returns the wall time in seconds."""
    gencode = [f"--generate-code=arch=compute_{a},code=[compute_{a},sm_{a}]" for a in archs]
    argv = [nvcc, "-c", "-O3", "-std=c++17", f"-I{SRC / 'include'}", f"-I{SRC / 'src'}",
            "-DLLAISYS_ENABLE_CUDA", "-diag-suppress=20044", *gencode,
            f"--compress-mode={mode}", str(src), "-o", str(out)]
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", default="attention.cu,elementwise.cu,reduce.cu")
    ap.add_argument("--archs", default="80,86,89,90")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        print("nvcc not found: install the CUDA toolkit", file=sys.stderr)
        return 2
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()[-2]
    files = [OPS / f for f in args.files.split(",")]
    archs = args.archs.split(",")
    times: dict[str, list[float]] = {m: [] for m in MODES}
    fat: dict[str, int] = {}
    obj: dict[str, int] = {}
    codecs: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="nvcc-compress-") as tmp:
        for _ in range(args.repeats):
            for mode in MODES:
                total, fsize, osize = 0.0, 0, 0
                seen: set[str] = set()
                for src in files:
                    out = Path(tmp) / f"{src.stem}.{mode}.o"
                    total += compile_once(nvcc, src, out, archs, mode)
                    data = out.read_bytes()
                    fsize += fatbin_size(data)
                    osize += len(data)
                    found = manifest(data)
                    seen.update(found.codecs if found else ())
                times[mode].append(total)
                fat[mode], obj[mode] = fsize, osize
                codecs[mode] = ",".join(sorted(seen)) or "none"
    base_t, base_f = statistics.median(times["default"]), fat["default"]
    print(f"{version}; {len(files)} files ({args.files}); archs {args.archs} "
          f"(SASS + PTX each); {args.repeats} repeats")
    print(f"{'mode':8s} {'codec':9s} {'fatbin B':>9s} {'object B':>9s} {'compile s (band)':>22s}"
          f" {'size/def':>8s} {'time/def':>8s}")
    rows = {}
    for mode in MODES:
        t = times[mode]
        med = statistics.median(t)
        rows[mode] = {"codec": codecs[mode], "fatbin_bytes": fat[mode],
                      "object_bytes": obj[mode], "compile_s": sorted(t),
                      "compile_median_s": med, "size_vs_default": fat[mode] / base_f,
                      "time_vs_default": med / base_t}
        print(f"{mode:8s} {codecs[mode]:9s} {fat[mode]:9d} {obj[mode]:9d} "
              f"{med:8.2f} ({min(t):.2f}–{max(t):.2f}) {fat[mode] / base_f:8.2f} "
              f"{med / base_t:8.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"nvcc": version, "files": args.files,
                                               "archs": archs, "repeats": args.repeats,
                                               "modes": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
