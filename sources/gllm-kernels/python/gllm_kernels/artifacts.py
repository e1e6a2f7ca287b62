"""Locating precompiled kernels: ``<root>/<backend>/<kernel>/<arch>.<ext>``.

Pure Python (no GPU, no cupy) so it can be unit-tested and used for listing.

Selection rule for CUDA (``select_cuda_artifact``), device compute capability XY:
  1. ``sm_XY.cubin`` — exact SASS for this device (cubins are not portable
     across minor arches in both directions, so only an exact match is taken);
  2. else the newest ``sm_AB.ptx`` with AB <= XY — PTX is forward compatible:
     the driver JIT-compiles it for the device (PTX for a newer arch than the
     device cannot be loaded at all);
  3. else ``ArtifactNotFoundError`` listing what exists.

An optional ``manifest.json`` in the root adds candidates. Accepted shapes
(anything else is ignored, the manifest is never required):
  {"artifacts": [{"backend": "cuda", "kernel": "rms_norm", "arch": "sm_80",
                  "path": "cuda/rms_norm/sm_80.ptx"}, ...]}
  {"cuda": {"rms_norm": {"sm_80": "cuda/rms_norm/sm_80.ptx"}}}
Relative paths are relative to the root; entries whose file is missing are dropped.
"""

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ROOT = "~/.gsc/gllm/kernels"
_CUDA_NAME = re.compile(r"^sm_(\d+)\.(ptx|cubin)$")


class ArtifactNotFoundError(LookupError):
    """No usable precompiled kernel for this device."""


@dataclass(frozen=True, order=True)
class Artifact:
    kernel: str
    arch: int  # compute capability as an int: sm_86 -> 86, sm_100 -> 100
    fmt: str  # "cubin" or "ptx"
    path: Path

    @property
    def arch_name(self):
        return f"sm_{self.arch}"


def artifact_root():
    """GLLM_KERNELS_ROOT if set, else ~/.gsc/gllm/kernels (not required to exist)."""
    return Path(os.environ.get("GLLM_KERNELS_ROOT") or DEFAULT_ROOT).expanduser()


def read_manifest(root=None):
    """Parsed manifest.json of the root, or None if absent/unreadable."""
    p = Path(root or artifact_root()) / "manifest.json"
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def _manifest_paths(manifest, backend, kernel):
    """Paths (as given) that a manifest lists for backend/kernel."""
    if not isinstance(manifest, dict):
        return []
    out = []
    entries = manifest.get("artifacts")
    if isinstance(entries, list):
        for e in entries:
            if (isinstance(e, dict) and e.get("backend") == backend
                    and e.get("kernel") == kernel and isinstance(e.get("path"), str)):
                out.append(e["path"])
    nested = manifest.get(backend)
    if isinstance(nested, dict) and isinstance(nested.get(kernel), dict):
        out += [p for p in nested[kernel].values() if isinstance(p, str)]
    return out


def find_cuda_artifacts(kernel, root=None):
    """All CUDA artifacts of a kernel found by directory scan and manifest, sorted."""
    root = Path(root or artifact_root())
    paths = set()
    d = root / "cuda" / kernel
    if d.is_dir():
        paths.update(d.iterdir())
    for p in _manifest_paths(read_manifest(root), "cuda", kernel):
        p = Path(p).expanduser()
        paths.add(p if p.is_absolute() else root / p)
    found = []
    for p in paths:
        m = _CUDA_NAME.match(p.name)
        if m and p.is_file():  # sm_90a-style names are arch-locked: not matched
            found.append(Artifact(kernel, int(m.group(1)), m.group(2), p))
    return sorted(set(found))


def select_cuda_artifact(kernel, compute_capability, root=None):
    """Best artifact for a device of the given compute capability (e.g. 86)."""
    cc = int(compute_capability)
    root = Path(root or artifact_root())
    arts = find_cuda_artifacts(kernel, root)
    exact = [a for a in arts if a.fmt == "cubin" and a.arch == cc]
    if exact:
        return exact[0]
    ptx = [a for a in arts if a.fmt == "ptx" and a.arch <= cc]
    if ptx:
        return max(ptx, key=lambda a: a.arch)
    have = ", ".join(f"{a.path.name}" for a in arts) or "nothing"
    raise ArtifactNotFoundError(
        f"no CUDA artifact of kernel '{kernel}' usable on a sm_{cc} device under "
        f"{root / 'cuda' / kernel} (found: {have}). Need sm_{cc}.cubin or a "
        f"sm_XY.ptx with XY <= {cc}; build one, e.g. `nvcc -ptx -arch=sm_{cc} -O3 "
        f"--use_fast_math kernels/cuda/{kernel}.cu -o {root}/cuda/{kernel}/sm_{cc}.ptx`, "
        f"or point GLLM_KERNELS_ROOT at a root that has them.")
