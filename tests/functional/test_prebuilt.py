"""Prebuilt packages end to end: builder builds the example wheels, auditwheel says they
are manylinux, ``builder publish --index`` uploads them to a real index (pypiserver on
127.0.0.1 with an htpasswd account), and a fresh virtualenv installs libamm and llaisys
from that index and computes with them — with no compiler on its way.

Torch for the fresh venv comes from the machine: ``pip download`` puts the installed
torch release and its dependencies (wheels only) in a local folder, given to pip with
``--find-links``.  Not ``--system-site-packages``: that venv would also see builder's
own environment (numpy, the build's packages), so it would not show that the wheel's
metadata is enough.  And not a copy of torch on the test index: the index must hold only
what builder published, so that everything else visibly comes from elsewhere.

Building libamm costs minutes on 2 cores, so the builds happen once per test session
(set BUILDER_PREBUILT_STATE to a folder to reuse them across sessions).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from devkit.servers import pypi_server
from tests.conftest import REPO
from tests.functional.conftest import need

pytestmark = [pytest.mark.functional, pytest.mark.slow]

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
USER, PASSWORD = "maintainer", "s3cret-for-the-test-index"


def builder(state: Path, *args: str, env: dict[str, str] | None = None,
            timeout: int = 3600) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "builder", "--state-dir", str(state), *args],
                          cwd=REPO, env=full, capture_output=True, text=True, timeout=timeout,
                          check=False)


def _tools() -> None:
    need("conan", "cmake", "ninja", "g++", "auditwheel", "patchelf")
    # looked up, not imported: pypiserver's bundled bottle hooks every later import
    for mod, pkg in (("twine", "twine"), ("pypiserver", "pypiserver"),
                     ("passlib", "passlib"), ("torch", "torch==2.13.0")):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"needs {pkg} (the test extra installs it)")


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """libamm and llaisys (cpu) and gllm-kernels (cuda, if nvcc is here) built once;
    returns recipe → its wheel."""
    _tools()
    state = Path(os.environ.get("BUILDER_PREBUILT_STATE") or
                 tmp_path_factory.mktemp("prebuilt-state"))
    kroot = state / "gllm-kernels-root"
    selection = ["libamm", "llaisys", "--backend", "cpu", "-p", PY]
    r = builder(state, "build", *selection, "--no-tests")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wheels = {}
    for line in r.stdout.splitlines():
        if line.startswith("wheel: "):
            path = Path(line.split(" ", 2)[1])
            wheels[path.name.split("-")[0]] = path if path.is_absolute() else REPO / path
    if shutil.which("nvcc"):
        r = builder(state, "build", "gllm-kernels", "--backend", "cuda", "--no-tests",
                    "-o", f"kernels_root={kroot}")
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        for line in r.stdout.splitlines():
            if line.startswith("wheel: "):
                path = Path(line.split(" ", 2)[1])
                wheels["gllm_kernels"] = path if path.is_absolute() else REPO / path
    wheels["state"] = state  # type: ignore[assignment]
    return wheels


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This machine's torch release and its dependencies as wheel files."""
    torch_version = importlib.metadata.version("torch")
    out = tmp_path_factory.mktemp("wheelhouse")
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary",
                        ":all:", "-d", str(out), f"torch=={torch_version}"],
                       capture_output=True, text=True, timeout=1800, check=False)
    if r.returncode != 0:
        pytest.skip(f"cannot get torch {torch_version}'s wheels here: {r.stderr[-500:]}")
    return out


@pytest.fixture(scope="session")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        with pypi_server(tmp_path_factory.mktemp("index"), {USER: PASSWORD}) as url:
            yield url
    except FileNotFoundError as exc:
        pytest.skip(f"needs {exc} (the test extra installs it)")


def test_wheels_are_manylinux_and_pin_torch(built: dict[str, Path]) -> None:
    shown = {}
    for name in ("libamm", "llaisys"):
        whl = built[name]
        assert "manylinux_" in whl.name, whl.name
        r = subprocess.run(["auditwheel", "show", "--json", str(whl)], capture_output=True,
                           text=True, check=True)
        shown[name] = json.loads(r.stdout)
        assert shown[name]["sym_tag"].startswith("manylinux_"), shown[name]
    # llaisys needs nothing outside the policy; libamm needs only torch's libraries, which
    # the pinned torch wheel provides (so auditwheel's overall tag for it stays linux_*)
    assert shown["llaisys"]["overall_tag"].startswith("manylinux_"), shown["llaisys"]
    assert shown["llaisys"]["external_libs"] == {}
    assert set(shown["libamm"]["external_libs"]) <= {
        "libc10.so", "libtorch.so", "libtorch_cpu.so", "libtorch_python.so"}
    with zipfile.ZipFile(built["libamm"]) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Requires-Dist: torch==2.13.*" in meta
    # libamm.so (found in the install tree) is carried; torch's libraries are not
    assert any(n.startswith("libamm.libs/libamm") for n in names), names
    assert not [n for n in names if "libtorch" in n or "libc10" in n]
    with zipfile.ZipFile(built["llaisys"]) as z:
        meta = z.read("llaisys-0.1.0.dist-info/METADATA").decode()
    assert "torch" not in meta  # llaisys needs torch for its tests, not at run time
    if "gllm_kernels" in built:
        assert built["gllm_kernels"].name == "gllm_kernels-0.1.0-py3-none-any.whl"


def test_publish_refuses_wrong_credentials_without_echoing_them(
        built: dict[str, Path], index: str) -> None:
    wrong = "not-the-password-7f3a"
    r = builder(built["state"], "publish", "libamm", "--backend", "cpu", "-p", PY,
                "--index", f"{index}/", env={"TWINE_USERNAME": USER, "TWINE_PASSWORD": wrong})
    assert r.returncode == 6, r.stdout + r.stderr
    assert "refused the credentials" in r.stderr and "TWINE_PASSWORD" in r.stderr
    logs = "".join(p.read_text(errors="replace") for p in
                   (built["state"] / "logs").glob("publish_index*.log"))
    assert wrong not in r.stdout + r.stderr + logs
    r = builder(built["state"], "publish", "libamm", "--backend", "cpu", "-p", PY,
                "--index", f"http://{USER}:{wrong}@127.0.0.1:1/")
    assert r.returncode == 2 and "holds credentials" in r.stderr and wrong not in r.stderr


def test_publish_then_install_into_a_fresh_venv(built: dict[str, Path], index: str,
                                                wheelhouse: Path, tmp_path: Path) -> None:
    env = {"TWINE_USERNAME": USER, "TWINE_PASSWORD": PASSWORD}
    recipes = ["libamm", "llaisys", "--backend", "cpu", "-p", PY]
    r = builder(built["state"], "publish", *recipes, "--index", f"{index}/", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "published 2 wheel(s)" in r.stdout and PASSWORD not in r.stdout + r.stderr
    if "gllm_kernels" in built:
        r = builder(built["state"], "publish", "gllm-kernels", "--backend", "cuda",
                    "-o", f"kernels_root={built['state'] / 'gllm-kernels-root'}",
                    "--index", f"{index}/", env=env)
        assert r.returncode == 0, r.stdout + r.stderr
    listing = subprocess.run([sys.executable, "-c", "import sys, urllib.request; print("
                              "urllib.request.urlopen(sys.argv[1]).read().decode())",
                              f"{index}/simple/"], capture_output=True, text=True, check=True)
    assert "libamm" in listing.stdout and "llaisys" in listing.stdout

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # a tripwire: any compiler or build tool the install might start records itself
    trip = tmp_path / "trip"
    trip.mkdir()
    for tool in ("cc", "gcc", "c++", "g++", "cmake", "ninja", "nvcc", "ld"):
        (trip / tool).write_text(f"#!/bin/sh\necho {tool} >> {trip / 'called'}\nexit 1\n")
        (trip / tool).chmod(0o755)
    clean = {"PATH": f"{trip}:{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path),
             "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--only-binary",
           ":all:", "--index-url", f"{index}/simple/", "--find-links", str(wheelhouse)]
    subprocess.run([*pip, f"torch=={importlib.metadata.version('torch')}"], env=clean,
                   check=True, capture_output=True, timeout=900)
    t0 = time.monotonic()
    r = subprocess.run([*pip, "libamm", "llaisys"], env=clean, capture_output=True, text=True,
                       timeout=900, check=False)
    seconds = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    assert seconds < 60, f"pip install of libamm and llaisys took {seconds:.1f}s"
    code = """
import json, torch, libamm, llaisys
torch.manual_seed(0)
A, B = torch.randn(64, 256), torch.randn(256, 32)
exact = libamm.amm(A, B, "exact")
approx = libamm.amm(A, B, "count_sketch", sketch_size=128, seed=0)
a, b = torch.randn(4, 8), torch.randn(4, 8)
ta, tb = llaisys.Tensor.from_torch(a), llaisys.Tensor.from_torch(b)
tc = llaisys.Tensor.from_torch(torch.zeros(4, 8))
llaisys.ops.add(tc, ta, tb)
print(json.dumps({"libamm": libamm.__file__, "llaisys": llaisys.__file__,
                  "exact": float((exact - A @ B).abs().max()),
                  "approx": float(libamm.relative_frobenius_error(approx, A @ B)),
                  "add": float((tc.torch() - (a + b)).abs().max())}))
"""
    r = subprocess.run([str(venv / "bin" / "python"), "-c", code], env=clean, cwd=tmp_path,
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["libamm"].startswith(str(venv)) and got["llaisys"].startswith(str(venv))
    assert got["exact"] < 1e-3 and got["add"] == 0.0 and 0 < got["approx"] < 2.0, got
    assert not (trip / "called").exists(), (trip / "called").read_text()
    if "gllm_kernels" in built:
        r = subprocess.run([*pip, "gllm-kernels"], env=clean, capture_output=True, text=True,
                           timeout=300, check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        r = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import gllm_kernels; print(sorted(gllm_kernels.KERNELS))"],
                           env=clean, capture_output=True, text=True, timeout=120, check=False)
        assert r.returncode == 0 and "flash_attn" in r.stdout, r.stdout + r.stderr
