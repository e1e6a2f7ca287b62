"""Fused RMSNorm, SwiGLU and rotary embedding (a torch C++/CUDA extension)."""

import torch  # noqa: F401  (loads libtorch before the extension)

from fusedops._C import has_cuda, rms_norm, rotary, swiglu

__all__ = ["has_cuda", "rms_norm", "rotary", "swiglu"]
__version__ = "0.1.0"
