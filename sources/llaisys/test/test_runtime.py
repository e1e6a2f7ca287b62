"""Runtime API: devices, memcpy kinds (H2H/H2D/D2H/D2D chosen automatically),
streams, pinned memory, events, tensors across devices, and the error path."""
import ctypes

import pytest
import torch

import llaisys
from llaisys import MemcpyKind

N = 1 << 16  # floats


def host_buf(values):
    buf = (ctypes.c_float * len(values))(*values)
    return buf, ctypes.addressof(buf)


def test_cuda_info_reports_build_and_devices(device):
    info = llaisys.cuda_info()
    assert isinstance(info["compiled"], bool) and info["device_count"] >= 0
    assert ("cuda=1" in info["build"]) == info["compiled"]
    if not info["compiled"]:
        assert info["device_count"] == 0
    if device == "nvidia":
        assert info["compiled"] and info["device_count"] >= 1


def test_device_count_and_select(device):
    assert llaisys.device_count(device) >= 1
    llaisys.set_device(device, 0)
    assert llaisys.get_device(device) == 0
    llaisys.synchronize(device)


def test_set_invalid_device_raises(device):
    with pytest.raises(llaisys.LlaisysError) as e:
        llaisys.set_device(device, 999)
    assert "999" in str(e.value)
    assert llaisys.get_device(device) == 0  # unchanged


def test_memcpy_kinds_are_resolved(device):
    on_gpu = device == "nvidia"
    d0, d1 = llaisys.malloc(device, N * 4), llaisys.malloc(device, N * 4)
    pinned = llaisys.malloc_host(device, N * 4)
    src, src_ptr = host_buf([float(i) for i in range(N)])
    dst, dst_ptr = host_buf([0.0] * N)
    try:
        expect = {
            (d0, src_ptr): MemcpyKind.H2D if on_gpu else MemcpyKind.H2H,
            (dst_ptr, d0): MemcpyKind.D2H if on_gpu else MemcpyKind.H2H,
            (d1, d0): MemcpyKind.D2D if on_gpu else MemcpyKind.H2H,
            (dst_ptr, src_ptr): MemcpyKind.H2H,
            (pinned, src_ptr): MemcpyKind.H2H,  # pinned memory is host memory
        }
        for (dst_p, src_p), kind in expect.items():
            assert llaisys.resolve_memcpy_kind(device, dst_p, src_p) == kind
        # the data path through every kind, automatic then explicit kinds
        llaisys.memcpy(device, d0, src_ptr, N * 4)                 # H2D
        llaisys.memcpy(device, d1, d0, N * 4)                      # D2D
        llaisys.memcpy(device, dst_ptr, d1, N * 4)                 # D2H
        assert list(dst) == list(src)
        llaisys.memset(device, d1, 0, N * 4)
        llaisys.memcpy(device, dst_ptr, d1, N * 4, MemcpyKind.D2H if on_gpu else MemcpyKind.H2H)
        assert not any(dst)
        llaisys.memcpy(device, pinned, src_ptr, N * 4, MemcpyKind.H2H)
        llaisys.memcpy(device, d1, pinned, N * 4, MemcpyKind.H2D if on_gpu else MemcpyKind.H2H)
        llaisys.memcpy(device, dst_ptr, d1, N * 4)
        assert list(dst) == list(src)
    finally:
        llaisys.free(device, d0)
        llaisys.free(device, d1)
        llaisys.free_host(device, pinned)


def test_stream_async_copies_and_events(device):
    n = 1 << 22  # 16 MiB: large enough for a measurable copy
    dev_buf = llaisys.malloc(device, n * 4)
    a, b = llaisys.malloc_host(device, n * 4), llaisys.malloc_host(device, n * 4)
    src = torch.arange(n, dtype=torch.float32)
    ctypes.memmove(a, src.data_ptr(), n * 4)
    ctypes.memset(b, 0, n * 4)
    try:
        with llaisys.Stream(device) as s:
            start, end = llaisys.Event(device), llaisys.Event(device)
            start.record(s)
            llaisys.memcpy_async(device, dev_buf, a, n * 4, s)
            llaisys.memcpy_async(device, b, dev_buf, n * 4, s)
            end.record(s)
            s.synchronize()
            end.synchronize()
            assert start.elapsed_ms(end) >= 0.0
        assert ctypes.string_at(a, n * 4) == ctypes.string_at(b, n * 4)
    finally:
        llaisys.free(device, dev_buf)
        llaisys.free_host(device, a)
        llaisys.free_host(device, b)


def test_tensor_roundtrip_and_cross_device_copy(device):
    t = torch.randn(3, 5, 7)
    x = llaisys.Tensor.from_torch(t, device=device)
    assert x.shape == (3, 5, 7) and x.strides == (35, 7, 1) and x.device == llaisys.as_device(device)
    assert torch.equal(x.torch(), t)
    host = llaisys.Tensor((3, 5, 7), llaisys.DataType.F32, "cpu")
    host.copy_(x)                                               # D2H (H2H on cpu)
    y = llaisys.Tensor((3, 5, 7), llaisys.DataType.F32, device)
    y.copy_(host)                                               # H2D
    z = llaisys.Tensor((3, 5, 7), llaisys.DataType.F32, device)
    z.copy_(y)                                                  # D2D
    assert torch.equal(z.torch(), t)
    for dt in (torch.float16, torch.bfloat16, torch.int64):
        u = (t * 100).to(dt)
        assert torch.equal(llaisys.Tensor.from_torch(u, device=device).torch(), u)


def test_numpy_roundtrip(device):
    np = pytest.importorskip("numpy")
    a = np.arange(24, dtype=np.float16).reshape(2, 3, 4)
    assert (llaisys.Tensor.from_numpy(a, device=device).numpy() == a).all()


def test_views_share_storage(device):
    x = llaisys.Tensor.from_torch(torch.arange(24, dtype=torch.float32).reshape(4, 6), device=device)
    s = x.slice(0, 1, 3)
    assert s.shape == (2, 6) and s.is_contiguous()
    assert torch.equal(s.torch(), torch.arange(6, 18, dtype=torch.float32).reshape(2, 6))
    p = x.permute(1, 0)
    assert p.shape == (6, 4) and p.strides == (1, 6) and not p.is_contiguous()
    with pytest.raises(llaisys.LlaisysError, match="contiguous"):
        p.torch()
    with pytest.raises(llaisys.LlaisysError, match="contiguous"):
        llaisys.ops.add(p, p, p)
    assert x.view(2, 12).shape == (2, 12)
    del x  # views keep the storage alive
    assert torch.equal(s.torch(), torch.arange(6, 18, dtype=torch.float32).reshape(2, 6))


def test_out_of_memory_is_an_exception(device):
    with pytest.raises(llaisys.LlaisysError) as e:
        llaisys.malloc(device, 1 << 55)  # 32 PiB
    assert e.value.code == llaisys.Status.OUT_OF_MEMORY
    if device == "nvidia":
        # the message names the failed CUDA call and carries CUDA's own text
        assert "cudaMalloc" in e.value.message and "memory" in e.value.message
    # the runtime is still usable afterwards (the error was not sticky)
    p = llaisys.malloc(device, 64)
    llaisys.free(device, p)


def test_mixed_devices_rejected(device):
    if device == "cpu":
        pytest.skip("needs a second device type (run with --device nvidia)")
    a = llaisys.Tensor.from_torch(torch.zeros(4), device="cpu")
    b = llaisys.Tensor.from_torch(torch.zeros(4), device=device)
    with pytest.raises(llaisys.LlaisysError, match="different devices"):
        llaisys.ops.add(b, a, b)


def test_nvidia_unavailable_without_cuda(device):
    # takes `device` so that a --device nvidia run without a GPU/CUDA build
    # reports only skips, never a pass
    if llaisys.cuda_compiled():
        pytest.skip("this build has CUDA; the UNSUPPORTED path only exists in CPU-only builds")
    assert llaisys.device_count("nvidia") == 0
    with pytest.raises(llaisys.LlaisysError) as e:
        llaisys.Tensor((2,), llaisys.DataType.F32, "nvidia")
    assert e.value.code == llaisys.Status.UNSUPPORTED
    assert "LLAISYS_ENABLE_CUDA" in e.value.message
