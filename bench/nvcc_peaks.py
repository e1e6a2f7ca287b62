"""Peak memory and CPU time of one nvcc compile of the nvcc workload, per archs × threads.

Configures ``bench/workloads/nvccload`` once (CMake, for its compile command), then
compiles the named translation units for the first 1, 2, … of ``--archs`` with nvcc
``--threads`` 1, 2, …, measuring the peak RSS of nvcc's whole process tree (cicc,
ptxas, the host compiler: ``builder.memory.launcher.run_measured``, sampled every
0.1 s) and its CPU time.  No GPU needed.

    python bench/nvcc_peaks.py [--files layernorm.cu,fill.cu] [--archs 80,86]
                               [--threads 1,2] [--counts 1,2]
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.memory.launcher import run_measured  # noqa: E402

__all__ = ["command", "main"]

WORKLOAD = REPO / "bench" / "workloads" / "nvccload"


def command(build: Path, name: str, archs: list[str], threads: int) -> list[str]:
    """The build's nvcc command for ``name``, compiling for ``archs`` ``threads`` at a time."""
    cmds = json.loads((build / "compile_commands.json").read_text())
    entry = next(c for c in cmds if c["file"].endswith("/" + name))
    argv = [a for a in shlex.split(entry["command"])
            if not a.startswith(("--generate-code", "--threads", "-MD", "-MT", "-MF"))
            and not a.endswith(".o.d")]
    gencode = [f"--generate-code=arch=compute_{a},code=[compute_{a},sm_{a}]" for a in archs]
    out = argv.index("-o")
    argv[out + 1] = str(build / "probe.o")
    return [*argv[:out], *gencode, f"--threads={threads}", *argv[out:]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", default="layernorm.cu,fill.cu")
    ap.add_argument("--archs", default="80,86", help="archs, in order (default 80,86)")
    ap.add_argument("--counts", default="1,2", help="how many of --archs (default 1,2)")
    ap.add_argument("--threads", default="1,2", help="nvcc --threads values (default 1,2)")
    args = ap.parse_args()
    archs = args.archs.split(",")
    build = Path(tempfile.mkdtemp(prefix="nvcc-peaks-"))
    subprocess.run(["cmake", "-S", str(WORKLOAD), "-B", str(build), "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}",
                    "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", f"-DCMAKE_CUDA_ARCHITECTURES={archs[0]}"],
                   check=True, capture_output=True)
    print(f"{'file':16} {'archs':>5} {'threads':>7} {'peak MiB':>9} {'CPU s':>7} {'wall s':>7}"
          f" {'procs':>5}")
    for name in args.files.split(","):
        for n in (int(c) for c in args.counts.split(",")):
            for t in (int(x) for x in args.threads.split(",")):
                if t > n and t > 1 and n > 1:
                    continue
                m = run_measured(command(build, name, archs[:n], t))
                flag = "" if m.rc == 0 else f"  exit {m.rc}"
                print(f"{name:16} {n:>5} {t:>7} {m.peak >> 20:>9} {m.cpu:>7.1f} "
                      f"{m.seconds:>7.1f} {m.procs:>5}{flag}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
