"""Tensor wrapper. Data moves between Python and the library only through host
memcpy (Tensor.load / Tensor.store): torch tensors and numpy arrays are made
contiguous CPU buffers first, so a CPU-only torch is enough for any device."""
import ctypes

from ._lib import DataType, DeviceType, lib
from .runtime import as_device

_NUMPY_DTYPES = {"float32": DataType.F32, "float16": DataType.F16, "int64": DataType.I64}


def _torch_dtypes():
    import torch

    return {torch.float32: DataType.F32, torch.float16: DataType.F16,
            torch.bfloat16: DataType.BF16, torch.int64: DataType.I64}


def to_torch_dtype(dt):
    inv = {v: k for k, v in _torch_dtypes().items()}
    return inv[DataType(dt)]


class Tensor:
    def __init__(self, shape, dtype=DataType.F32, device=DeviceType.CPU, device_id=0, _handle=None):
        if _handle is None:
            shape = tuple(int(s) for s in shape)
            arr = (ctypes.c_size_t * max(1, len(shape)))(*shape)
            h = ctypes.c_void_p()
            lib.llaisysTensorCreate(arr, len(shape), int(DataType(dtype)), int(as_device(device)),
                                    int(device_id), ctypes.byref(h))
            _handle = h.value
        self._handle = _handle

    # -- construction from / conversion to host arrays -------------------
    @classmethod
    def from_torch(cls, t, device=DeviceType.CPU, device_id=0):
        t = t.detach().to("cpu").contiguous()
        dt = _torch_dtypes().get(t.dtype)
        if dt is None:
            raise TypeError(f"unsupported torch dtype {t.dtype}")
        out = cls(t.shape, dt, device, device_id)
        out.load(t.data_ptr())
        return out

    @classmethod
    def from_numpy(cls, a, device=DeviceType.CPU, device_id=0):
        import numpy as np

        a = np.ascontiguousarray(a)
        dt = _NUMPY_DTYPES.get(str(a.dtype))
        if dt is None:
            raise TypeError(f"unsupported numpy dtype {a.dtype} (bf16: use from_torch)")
        out = cls(a.shape, dt, device, device_id)
        out.load(a.ctypes.data)
        return out

    def torch(self):
        """Copy to a new CPU torch tensor (D2H or H2H)."""
        import torch

        out = torch.empty(self.shape, dtype=to_torch_dtype(self.dtype))
        self.store(out.data_ptr())
        return out

    def numpy(self):
        import numpy as np

        inv = {v: k for k, v in _NUMPY_DTYPES.items()}
        if self.dtype not in inv:
            raise TypeError("numpy has no bfloat16; use .torch()")
        out = np.empty(self.shape, dtype=inv[self.dtype])
        self.store(out.ctypes.data)
        return out

    def load(self, host_ptr):
        lib.llaisysTensorLoad(self._handle, host_ptr)

    def store(self, host_ptr):
        lib.llaisysTensorStore(self._handle, host_ptr)

    def copy_(self, src):
        """Copy from another tensor on any device (kind chosen from the devices)."""
        lib.llaisysTensorCopy(self._handle, src._handle)
        return self

    # -- metadata ---------------------------------------------------------
    @property
    def handle(self):
        return self._handle

    @property
    def ndim(self):
        n = ctypes.c_size_t()
        lib.llaisysTensorGetNdim(self._handle, ctypes.byref(n))
        return n.value

    @property
    def shape(self):
        n = self.ndim
        arr = (ctypes.c_size_t * max(1, n))()
        lib.llaisysTensorGetShape(self._handle, arr)
        return tuple(arr[:n])

    @property
    def strides(self):
        n = self.ndim
        arr = (ctypes.c_ssize_t * max(1, n))()
        lib.llaisysTensorGetStrides(self._handle, arr)
        return tuple(arr[:n])

    @property
    def dtype(self):
        d = ctypes.c_int()
        lib.llaisysTensorGetDtype(self._handle, ctypes.byref(d))
        return DataType(d.value)

    @property
    def device(self):
        d, i = ctypes.c_int(), ctypes.c_int()
        lib.llaisysTensorGetDevice(self._handle, ctypes.byref(d), ctypes.byref(i))
        return DeviceType(d.value)

    @property
    def device_id(self):
        d, i = ctypes.c_int(), ctypes.c_int()
        lib.llaisysTensorGetDevice(self._handle, ctypes.byref(d), ctypes.byref(i))
        return i.value

    def data_ptr(self):
        p = ctypes.c_void_p()
        lib.llaisysTensorGetData(self._handle, ctypes.byref(p))
        return p.value

    def is_contiguous(self):
        c = ctypes.c_int()
        lib.llaisysTensorIsContiguous(self._handle, ctypes.byref(c))
        return bool(c.value)

    # -- views ------------------------------------------------------------
    def view(self, *shape):
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        arr = (ctypes.c_size_t * max(1, len(shape)))(*shape)
        h = ctypes.c_void_p()
        lib.llaisysTensorView(self._handle, arr, len(shape), ctypes.byref(h))
        return Tensor(None, _handle=h.value)

    def permute(self, *order):
        arr = (ctypes.c_size_t * max(1, len(order)))(*order)
        h = ctypes.c_void_p()
        lib.llaisysTensorPermute(self._handle, arr, ctypes.byref(h))
        return Tensor(None, _handle=h.value)

    def slice(self, dim, start, end):
        h = ctypes.c_void_p()
        lib.llaisysTensorSlice(self._handle, dim, start, end, ctypes.byref(h))
        return Tensor(None, _handle=h.value)

    def __del__(self):
        h, self._handle = getattr(self, "_handle", None), None
        if h is not None:
            try:
                lib.llaisysTensorDestroy(h)
            except Exception:  # interpreter shutdown
                pass

    def __repr__(self):
        return (f"llaisys.Tensor(shape={self.shape}, dtype={self.dtype.name}, "
                f"device={self.device.name.lower()}:{self.device_id})")
