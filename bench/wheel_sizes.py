"""Wheel sizes and what they carry: all-arch grafted vs lean vs per-arch variants.

Prints, for the wheels of a folder (a wheel folder or a ``publish --index-dir`` one:
every ``*.whl`` below it), each wheel's size, its variant label, the CUDA libraries
grafted into it and what it requires; then the figures recorded on the GPU machine
(``bench/data/h100-llaisys-wheels.json``, written from ``tests/gpu/prebuilt_gpu.sh``)
with the lean/grafted and variant/all-arch ratios, and those measured on the 2-core
machine by ``bench/wheel_measure.py`` (``bench/data/local-wheels.json``: grafted, lean
and variant sizes, uv/pip install times from a pypiserver on loopback).

    python bench/wheel_sizes.py [FOLDER]
"""

from __future__ import annotations

import json
import statistics
import sys
import zipfile
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "h100-llaisys-wheels.json"
LOCAL = Path(__file__).resolve().parent / "data" / "local-wheels.json"
CUDA_LIBS = ("libcudart", "libcublas", "libcufft", "libcurand", "libcusparse", "libcusolver",
             "libnvrtc", "libnvJitLink")


def describe(whl: Path) -> str:
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    grafted = sorted(n.rsplit("/", 1)[-1] for n in names if any(k in n for k in CUDA_LIBS))
    needs = [x.split(":", 1)[1].strip() for x in meta.splitlines()
             if x.startswith("Requires-Dist:")]
    stem = whl.name[:-4].split("-")
    label = stem[5] if len(stem) == 6 else "(all archs)"
    return (f"{whl.stat().st_size / 1e6:9.2f} MB  {label:12s}  grafted: "
            f"{', '.join(grafted) or 'none'}; requires: {', '.join(needs) or 'nothing'}")


def main() -> int:
    if len(sys.argv) > 1:
        for whl in sorted(Path(sys.argv[1]).rglob("*.whl")):
            print(f"{whl.name}\n  {describe(whl)}")
    d = json.loads(DATA.read_text())
    grafted, lean = d["grafted_all_arch"]["bytes"], d["lean_all_arch"]["bytes"]
    print(f"\nrecorded ({DATA.name}):")
    print(f"  all-arch, cuBLAS grafted: {grafted / 1e6:8.2f} MB, pip install "
          f"{d['grafted_all_arch']['pip_install_s']} s")
    print(f"  all-arch, lean:           {lean / 1e6:8.2f} MB, pip install "
          f"{d['lean_all_arch']['pip_install_s']} s  ({100 * lean / grafted:.2f} % of grafted)")
    for label, size in d["variants"]["wheels_bytes"].items():
        if label != "all_arch_fallback":
            print(f"  variant {label}:        {size / 1e6:8.2f} MB  "
                  f"({100 * size / lean:.0f} % of lean all-arch)")
    print(f"  uv: {d['variants']['uv_installed']}\n  pip: {d['variants']['pip_installed']}")
    if LOCAL.is_file():
        loc = json.loads(LOCAL.read_text())
        sizes = loc["sizes_bytes"]
        print(f"\nmeasured here ({LOCAL.name}, bench/wheel_measure.py): {loc['what']}")
        for label, size in sizes.items():
            print(f"  {label:18s} {size / 1e3:9.1f} kB  "
                  f"({100 * size / sizes['grafted_all_arch']:.0f} % of grafted)")
        for kind, times in loc["install_s"].items():
            for tool, t in times.items():
                print(f"  install {kind:16s} {tool:3s} median {statistics.median(t):.2f} s "
                      f"({min(t):.2f}–{max(t):.2f}, {len(t)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
