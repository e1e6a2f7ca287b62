"""gllm_kernels: load precompiled GPU kernels (flash attention, RMSNorm, rotary)
from ``<root>/<backend>/<kernel>/<arch>.<ext>`` and run them on torch/cupy arrays.

The root is $GLLM_KERNELS_ROOT, else ~/.gsc/gllm/kernels. Importing this
package needs neither a GPU nor cupy; those are needed only when a kernel runs.
"""

from ._spec import CUDA_ARCHS, ENTRY_POINTS, KERNELS, METAL_ARCHS, ROCM_ARCHS
from .artifacts import (Artifact, ArtifactNotFoundError, artifact_root, find_cuda_artifacts,
                        read_manifest, select_cuda_artifact)
from .ops import flash_attn, rms_norm, rotary

__version__ = "0.1.0"
__all__ = [
    "Artifact", "ArtifactNotFoundError", "CUDA_ARCHS", "ENTRY_POINTS", "KERNELS",
    "METAL_ARCHS", "ROCM_ARCHS", "artifact_root", "find_cuda_artifacts", "flash_attn",
    "read_manifest", "rms_norm", "rotary", "select_cuda_artifact",
]
