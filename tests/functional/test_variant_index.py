"""Variant wheels end to end: a CUDA recipe built with ``--wheel-variants`` gives one
wheel per arch (each compiled for that arch alone, with its ``variant.json``) and the
all-arch fallback; ``builder publish --index-dir`` writes a static PEP 503 folder with
the release's ``variants.json``; served on 127.0.0.1 by ``http.server`` in a thread,
uv with variant support installs the expected label for each forced GPU profile (its
NVIDIA provider reads NV_VARIANT_PROVIDER_FORCE_SM_ARCH / _CUDA_DRIVER_VERSION, so no GPU
is needed) and plain pip installs the fallback."""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.functional.conftest import need

pytestmark = [pytest.mark.functional, pytest.mark.slow]

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
UV = Path(sys.executable).parent / "uv"
CU = 'extern "C" __global__ void vx_kernel(float* x) { x[threadIdx.x] += 1.0f; }\n'
CMAKE = """\
cmake_minimum_required(VERSION 3.20)
project(vx LANGUAGES CXX CUDA)
add_library(vx SHARED vx.cu)
install(TARGETS vx LIBRARY DESTINATION python/vx)
install(FILES python/vx/__init__.py DESTINATION python/vx)
"""
RECIPE = f"""\
package: {{name: vx, version: "0.1.0"}}
source: {{path: ../src}}
backends:
  cuda: {{archs: [sm_80, sm_86, sm_89, sm_90]}}
python: {{versions: ["{PY}"], abi: none}}
"""


def builder(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "builder", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=1800, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), "CI": "1"})


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    root = tmp_path / "index"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()


def installed_label(venv: Path) -> str:
    """The label of the installed vx wheel ("" for the all-arch one)."""
    [info] = (venv / "lib").glob("python*/site-packages/vx_cu13-0.1.0.dist-info")
    variant = info / "variant.json"
    return next(iter(json.loads(variant.read_text())["variants"])) if variant.exists() else ""


def test_variant_wheels_from_a_static_index_pick_the_gpu_and_pip_the_fallback(
        tmp_path: Path, served: tuple[Path, str]) -> None:
    need("conan", "cmake", "ninja", "g++", "nvcc", "auditwheel", "patchelf")
    pytest.importorskip("variantlib", reason="needs variantlib (the wheels extra)")
    if not UV.exists():
        pytest.skip("needs uv next to this Python (the test extra installs it)")
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    (project / "recipes").mkdir()
    (project / "recipes" / "vx.yaml").write_text(RECIPE)
    (project / "src" / "python" / "vx").mkdir(parents=True)
    (project / "src" / "python" / "vx" / "__init__.py").write_text("")
    (project / "src" / "CMakeLists.txt").write_text(CMAKE)
    (project / "src" / "vx.cu").write_text(CU)
    r = builder(project, "build", "vx", "--wheel-variants", "--no-tests")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    root, url = served
    r = builder(project, "publish", "vx", "--wheel-variants", "--index-dir", str(root))
    assert r.returncode == 0, r.stdout + r.stderr
    files = sorted(p.name for p in (root / "simple" / "vx-cu13").iterdir())
    labels = ["cu13_sm80", "cu13_sm86", "cu13_sm89", "cu13_sm90"]
    assert "vx_cu13-0.1.0-variants.json" in files and "index.html" in files, files
    wheels = [f for f in files if f.endswith(".whl")]
    assert len(wheels) == 5 and sorted(w.rsplit("-", 1)[1][:-4] for w in wheels
                                       if "cu13_sm" in w) == labels, wheels
    page = (root / "simple" / "vx-cu13" / "index.html").read_text()
    assert page.count("#sha256=") == 6, page
    merged = json.loads((root / "simple" / "vx-cu13" / "vx_cu13-0.1.0-variants.json")
                        .read_text())
    assert sorted(merged["variants"]) == labels
    # again: nothing changes, nothing is refused (the files are the same)
    again = builder(project, "publish", "vx", "--wheel-variants", "--index-dir", str(root))
    assert again.returncode == 0, again.stdout + again.stderr

    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_CACHE": "1",
           "PIP_CONFIG_FILE": os.devnull, "UV_INDEX_URL": url}
    env.pop("VIRTUAL_ENV", None)
    got = {}
    for sm, want in (("9.0", "cu13_sm90"), ("8.9", "cu13_sm89"), ("8.6", "cu13_sm86"),
                     ("8.0", "cu13_sm80")):
        venv = tmp_path / f"uv-{sm}"
        subprocess.run([str(UV), "venv", "-q", "-p", sys.executable, str(venv)], env=env,
                       check=True, timeout=120)
        r = subprocess.run(
            [str(UV), "pip", "install", "-q", "--preview-features", "wheel-variants",
             "--python", str(venv / "bin" / "python"), "--index-url", url, "vx-cu13"],
            env={**env, "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": sm,
                 "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "13.0"},
            capture_output=True, text=True, timeout=300, check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        got[sm] = installed_label(venv)
        assert got[sm] == want, got
    venv = tmp_path / "pip"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                        "--disable-pip-version-check", "--index-url", url, "vx-cu13"],
                       env=env, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert installed_label(venv) == ""  # pip skips variant wheels: the all-arch one
