import math

import pytest

import xops


def pytest_addoption(parser):
    pass


@pytest.fixture(params=["cpu", "nvidia"])
def device(request):
    if request.param == "nvidia":
        if not xops.has_nvidia():
            pytest.skip("built without --nv_gpu=y")
        try:
            xops.add([1.0], [1.0], device="nvidia")
        except RuntimeError as exc:  # no GPU here: the CUDA runtime says so
            pytest.skip(f"no usable NVIDIA GPU: {exc}")
    return request.param


def test_add(device):
    n = 1000
    got = xops.add(range(n), [0.5] * n, device=device)
    assert list(got) == [i + 0.5 for i in range(n)]


def test_rms_norm(device):
    rows, dim = 3, 257
    x = [math.sin(i) for i in range(rows * dim)]
    w = [1 + (i % 5) / 10 for i in range(dim)]
    got = xops.rms_norm(x, w, rows, 1e-6, device=device)
    for r in range(rows):
        row = x[r * dim:(r + 1) * dim]
        inv = 1 / math.sqrt(sum(v * v for v in row) / dim + 1e-6)
        for i in range(dim):
            assert got[r * dim + i] == pytest.approx(row[i] * inv * w[i], rel=1e-5, abs=1e-6)


def test_errors_name_the_fix():
    if xops.has_nvidia():
        pytest.skip("built with the NVIDIA kernels")
    with pytest.raises(RuntimeError, match="--nv_gpu=y"):
        xops.add([1.0], [2.0], device="nvidia")
