"""How much compile work this machine does at once: one torch TU compiled by N copies at
once, each pinned to its own CPU, for N = 1, 4, 8, 12, 16 (what the CPUs allow).

A farm on one machine (``bench/dist_farm.py``) can be at most as much faster than its
client as the machine's CPUs, all busy, out-compile the client's CPUs: when the CPUs are
hardware threads sharing cores, 16 compiles at once each take longer than 4 do, and the
ratio ``throughput(16) / throughput(4)`` is the farm's ceiling on this machine, whatever
the pool does.  Also the preprocessor's time for the TU (the part of a distributed
compile that stays on the client).

    python bench/cpu_scaling.py [--counts 1,4,8,12,16] [--header torch/extension.h]

Needs g++ and torch's C++ headers (``torch.utils.cpp_extension.include_paths()``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TU = """#include <{header}>
#include <vector>
torch::Tensor f(const torch::Tensor& a, const torch::Tensor& b) {{
  auto c = torch::matmul(a, b.t());
  std::vector<torch::Tensor> parts = torch::chunk(c, 4, 0);
  return torch::cat(parts, 1).relu_().sum(0);
}}
"""


def _topology() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return "lscpu: not found"
    keep = ("Model name", "Thread(s) per core", "Core(s) per socket", "Socket(s)",
            "CPU(s):", "NUMA node(s)", "Hypervisor vendor")
    return "; ".join(ln.strip() for ln in out.splitlines() if ln.strip().startswith(keep))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/cpu_scaling.py")
    ap.add_argument("--counts", default="1,4,8,12,16")
    ap.add_argument("--header", default="torch/extension.h")
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    ap.add_argument("--preprocess-only", action="store_true")
    args = ap.parse_args(argv)
    try:
        from torch.utils.cpp_extension import include_paths
    except ImportError:
        print("cpu_scaling: torch is not importable here", file=sys.stderr)
        return 2
    import sysconfig

    inc = [f"-I{p}" for p in [*include_paths(), sysconfig.get_paths()["include"]]]
    mine = sorted(os.sched_getaffinity(0))
    counts = [n for n in (int(c) for c in args.counts.split(",")) if n <= len(mine)]
    print(f"cpus: {len(mine)}; {_topology()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="cpu-scaling-"))
    try:
        src = work / "tu.cpp"
        src.write_text(TU.format(header=args.header))
        code = ["-std=c++17", "-O2", "-fPIC"]
        flags = [*code, *inc]
        t = time.perf_counter()
        subprocess.run([args.cxx, *flags, "-E", str(src), "-o", str(work / "tu.ii")],
                       check=True)
        pre = time.perf_counter() - t
        size = (work / "tu.ii").stat().st_size >> 20
        t = time.perf_counter()
        subprocess.run([args.cxx, *flags, "-E", "-fdirectives-only", str(src), "-o",
                        str(work / "tu.di")], check=True)
        directives = time.perf_counter() - t
        print(f"preprocess: {pre:.1f}s ({size} MiB of preprocessed source); headers only "
              f"(-fdirectives-only, sccache's rewrite_includes_only): {directives:.1f}s "
              f"({(work / 'tu.di').stat().st_size >> 20} MiB)", flush=True)
        base = 0.0
        for n in [] if args.preprocess_only else counts:
            t0 = time.perf_counter()
            # the preprocessed TU needs no include folders
            procs = [subprocess.Popen(["taskset", "-c", str(mine[i]), args.cxx, *code, "-c",
                                       str(work / "tu.ii"), "-o", str(work / f"{i}.o")])
                     for i in range(n)]
            times = []
            for p in procs:
                p.wait()
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            rate = n / max(times)
            base = base or rate / n  # one copy alone
            print(f"{n:3} at once: per compile median {med:5.1f}s (max {max(times):5.1f}s); "
                  f"throughput {rate / base:5.2f}x one CPU alone", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
