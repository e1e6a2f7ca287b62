"""Artifact lookup and selection (pure Python: no GPU, no cupy needed)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
import gllm_kernels as gk  # noqa: E402


def _touch(root, *rel):
    for r in rel:
        p = root / r
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("//")


def test_root_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("GLLM_KERNELS_ROOT", str(tmp_path))
    assert gk.artifact_root() == tmp_path
    monkeypatch.delenv("GLLM_KERNELS_ROOT")
    assert gk.artifact_root() == Path("~/.gsc/gllm/kernels").expanduser()


def test_selection_order(tmp_path):
    _touch(tmp_path, "cuda/rms_norm/sm_75.ptx", "cuda/rms_norm/sm_80.ptx",
           "cuda/rms_norm/sm_90.ptx", "cuda/rms_norm/sm_86.cubin", "cuda/rms_norm/sm_90a.ptx")
    pick = lambda cc: gk.select_cuda_artifact("rms_norm", cc, tmp_path)  # noqa: E731
    assert (pick(86).fmt, pick(86).arch) == ("cubin", 86)  # exact cubin wins
    assert (pick(89).fmt, pick(89).arch) == ("ptx", 80)  # newest PTX <= 89
    assert (pick(90).fmt, pick(90).arch) == ("ptx", 90)
    assert (pick(120).fmt, pick(120).arch) == ("ptx", 90)  # PTX JITs forward
    with pytest.raises(gk.ArtifactNotFoundError, match="sm_75.ptx"):
        pick(70)  # only newer arches exist: the error lists them


def test_missing_kernel_error_names_root(tmp_path):
    with pytest.raises(gk.ArtifactNotFoundError, match="found: nothing"):
        gk.select_cuda_artifact("flash_attn", 90, tmp_path)


def test_manifest_adds_candidates(tmp_path):
    _touch(tmp_path, "elsewhere/sm_80.ptx", "elsewhere/sm_86.ptx")
    (tmp_path / "manifest.json").write_text(json.dumps({
        "artifacts": [{"backend": "cuda", "kernel": "rotary", "arch": "sm_80",
                       "path": "elsewhere/sm_80.ptx"},
                      {"backend": "cuda", "kernel": "rotary", "arch": "sm_99",
                       "path": "missing/sm_99.ptx"}],
        "cuda": {"rotary": {"sm_86": str(tmp_path / "elsewhere/sm_86.ptx")}}}))
    arts = gk.find_cuda_artifacts("rotary", tmp_path)
    assert [a.arch for a in arts] == [80, 86]  # missing files are dropped
    assert gk.select_cuda_artifact("rotary", 89, tmp_path).arch == 86


def test_bad_manifest_is_ignored(tmp_path):
    _touch(tmp_path, "cuda/rotary/sm_80.ptx")
    (tmp_path / "manifest.json").write_text("{not json")
    assert gk.read_manifest(tmp_path) is None
    assert gk.select_cuda_artifact("rotary", 80, tmp_path).arch == 80


def test_import_without_cupy_or_gpu():
    # Importing must not need cupy (or a GPU); calling a kernel then says why.
    code = ("import sys; sys.modules['cupy'] = None; sys.path.insert(0, %r)\n"
            "import gllm_kernels as gk\n"
            "try:\n    gk.rms_norm(object(), object())\n"
            "except RuntimeError as e:\n    assert 'cupy' in str(e); print('ok')\n") % str(ROOT / "python")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.stdout.strip() == "ok", p.stderr
