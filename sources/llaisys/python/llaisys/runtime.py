"""Per-device runtime: devices, streams, memory, copies, events."""
import ctypes

from ._lib import DeviceType, MemcpyKind, lib


def as_device(device):
    """Accepts DeviceType, 'cpu', 'nvidia' (alias 'cuda') or an int."""
    if isinstance(device, str):
        name = device.lower()
        if name == "cpu":
            return DeviceType.CPU
        if name in ("nvidia", "cuda", "gpu"):
            return DeviceType.NVIDIA
        raise ValueError(f"unknown device {device!r} (expected 'cpu' or 'nvidia')")
    return DeviceType(int(device))


def cuda_compiled():
    """True if libllaisys was built with LLAISYS_ENABLE_CUDA=ON."""
    return bool(lib.llaisysCudaCompiled())


def cublas_compiled():
    return bool(lib.llaisysCublasCompiled())


def build_info():
    return lib.llaisysBuildInfo().decode()


def device_count(device):
    n = ctypes.c_int()
    lib.llaisysGetDeviceCount(as_device(device), ctypes.byref(n))
    return n.value


def cuda_info():
    """Whether CUDA support is compiled in and how many NVIDIA devices are
    visible: {'compiled': bool, 'cublas': bool, 'device_count': int,
    'reason': str (why there is no usable device, '' if there is one), 'build': str}.
    Safe on machines without a GPU or driver (count 0)."""
    count = device_count(DeviceType.NVIDIA)
    return {
        "compiled": cuda_compiled(),
        "cublas": cublas_compiled(),
        "device_count": count,
        "reason": lib.llaisysNvidiaUnavailableReason().decode() if count == 0 else "",
        "build": build_info(),
    }


def set_device(device, device_id):
    lib.llaisysSetDevice(as_device(device), int(device_id))


def get_device(device):
    n = ctypes.c_int()
    lib.llaisysGetDevice(as_device(device), ctypes.byref(n))
    return n.value


def synchronize(device):
    lib.llaisysDeviceSynchronize(as_device(device))


def malloc(device, nbytes):
    p = ctypes.c_void_p()
    lib.llaisysMalloc(as_device(device), int(nbytes), ctypes.byref(p))
    return p.value


def free(device, ptr):
    lib.llaisysFree(as_device(device), ptr)


def malloc_host(device, nbytes):
    """Page-locked host memory on NVIDIA (plain host memory on CPU)."""
    p = ctypes.c_void_p()
    lib.llaisysMallocHost(as_device(device), int(nbytes), ctypes.byref(p))
    return p.value


def free_host(device, ptr):
    lib.llaisysFreeHost(as_device(device), ptr)


def resolve_memcpy_kind(device, dst, src):
    k = ctypes.c_int()
    lib.llaisysMemcpyResolveKind(as_device(device), dst, src, ctypes.byref(k))
    return MemcpyKind(k.value)


def memcpy(device, dst, src, nbytes, kind=MemcpyKind.AUTO):
    lib.llaisysMemcpy(as_device(device), dst, src, int(nbytes), int(kind))


def memcpy_async(device, dst, src, nbytes, stream=None, kind=MemcpyKind.AUTO):
    handle = stream.handle if isinstance(stream, Stream) else stream
    lib.llaisysMemcpyAsync(as_device(device), dst, src, int(nbytes), int(kind), handle)


def memset(device, ptr, value, nbytes):
    lib.llaisysMemset(as_device(device), ptr, int(value), int(nbytes))


class Stream:
    def __init__(self, device):
        self.device = as_device(device)
        h = ctypes.c_void_p()
        lib.llaisysStreamCreate(self.device, ctypes.byref(h))
        self.handle = h.value

    def synchronize(self):
        lib.llaisysStreamSynchronize(self.device, self.handle)

    def close(self):
        if self.handle is not None:
            lib.llaisysStreamDestroy(self.device, self.handle)
            self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Event:
    """cudaEvent on NVIDIA, a steady-clock timestamp on CPU."""

    def __init__(self, device):
        self.device = as_device(device)
        h = ctypes.c_void_p()
        lib.llaisysEventCreate(self.device, ctypes.byref(h))
        self.handle = h.value

    def record(self, stream=None):
        s = stream.handle if isinstance(stream, Stream) else stream
        lib.llaisysEventRecord(self.device, self.handle, s)

    def synchronize(self):
        lib.llaisysEventSynchronize(self.device, self.handle)

    def elapsed_ms(self, end):
        ms = ctypes.c_float()
        lib.llaisysEventElapsedTime(self.device, self.handle, end.handle, ctypes.byref(ms))
        return ms.value

    def close(self):
        if self.handle is not None:
            lib.llaisysEventDestroy(self.device, self.handle)
            self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
