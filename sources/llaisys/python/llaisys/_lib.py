"""ctypes binding of libllaisys.so: library loading, C prototypes, errors.

(Not named libllaisys.py: Python would try to import the libllaisys.so next
to it as an extension module.)

The shared library is looked up inside this package first (``cmake --install``
puts a copy of libllaisys.so next to this file); if it is not there, the path
in the environment variable ``LLAISYS_LIBRARY`` is used.
"""
import ctypes
import enum
import os
from pathlib import Path

_LIB_NAMES = ("libllaisys.so", "libllaisys.dylib", "llaisys.dll")


class DeviceType(enum.IntEnum):
    CPU = 0
    NVIDIA = 1


class DataType(enum.IntEnum):
    F32 = 0
    F16 = 1
    BF16 = 2
    I64 = 3


class MemcpyKind(enum.IntEnum):
    H2H = 0
    H2D = 1
    D2H = 2
    D2D = 3
    AUTO = 4


class Status(enum.IntEnum):
    OK = 0
    INVALID_ARGUMENT = 1
    UNSUPPORTED = 2
    CUDA = 3
    OUT_OF_MEMORY = 4
    INTERNAL = 5


class LlaisysError(RuntimeError):
    """A C API call failed; ``code`` is a Status, the message is the C++ one
    (for CUDA failures: the failed call and the CUDA error string)."""

    def __init__(self, code, message):
        try:
            code = Status(code)
        except ValueError:
            pass
        self.code = code
        self.message = message
        super().__init__(f"[{getattr(code, 'name', code)}] {message}")


def _locate():
    here = Path(__file__).resolve().parent
    for name in _LIB_NAMES:
        if (here / name).is_file():
            return str(here / name)
    env = os.environ.get("LLAISYS_LIBRARY")
    if env:
        if not Path(env).is_file():
            raise ImportError(f"LLAISYS_LIBRARY={env!r} does not name a file")
        return env
    raise ImportError(
        f"libllaisys.so not found in {here} and LLAISYS_LIBRARY is not set; "
        "run `cmake --install <build> --prefix <prefix>` and put <prefix>/python on PYTHONPATH")


LIB_PATH = _locate()
lib = ctypes.CDLL(LIB_PATH)

c_size_p = ctypes.POINTER(ctypes.c_size_t)
c_int_p = ctypes.POINTER(ctypes.c_int)
vp = ctypes.c_void_p


def _errcheck(result, func, args):
    if result != Status.OK:
        msg = lib.llaisysGetLastError().decode("utf-8", "replace")
        raise LlaisysError(result, msg)
    return args


def _status(name, *argtypes):
    f = getattr(lib, name)
    f.argtypes = list(argtypes)
    f.restype = ctypes.c_int
    f.errcheck = _errcheck


def _plain(name, restype, *argtypes):
    f = getattr(lib, name)
    f.argtypes = list(argtypes)
    f.restype = restype


_plain("llaisysGetLastError", ctypes.c_char_p)
_plain("llaisysClearLastError", None)
_plain("llaisysCudaCompiled", ctypes.c_int)
_plain("llaisysCublasCompiled", ctypes.c_int)
_plain("llaisysBuildInfo", ctypes.c_char_p)
_plain("llaisysNvidiaUnavailableReason", ctypes.c_char_p)
_plain("llaisysDtypeSize", ctypes.c_size_t, ctypes.c_int)
_plain("llaisysLinearLastBackend", ctypes.c_char_p)

I = ctypes.c_int
S = ctypes.c_size_t
# runtime
_status("llaisysGetDeviceCount", I, c_int_p)
_status("llaisysSetDevice", I, I)
_status("llaisysGetDevice", I, c_int_p)
_status("llaisysDeviceSynchronize", I)
_status("llaisysStreamCreate", I, ctypes.POINTER(vp))
_status("llaisysStreamDestroy", I, vp)
_status("llaisysStreamSynchronize", I, vp)
_status("llaisysMalloc", I, S, ctypes.POINTER(vp))
_status("llaisysFree", I, vp)
_status("llaisysMallocHost", I, S, ctypes.POINTER(vp))
_status("llaisysFreeHost", I, vp)
_status("llaisysMemcpy", I, vp, vp, S, I)
_status("llaisysMemcpyAsync", I, vp, vp, S, I, vp)
_status("llaisysMemcpyResolveKind", I, vp, vp, c_int_p)
_status("llaisysMemset", I, vp, I, S)
_status("llaisysEventCreate", I, ctypes.POINTER(vp))
_status("llaisysEventDestroy", I, vp)
_status("llaisysEventRecord", I, vp, vp)
_status("llaisysEventSynchronize", I, vp)
_status("llaisysEventElapsedTime", I, vp, vp, ctypes.POINTER(ctypes.c_float))
# tensor (handles are opaque pointers)
_status("llaisysTensorCreate", c_size_p, S, I, I, I, ctypes.POINTER(vp))
_status("llaisysTensorDestroy", vp)
_status("llaisysTensorGetData", vp, ctypes.POINTER(vp))
_status("llaisysTensorGetNdim", vp, c_size_p)
_status("llaisysTensorGetShape", vp, c_size_p)
_status("llaisysTensorGetStrides", vp, ctypes.POINTER(ctypes.c_ssize_t))
_status("llaisysTensorGetDtype", vp, c_int_p)
_status("llaisysTensorGetDevice", vp, c_int_p, c_int_p)
_status("llaisysTensorIsContiguous", vp, c_int_p)
_status("llaisysTensorLoad", vp, vp)
_status("llaisysTensorStore", vp, vp)
_status("llaisysTensorCopy", vp, vp)
_status("llaisysTensorView", vp, c_size_p, S, ctypes.POINTER(vp))
_status("llaisysTensorPermute", vp, c_size_p, ctypes.POINTER(vp))
_status("llaisysTensorSlice", vp, S, S, S, ctypes.POINTER(vp))
# ops
_status("llaisysAdd", vp, vp, vp)
_status("llaisysArgmax", vp, vp, vp)
_status("llaisysEmbedding", vp, vp, vp)
_status("llaisysLinear", vp, vp, vp, vp)
_status("llaisysRmsNorm", vp, vp, vp, ctypes.c_float)
_status("llaisysRoPE", vp, vp, vp, ctypes.c_float)
_status("llaisysSelfAttention", vp, vp, vp, vp, ctypes.c_float)
_status("llaisysSwiGLU", vp, vp, vp)
