"""rms_norm: out = x / sqrt(mean(x^2, -1) + eps) * w."""
import pytest
import torch

import llaisys


@pytest.mark.parametrize("rows, d", [(1, 1), (1, 16), (37, 1000), (4, 4096), (3, 1536)])
@pytest.mark.parametrize("eps", [1e-5, 1e-6])
def test_rms_norm(device, dtype, ll, rows, d, eps):
    torch.manual_seed(rows + d)
    x = torch.randn(rows, d, dtype=dtype)
    w = torch.randn(d, dtype=dtype)
    out = ll.empty((rows, d), dtype, device)
    llaisys.ops.rms_norm(out, ll.to_ll(x, device), ll.to_ll(w, device), eps)
    xd = x.double()
    ref = xd / torch.sqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * w.double()
    ll.assert_close(out, ref, dtype, sum_len=d)


if __name__ == "__main__":
    import sys
    sys.exit(pytest.main([__file__] + sys.argv[1:]))
