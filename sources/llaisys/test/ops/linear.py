"""linear: out = x W^T + b. On NVIDIA both GEMM paths are covered: cuBLAS
(when compiled in) and the library's own tiled kernel (forced with
LLAISYS_DISABLE_CUBLAS=1)."""
import pytest
import torch

import llaisys

SHAPES = [(1, 1, 1), (7, 13, 33), (64, 128, 256), (130, 96, 300), (5, 64, 1536)]


def pytest_generate_tests(metafunc):
    # The tiled-vs-cuBLAS switch only means something on NVIDIA; on CPU the
    # extra parameter would only add skips.
    if "backend" in metafunc.fixturenames:
        on_gpu = metafunc.config.getoption("--device") == "nvidia"
        metafunc.parametrize("backend", ["default", "tiled"] if on_gpu else ["default"])


@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("M, N, K", SHAPES)
def test_linear(device, dtype, ll, backend, monkeypatch, M, N, K, with_bias):
    if backend == "tiled":
        monkeypatch.setenv("LLAISYS_DISABLE_CUBLAS", "1")
    torch.manual_seed(M * 7 + N + K)
    x = torch.randn(M, K, dtype=dtype)
    w = torch.randn(N, K, dtype=dtype) / K ** 0.5  # keeps |out| ~ 1 at every K
    b = torch.randn(N, dtype=dtype) if with_bias else None
    out = ll.empty((M, N), dtype, device)
    llaisys.ops.linear(out, ll.to_ll(x, device), ll.to_ll(w, device),
                       ll.to_ll(b, device) if with_bias else None)
    ref = torch.nn.functional.linear(x.double(), w.double(), b.double() if with_bias else None)
    ll.assert_close(out, ref, dtype, sum_len=K)
    if device == "nvidia":
        used = llaisys.ops.linear_last_backend()
        if backend == "tiled" or not llaisys.cublas_compiled():
            assert used == "tiled"
        else:
            assert used in ("cublas", "tiled")  # tiled only if cuBLAS lacks the dtype on this GPU


def test_linear_shape_mismatch(device, ll):
    x = ll.to_ll(torch.randn(2, 3), device)
    w = ll.to_ll(torch.randn(4, 5), device)
    out = ll.empty((2, 4), torch.float32, device)
    with pytest.raises(llaisys.LlaisysError, match="linear"):
        llaisys.ops.linear(out, x, w)


if __name__ == "__main__":
    import sys
    sys.exit(pytest.main([__file__] + sys.argv[1:]))
