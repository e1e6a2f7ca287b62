"""Measure CUDA wheels on this machine: sizes of the all-arch grafted wheel, the lean one
and the per-arch variants, and install times from a pypiserver index on loopback.

A small CUDA library (templated element-wise kernels linked against the toolkit's shared
cudart, archs sm_80, sm_86, sm_89, sm_90) is built by builder as a lean wheel with
variants (``builder build --wheel-variants``); the *grafted* wheel is what ``auditwheel
repair`` makes of the lean one without builder's exclusions (it copies cudart in, as it
copied cuBLAS into llaisys before).  Each of the two all-arch wheels is then served by
its own ``pypi-server`` on 127.0.0.1 (the lean one next to NVIDIA's
``nvidia-cuda-runtime`` wheel from ``--runtime-wheels``, which it requires) and
installed into a fresh venv with uv and with pip, ``--repeats`` times each, caches off.
No GPU needed; nothing leaves the machine.

    python bench/wheel_measure.py --runtime-wheels DIR [--repeats 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")
KERNELS = """\
#include <cuda_runtime.h>
template <typename T, int OP> __global__ void ew(T* out, const T* a, const T* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = OP == 0 ? a[i] + b[i] : OP == 1 ? a[i] * b[i] : OP == 2 ? a[i] - b[i]
                    : a[i] > b[i] ? a[i] : b[i];
}
template <typename T, int OP> void run(T* o, const T* a, const T* b, int n) {
  ew<T, OP><<<(n + 255) / 256, 256>>>(o, a, b, n);
}
#define ALL(T) template void run<T, 0>(T*, const T*, const T*, int); \\
  template void run<T, 1>(T*, const T*, const T*, int); \\
  template void run<T, 2>(T*, const T*, const T*, int); \\
  template void run<T, 3>(T*, const T*, const T*, int);
ALL(float) ALL(double) ALL(int) ALL(long long)
extern "C" int wm_devices(void) { int n = -1; cudaGetDeviceCount(&n); return n; }
"""
CMAKE = """\
cmake_minimum_required(VERSION 3.20)
project(wm LANGUAGES CXX CUDA)
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
add_library(wm SHARED wm.cu)
install(TARGETS wm LIBRARY DESTINATION python/wm)
install(FILES python/wm/__init__.py DESTINATION python/wm)
"""
RECIPE = f"""\
package: {{name: wm, version: "0.1.0"}}
source: {{path: ../src}}
backends:
  cuda: {{archs: [{", ".join(ARCHS)}]}}
python: {{versions: ["{sys.version_info.major}.{sys.version_info.minor}"], abi: none}}
"""


def _run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    done: subprocess.CompletedProcess[str] = subprocess.run(  # type: ignore[call-overload]
        argv, capture_output=True, text=True, check=False, **kw)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    return done


def build(root: Path) -> list[Path]:
    """The lean all-arch wheel and its variants, built by builder in ``root``."""
    (root / ".git").mkdir(parents=True)
    (root / "recipes").mkdir()
    (root / "recipes" / "wm.yaml").write_text(RECIPE)
    src = root / "src"
    (src / "python" / "wm").mkdir(parents=True)
    (src / "python" / "wm" / "__init__.py").write_text("")
    (src / "CMakeLists.txt").write_text(CMAKE)
    (src / "wm.cu").write_text(KERNELS)
    env = {**os.environ, "PYTHONPATH": str(REPO), "CI": "1"}
    _run([sys.executable, "-m", "builder", "build", "wm", "--wheel-variants", "--no-tests",
          "--memory-budget", "3GiB"], cwd=root, env=env)
    return sorted((root / ".builder" / "wheels").rglob("*.whl"))


def graft(lean: Path, out: Path) -> Path:
    """``auditwheel repair`` of the lean wheel with the toolkit's libraries findable and no
    exclusions: what builder made before its wheels were lean."""
    cuda = [d for d in ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib")
            if Path(d).is_dir()]
    auditwheel = shutil.which("auditwheel") or str(Path(sys.executable).parent / "auditwheel")
    env = {**os.environ, "LD_LIBRARY_PATH": ":".join(cuda),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    _run([auditwheel, "repair", "--plat", "auto", "-w", str(out), str(lean)], env=env)
    [whl] = out.glob("*.whl")
    _drop_nvidia_requirements(whl)
    return whl


def _drop_nvidia_requirements(whl: Path) -> None:
    """A grafted wheel carries the libraries itself: its METADATA loses the lean wheel's
    ``Requires-Dist: nvidia-*`` (and RECORD the new digest)."""
    import base64
    import hashlib

    with zipfile.ZipFile(whl) as z:
        items = [(i, z.read(i.filename)) for i in z.infolist()]
    meta_name = next(i.filename for i, _ in items if i.filename.endswith(".dist-info/METADATA"))
    meta = "".join(x for x in dict(
        (i.filename, d) for i, d in items)[meta_name].decode().splitlines(keepends=True)
        if not x.startswith("Requires-Dist: nvidia-")).encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(meta).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in items:
            if info.filename == meta_name:
                z.writestr(info, meta)
            elif info.filename.endswith(".dist-info/RECORD"):
                z.writestr(info, "".join(f"{meta_name},sha256={digest},{len(meta)}\n"
                                         if x.startswith(meta_name + ",") else x
                                         for x in data.decode().splitlines(keepends=True)))
            else:
                z.writestr(info, data)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A pypiserver on loopback for ``folder`` (no fallback to another index)."""
    port = _port()
    exe = shutil.which("pypi-server") or str(Path(sys.executable).parent / "pypi-server")
    proc = subprocess.Popen([exe, "run", "-i", "127.0.0.1", "-p", str(port),
                             "--disable-fallback", str(folder)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return proc, f"http://127.0.0.1:{port}/simple/"


def install_times(url: str, name: str, repeats: int, tmp: Path) -> dict[str, list[float]]:
    """Wall seconds of ``uv pip install`` and ``pip install`` of ``name`` from ``url`` into
    a fresh venv each time (the venv's creation is not timed)."""
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    out: dict[str, list[float]] = {"uv": [], "pip": []}
    env = {**os.environ, "UV_NO_CACHE": "1", "UV_PYTHON_DOWNLOADS": "never",
           "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for i in range(repeats):
        for tool in ("uv", "pip"):
            venv = tmp / f"{tool}{i}"
            if tool == "uv":
                _run([uv, "venv", "-q", "--python", sys.executable, str(venv)], env=env)
                argv = [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                        "--index-url", url, name]
            else:
                _run([sys.executable, "-m", "venv", str(venv)], env=env)
                argv = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                        "--no-cache-dir", "--index-url", url, name]
            start = time.perf_counter()
            _run(argv, env=env)
            out[tool].append(round(time.perf_counter() - start, 2))
            shutil.rmtree(venv)
    return out


def _label(whl: Path) -> str:
    stem = whl.name[:-4].split("-")
    return stem[5] if len(stem) == 6 else "all_arch"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtime-wheels", required=True,
                    help="a folder with NVIDIA's nvidia-cuda-runtime wheel (13.x)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    runtime = sorted(Path(args.runtime_wheels).glob("nvidia_cuda_runtime-*.whl"))
    if not runtime:
        print(f"no nvidia_cuda_runtime-*.whl in {args.runtime_wheels}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="wheel-measure-") as t:
        tmp = Path(t)
        start = time.perf_counter()
        wheels = build(tmp / "project")
        build_s = round(time.perf_counter() - start, 1)
        lean = next(w for w in wheels if _label(w) == "all_arch")
        grafted = graft(lean, tmp / "grafted")
        with zipfile.ZipFile(grafted) as z:
            copied = sorted(n for n in z.namelist() if ".libs/" in n)
        result: dict[str, object] = {
            "what": f"a CUDA library ({', '.join(ARCHS)}, templated element-wise kernels, "
                    f"shared cudart) built by builder with --wheel-variants; grafted = "
                    f"auditwheel repair of the lean wheel without exclusions",
            "build_s": build_s, "runtime_wheel": runtime[0].name,
            "sizes_bytes": {"grafted_all_arch": grafted.stat().st_size,
                            **{_label(w): w.stat().st_size for w in wheels}},
            "grafted_libraries": copied, "install_s": {}}
        installs: dict[str, object] = {}
        for kind, whl, extra in (("grafted_all_arch", grafted, []),
                                 ("lean_all_arch", lean, runtime)):
            folder = tmp / f"index-{kind}"
            folder.mkdir()
            for w in (whl, *extra):
                shutil.copy2(w, folder / w.name)
            proc, url = serve(folder)
            try:
                installs[kind] = install_times(url, "wm-cu13", args.repeats, tmp)
            finally:
                proc.terminate()
                proc.wait(10)
        result["install_s"] = installs
    sizes = result["sizes_bytes"]
    assert isinstance(sizes, dict)
    print(f"built in {build_s} s; grafted libraries: {', '.join(copied) or 'none'}")
    for label, size in sizes.items():
        print(f"  {label:18s} {size / 1e3:9.1f} kB")
    for kind, times in installs.items():
        assert isinstance(times, dict)
        for tool, t in times.items():
            print(f"  install {kind:16s} {tool:3s} median {statistics.median(t):.2f} s "
                  f"({min(t):.2f}–{max(t):.2f}, {len(t)} runs)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
