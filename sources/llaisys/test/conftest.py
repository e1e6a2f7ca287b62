"""Shared test setup: the --device option, device/skip handling, and the
comparison against a CPU PyTorch reference.

The package is found through PYTHONPATH=<install prefix>/python."""
import pytest
import torch

import llaisys

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}

# (atol, rtol) per output dtype, against a float64 reference computed from the
# same (already rounded) inputs. Kernels accumulate in f32 and round once, so
# the error is <= 1/2 ulp of the output dtype plus f32 accumulation noise:
#   f16  ulp/|x| <= 2^-10 ~ 9.8e-4  -> rtol 2e-3, atol 1e-3 for values near 0
#   bf16 ulp/|x| <= 2^-7  ~ 7.8e-3  -> rtol 2e-2, atol 1e-2
#   f32  differences come only from summation order and libm/CUDA exp/sin
#        (a few f32 ulps), far below 2e-4; ops that sum K terms scale it (see
#        tolerance()).
TOLERANCES = {torch.float32: (2e-4, 2e-4), torch.float16: (1e-3, 2e-3), torch.bfloat16: (1e-2, 2e-2)}


def pytest_addoption(parser):
    parser.addoption("--device", action="store", default="cpu", choices=("cpu", "nvidia"),
                     help="device the llaisys ops run on (reference is always CPU torch)")


@pytest.fixture(scope="session")
def device(request):
    """'cpu' or 'nvidia'; skips (visibly, with the reason) when the NVIDIA
    backend is not compiled in or no GPU is visible."""
    name = request.config.getoption("--device")
    if name == "nvidia":
        info = llaisys.cuda_info()
        if not info["compiled"]:
            pytest.skip("--device nvidia: libllaisys was built without CUDA (LLAISYS_ENABLE_CUDA=OFF); "
                        f"build: {info['build']}")
        if info["device_count"] == 0:
            pytest.skip("--device nvidia: CUDA support is compiled in but no NVIDIA GPU is usable "
                        f"(device count 0: {info['reason']})")
        llaisys.set_device(name, 0)
    return name


@pytest.fixture(params=list(DTYPES), ids=list(DTYPES))
def dtype(request):
    return DTYPES[request.param]


def to_ll(t, device):
    return llaisys.Tensor.from_torch(t, device=device)


def empty_ll(shape, dtype, device):
    return llaisys.Tensor(shape, llaisys.tensor._torch_dtypes()[dtype], device)


def tolerance(dtype, sum_len=1):
    """(atol, rtol) for `dtype`; for f32 outputs that are sums of sum_len
    products the bound grows like sqrt(sum_len) (random-walk rounding error),
    so it is scaled past 256 terms. Low-precision bounds are dominated by the
    final rounding and are not scaled."""
    atol, rtol = TOLERANCES[dtype]
    if dtype == torch.float32 and sum_len > 256:
        f = (sum_len / 256) ** 0.5
        atol, rtol = atol * f, rtol * f
    return atol, rtol


def assert_close(actual, expected, dtype, sum_len=1):
    """actual: llaisys.Tensor (any device) or torch tensor; expected: torch
    (any float dtype, usually float64)."""
    if isinstance(actual, llaisys.Tensor):
        actual = actual.torch()
    assert actual.dtype == dtype, f"result dtype {actual.dtype}, expected {dtype}"
    atol, rtol = tolerance(dtype, sum_len)
    torch.testing.assert_close(actual.double(), expected.double(), atol=atol, rtol=rtol)


# Helpers handed to the tests as a fixture rather than imported: test modules
# are imported by basename (add.py, linear.py...), and a fixture does not depend
# on sys.path or the import mode.
@pytest.fixture
def ll():
    class _H:
        pass

    h = _H()
    h.to_ll, h.empty, h.assert_close, h.tolerance = to_ll, empty_ll, assert_close, tolerance
    return h
