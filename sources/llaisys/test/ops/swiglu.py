"""swiglu: out = up * silu(gate) = up * gate / (1 + exp(-gate))."""
import pytest
import torch

import llaisys


@pytest.mark.parametrize("shape", [(1,), (13, 4), (64, 1000), (5, 8960)])
def test_swiglu(device, dtype, ll, shape):
    torch.manual_seed(sum(shape))
    gate = torch.randn(shape, dtype=dtype) * 3
    up = torch.randn(shape, dtype=dtype)
    out = ll.empty(shape, dtype, device)
    llaisys.ops.swiglu(out, ll.to_ll(gate, device), ll.to_ll(up, device))
    ref = up.double() * torch.nn.functional.silu(gate.double())
    ll.assert_close(out, ref, dtype)


if __name__ == "__main__":
    import sys
    sys.exit(pytest.main([__file__] + sys.argv[1:]))
