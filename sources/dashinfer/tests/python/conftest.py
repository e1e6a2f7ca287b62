"""pytest options for the dashinfer tests.

--platform cpu|cuda|all   platform(s) the `platform`-parametrised tests run on
                          (repeatable; default cpu). CUDA tests skip with a
                          visible reason when the build has no CUDA or the
                          machine has no GPU.
"""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_RUNTIMES = {"asan": ("libasan.so", "ASAN_OPTIONS", "detect_leaks=0"),
             "tsan": ("libtsan.so", "TSAN_OPTIONS", "report_signal_unsafe=0")}


def _preload_sanitizer_runtime(config):
    """A module built with -fsanitize=address/thread only loads into a Python process
    that has the sanitizer's runtime loaded first: re-execute pytest with LD_PRELOAD
    (the runtime of the compiler that built it; leak checks off, Python itself 'leaks')."""
    spec = importlib.util.find_spec("dashinfer")
    if spec is None or not spec.origin:
        return
    try:
        info = json.loads((Path(spec.origin).parent / "build_info.json").read_text())
    except (OSError, ValueError):
        return
    runtime = _RUNTIMES.get(info.get("sanitizer", "none"))
    if runtime is None or os.environ.get("DASHINFER_SANITIZER_PRELOADED"):
        return
    lib, opt_var, opts = runtime
    cxx = os.environ.get("CXX", "g++")
    # libstdc++ too: python does not link it, and the sanitizer's __cxa_throw interceptor
    # needs it loaded when the runtime starts (else "CHECK failed ... real___cxa_throw")
    paths = [subprocess.run([cxx, f"-print-file-name={name}"], capture_output=True,
                            text=True, check=False).stdout.strip()
             for name in (lib, "libstdc++.so")]
    if not all(os.path.isabs(p) for p in paths):
        pytest.exit(f"dashinfer was built with {info['sanitizer']} but {cxx} does not know "
                    f"where {lib} is; install the compiler's sanitizer runtime", returncode=4)
    path = " ".join(paths)
    env = dict(os.environ, DASHINFER_SANITIZER_PRELOADED="1",
               LD_PRELOAD=" ".join(filter(None, [path, os.environ.get("LD_PRELOAD", "")])))
    env.setdefault(opt_var, opts)
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:  # give the new process the real stdout/stderr, not capture files
        capman.suspend_global_capture(in_=True)
    print(f"conftest: {info['sanitizer']} build: re-running pytest with LD_PRELOAD={path}",
          flush=True)
    os.execve(sys.executable, [sys.executable, "-m", "pytest", *sys.argv[1:]], env)


def pytest_configure(config):
    _preload_sanitizer_runtime(config)


def pytest_addoption(parser):
    parser.addoption("--platform", action="append", choices=["cpu", "cuda", "all"],
                     help="platform(s) to run engine tests on (default: cpu)")


def selected_platforms(config):
    chosen = config.getoption("platform") or ["cpu"]
    return ["cpu", "cuda"] if "all" in chosen else sorted(set(chosen), key=chosen.index)


def pytest_generate_tests(metafunc):
    if "platform" in metafunc.fixturenames:
        metafunc.parametrize("platform", selected_platforms(metafunc.config))


@pytest.fixture
def require_platform(platform):
    """Skips (visibly) when `platform` cannot run here; returns it otherwise."""
    import dashinfer
    if platform == "cuda":
        if not dashinfer.cuda_compiled():
            pytest.skip("cuda: dashinfer built with DASHINFER_ENABLE_CUDA=OFF")
        if dashinfer.cuda_device_count() == 0:
            pytest.skip("cuda: no CUDA device on this machine")
    return platform
