"""LLAISYS: a small C++/CUDA inference runtime, used from Python via ctypes.

    import llaisys
    llaisys.cuda_info()   # {'compiled': ..., 'device_count': ..., ...}
    x = llaisys.Tensor.from_torch(torch.randn(4, 8), device="nvidia")
"""
from . import ops
from ._lib import LIB_PATH, DataType, DeviceType, LlaisysError, MemcpyKind, Status
from .runtime import (Event, Stream, as_device, build_info, cublas_compiled, cuda_compiled, cuda_info,
                      device_count, free, free_host, get_device, malloc, malloc_host, memcpy, memcpy_async,
                      memset, resolve_memcpy_kind, set_device, synchronize)
from .tensor import Tensor

__version__ = "0.1.0"

__all__ = [
    "ops", "LIB_PATH", "DataType", "DeviceType", "LlaisysError", "MemcpyKind", "Status", "Event", "Stream",
    "as_device", "build_info", "cublas_compiled", "cuda_compiled", "cuda_info", "device_count", "free",
    "free_host", "get_device", "malloc", "malloc_host", "memcpy", "memcpy_async", "memset",
    "resolve_memcpy_kind", "set_device", "synchronize", "Tensor",
]
