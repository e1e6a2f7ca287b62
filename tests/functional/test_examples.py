"""The bundled example recipes, built for real by builder (in a private state folder)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.functional.conftest import need

pytestmark = pytest.mark.functional


def test_gllm_kernels_cuda_and_rocm(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    need("nvcc")
    root = tmp_path / "kernels"
    backends = ["--backend", "cuda"] + (["--backend", "rocm"] if shutil.which("hipcc") else [])
    r = cli("--state-dir", str(tmp_path / "state"), "build", "gllm-kernels", *backends,
            "--skip-unsupported", "-o", f"kernels_root={root}", cwd=REPO)
    assert r.code == 0, r.out + r.err
    cuda = json.loads((root / "cuda" / "manifest.json").read_text())
    got = {(a["kernel"], a["arch"]) for a in cuda["artifacts"]}
    assert got == {(k, a) for k in ("flash_attn", "rms_norm", "rotary")
                   for a in ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")}
    ptx = (root / "cuda" / "flash_attn" / "sm_90.ptx").read_text()
    assert ".entry flash_attn_fwd_f16_d128" in ptx
    if shutil.which("hipcc"):
        rocm = json.loads((root / "rocm" / "manifest.json").read_text())
        assert {a["arch"] for a in rocm["artifacts"]} == {"gfx1030", "gfx1031"}
        assert not (root / "rocm" / "flash_attn" / "gfx1100.hsaco").exists()


def test_gllm_kernels_gfx11_is_refused_at_plan_time(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    need("hipcc")
    r = cli("--state-dir", str(tmp_path / "state"), "plan", "gllm-kernels", "--backend", "rocm",
            cwd=REPO)
    assert r.code == 4
    assert "recipes/gllm-kernels.yaml:" in r.err and "gfx1100: not supported by ROCm 5.2" in r.err


def test_llaisys_cpu_build_runs_the_op_suite(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++")
    pytest.importorskip("torch", reason="the llaisys tests compare with CPU torch")
    state = tmp_path / "state"
    r = cli("--state-dir", str(state), "build", "llaisys", "--backend", "cpu", cwd=REPO)
    assert r.code == 0, r.out + r.err
    [log] = state.glob("logs/llaisys_cpu-*_test_ops.log")
    text = log.read_text()
    assert " passed" in text and "failed" not in text.split("\n")[-3]
    [manifest] = state.glob("install/llaisys/cpu-*/manifest.json")
    files = {f["path"] for f in json.loads(manifest.read_text())["files"]}
    assert {"lib/libllaisys.so", "python/llaisys/libllaisys.so",
            "include/llaisys/ops.h"} <= files
