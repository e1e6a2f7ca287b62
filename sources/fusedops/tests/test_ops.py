"""fusedops against plain torch: on the CPU always, on the GPU when the extension has
its CUDA kernels and a GPU is visible (``--device cuda`` makes that a requirement)."""

import pytest
import torch

import fusedops


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", ["cpu", "cuda"])


@pytest.fixture(autouse=True)
def _need(request):
    device = request.node.callspec.params.get("device") if hasattr(request.node, "callspec") \
        else None
    if device == "cuda" and not (fusedops.has_cuda() and torch.cuda.is_available()):
        pytest.skip("needs the CUDA build of fusedops and a GPU")


TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}


def ref_rms_norm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("dim", [64, 1000, 4096])
def test_rms_norm(device, dtype, dim):
    g = torch.Generator().manual_seed(dim)
    x = torch.randn(33, dim, generator=g).to(device, dtype)
    w = torch.randn(dim, generator=g).to(device, dtype)
    got = fusedops.rms_norm(x, w, 1e-6)
    assert got.dtype == dtype and got.shape == x.shape
    torch.testing.assert_close(got.float().cpu(), ref_rms_norm(x.cpu(), w.cpu(), 1e-6).float(),
                               atol=TOL[dtype] * 10, rtol=TOL[dtype] * 10)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_swiglu(device, dtype):
    g = torch.Generator().manual_seed(7)
    gate = torch.randn(17, 513, generator=g).to(device, dtype)
    up = torch.randn(17, 513, generator=g).to(device, dtype)
    want = (torch.nn.functional.silu(gate.cpu().float()) * up.cpu().float()).to(dtype)
    torch.testing.assert_close(fusedops.swiglu(gate, up).cpu(), want,
                               atol=TOL[dtype] * 10, rtol=TOL[dtype] * 10)


def test_rotary_matches_complex_rotation():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 4, 9, 64, generator=g)
    pos = torch.arange(9) * 3
    got = fusedops.rotary(x, pos, 10000.0)
    inv = 10000.0 ** (-torch.arange(0, 64, 2).float() / 64)
    rot = torch.polar(torch.ones(9, 32), pos.float()[:, None] * inv[None, :])
    want = torch.view_as_real(torch.view_as_complex(x.reshape(2, 4, 9, 32, 2)) * rot).flatten(-2)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    # a rotation keeps every pair's norm
    torch.testing.assert_close(got.norm(dim=-1), x.norm(dim=-1), atol=1e-4, rtol=1e-5)


def test_errors_are_clear():
    with pytest.raises(RuntimeError, match="last dimension must be even"):
        fusedops.rotary(torch.zeros(3, 5), torch.arange(3), 10000.0)
    with pytest.raises(RuntimeError, match="weight has 3 elements"):
        fusedops.rms_norm(torch.zeros(2, 4), torch.ones(3), 1e-6)
