"""ctypes bindings for libxops (found next to this package: <prefix>/lib/libxops.so)."""

import ctypes
import os
from array import array

_here = os.path.dirname(os.path.abspath(__file__))
_lib = ctypes.CDLL(os.environ.get("XOPS_LIBRARY") or
                   os.path.join(_here, "..", "..", "lib", "libxops.so"))
_fp = ctypes.POINTER(ctypes.c_float)
_lib.xops_add.argtypes = [ctypes.c_int, _fp, _fp, _fp, ctypes.c_size_t]
_lib.xops_rms_norm.argtypes = [ctypes.c_int, _fp, _fp, _fp, ctypes.c_size_t, ctypes.c_size_t,
                               ctypes.c_float]
_lib.xops_last_error.restype = ctypes.c_char_p
DEVICES = {"cpu": 0, "nvidia": 1}


def _ptr(a: array):
    return ctypes.cast(a.buffer_info()[0], _fp)


def _check(rc: int) -> None:
    if rc != 0:
        raise RuntimeError(_lib.xops_last_error().decode())


def has_nvidia() -> bool:
    return bool(_lib.xops_has_nvidia())


def add(a, b, device="cpu"):
    a, b = array("f", a), array("f", b)
    out = array("f", bytes(4 * len(a)))
    _check(_lib.xops_add(DEVICES[device], _ptr(a), _ptr(b), _ptr(out), len(a)))
    return out


def rms_norm(x, w, rows, eps=1e-6, device="cpu"):
    x, w = array("f", x), array("f", w)
    out = array("f", bytes(4 * len(x)))
    _check(_lib.xops_rms_norm(DEVICES[device], _ptr(x), _ptr(w), _ptr(out), rows, len(w), eps))
    return out
