"""Every wheel builder makes gets the same treatment, whatever built it: a CMake project
whose Python package turns out pure is ``py3-none-any`` (not a ``linux_x86_64`` wheel
auditwheel refuses), and a CUDA library linked against the toolkit's shared cudart is a
lean wheel — cudart left out of the repair, ``Requires-Dist`` on NVIDIA's runtime wheel,
and an RPATH that finds the library where that wheel installs it in site-packages.

The runtime wheel itself is not downloaded: the test puts the toolkit's own
``libcudart.so.13`` where ``nvidia-cuda-runtime`` installs it (``nvidia/cu13/lib``) in a
``--target`` folder, and loads the installed library with no ``LD_LIBRARY_PATH``."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from builder.wheels.elf import needed
from tests.conftest import REPO
from tests.functional.conftest import need

pytestmark = [pytest.mark.functional]

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def builder(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "builder", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=900, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), "CI": "1"})


def project(root: Path, recipe: str, files: dict[str, str]) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "recipes").mkdir()
    (root / "recipes" / "pkg.yaml").write_text(recipe)
    for rel, text in files.items():
        (root / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "src" / rel).write_text(text)
    return root


def the_wheel(root: Path) -> Path:
    [whl] = (root / ".builder" / "wheels").glob("*/*/*.whl")
    return whl


def test_a_cmake_recipe_whose_python_package_is_pure_gets_py3_none_any(tmp_path: Path) -> None:
    need("conan", "cmake", "ninja", "g++", "auditwheel", "patchelf")
    root = project(tmp_path / "p", f"""\
package: {{name: purepkg, version: "0.1.0"}}
source: {{path: ../src}}
backends: {{cpu: {{}}}}
python: {{versions: ["{PY}"], abi: none}}
""", {"CMakeLists.txt": "cmake_minimum_required(VERSION 3.20)\nproject(purepkg NONE)\n"
                        "install(DIRECTORY python/ DESTINATION python)\n",
      "python/purepkg/__init__.py": "VALUE = 7\n"})
    r = builder(root, "build", "purepkg")
    assert r.returncode == 0, r.stdout + r.stderr
    whl = the_wheel(root)
    assert whl.name == "purepkg-0.1.0-py3-none-any.whl", whl.name
    with zipfile.ZipFile(whl) as z:
        assert "Root-Is-Purelib: true" in z.read("purepkg-0.1.0.dist-info/WHEEL").decode()
        sbom = json.loads(z.read("purepkg-0.1.0.dist-info/sboms/builder.cdx.json"))
    assert sbom["bomFormat"] == "CycloneDX" and sbom["metadata"]["component"]["name"] == \
        "purepkg"
    roles = {p["value"] for c in sbom["components"] for p in c.get("properties", [])
             if p["name"] == "builder:role"}
    assert {"source", "compiler"} <= roles, sbom
    again = builder(root, "build", "purepkg")
    assert again.returncode == 0 and "nothing to do" in again.stdout, again.stdout


CU = """\
#include <cuda_runtime.h>
extern "C" int lean_devices(void) { int n = -1; cudaGetDeviceCount(&n); return n; }
"""
CMAKE = """\
cmake_minimum_required(VERSION 3.20)
project(lean LANGUAGES CXX CUDA)
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
add_library(lean SHARED lean.cu)
install(TARGETS lean LIBRARY DESTINATION python/lean)
install(FILES python/lean/__init__.py DESTINATION python/lean)
"""


def test_a_cuda_wheel_requires_nvidias_runtime_wheel_and_finds_it_in_site_packages(
        tmp_path: Path) -> None:
    need("conan", "cmake", "ninja", "g++", "nvcc", "auditwheel", "patchelf")
    root = project(tmp_path / "p", f"""\
package: {{name: lean, version: "0.1.0"}}
source: {{path: ../src}}
backends:
  cuda: {{archs: [sm_90]}}
python: {{versions: ["{PY}"], abi: none}}
""", {"CMakeLists.txt": CMAKE, "lean.cu": CU, "python/lean/__init__.py": ""})
    r = builder(root, "build", "lean")
    assert r.returncode == 0, r.stdout + r.stderr
    whl = the_wheel(root)
    assert whl.name.startswith("lean_cu13-0.1.0-py3-none-manylinux"), whl.name
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        meta = z.read("lean_cu13-0.1.0.dist-info/METADATA").decode()
        sbom = json.loads(z.read("lean_cu13-0.1.0.dist-info/sboms/builder.cdx.json"))
        # every shared object is in the SBOM with the digest of the bytes shipped
        # (after auditwheel and the RPATH change)
        shipped = {n: hashlib.sha256(z.read(n)).hexdigest() for n in names
                   if z.read(n)[:4] == b"\x7fELF"}
        gpu = json.loads(z.read("lean_cu13-0.1.0.dist-info/builder.json"))["gpu"]
    # the minimum driver its binary needs, read from its fatbin, within what the plan said
    assert gpu["minimum_driver"]["cuda"] == gpu["planned_driver"]["cuda"] == "13.0", gpu
    assert gpu["minimum_driver"]["linux"] == "580.65.06" and gpu["compress_mode"] == "size"
    assert "compressed (zstd)" in gpu["binaries"]["lean/liblean.so"]["code"], gpu
    listed = {c["name"]: c["hashes"][0]["content"] for c in sbom["components"]
              if c.get("type") == "file"}
    assert shipped and listed == shipped, (listed, shipped)
    assert any(c["name"] == "nvcc" and c.get("version", "").startswith("13.")
               for c in sbom["components"]), sbom["components"]
    assert not [n for n in names if "libcudart" in n], names  # not grafted
    assert "Requires-Dist: nvidia-cuda-runtime>=13.0,<14" in meta, meta
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(site), str(whl)], check=True)
    lib = site / "lean" / "liblean.so"
    assert "libcudart.so.13" in needed(lib)
    rpath = subprocess.run([shutil.which("patchelf") or "patchelf", "--print-rpath",
                            str(lib)], capture_output=True, text=True, check=True).stdout
    assert "$ORIGIN/../nvidia/cu13/lib" in rpath, rpath
    load = [sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('ok')",
            str(lib)]
    env = {"PATH": "/usr/bin:/bin"}  # no LD_LIBRARY_PATH: only the RPATH can find cudart
    ldconfig = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True,
                              check=False).stdout
    if "libcudart.so.13" not in ldconfig:  # without the runtime wheel's folder: not found
        r = subprocess.run(load, env=env, capture_output=True, text=True, check=False)
        assert r.returncode != 0 and "libcudart.so.13" in r.stderr, r.stdout + r.stderr
    cudart = next(p for d in ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib")
                  if (p := Path(d) / "libcudart.so.13").exists())
    (site / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    shutil.copy2(cudart, site / "nvidia" / "cu13" / "lib")  # what nvidia-cuda-runtime installs
    r = subprocess.run(load, env=env, capture_output=True, text=True, check=False)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


def test_a_torch_extension_from_the_projects_own_build_gets_the_torch_pin(
        tmp_path: Path) -> None:
    """The wheel a setup.py makes (here: one made by hand with a real libc10 user in it)
    is renamed, pinned and repaired as a CMake recipe's — the pin read from its ELF."""
    need("g++", "auditwheel", "patchelf")
    torch = pytest.importorskip("torch")
    from builder.plan.payloads import WheelBuild
    from builder.wheels.build import build_wheel
    from builder.wheels.repair import seal, write_raw

    (tmp_path / ".builder-owned").write_text("builder\n")  # the writer's marker
    lib = Path(torch.__file__).parent / "lib"
    tree = tmp_path / "tree" / "fx"
    tree.mkdir(parents=True)
    (tmp_path / "x.c").write_text("int fx_answer(void) { return 42; }\n")
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(tree / "_C.so"), str(tmp_path / "x.c"),
                    f"-L{lib}", "-Wl,--no-as-needed", "-lc10"], check=True)
    (tree / "__init__.py").write_text("")
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    build_wheel(tmp_path / "tree", tmp_path / "dist", "fx", "1.0", f"{tag}-{tag}-linux_x86_64")
    w = WheelBuild(src="", name="fx", version="1.0", tag=f"{tag}-{tag}-linux_x86_64",
                   summary="", out_dir=str(tmp_path / "out"), policy="auto",
                   torch=torch.__version__, from_wheel=str(tmp_path / "dist"))
    raw, _, native = write_raw(w)
    with zipfile.ZipFile(raw) as z:
        meta = z.read("fx-1.0.dist-info/METADATA").decode()
    major, minor = torch.__version__.split(".")[:2]
    assert native and f"Requires-Dist: torch=={major}.{minor}.*" in meta, meta
    # a wheel that links libtorch but pins no torch is refused when sealed
    unpinned = tmp_path / "unpinned"
    made = build_wheel(tmp_path / "tree", unpinned, "fx", "1.0", f"{tag}-{tag}-linux_x86_64")
    with pytest.raises(ValueError, match=r"fx/_C\.so: links libtorch"):
        seal(made)
