"""add: c = a + b."""
import pytest
import torch

import llaisys


@pytest.mark.parametrize("shape", [(1,), (13, 4), (64, 1000), (3, 5, 7)])
def test_add(device, dtype, ll, shape):
    torch.manual_seed(0)
    a, b = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    c = ll.empty(shape, dtype, device)
    llaisys.ops.add(c, ll.to_ll(a, device), ll.to_ll(b, device))
    ll.assert_close(c, a.double() + b.double(), dtype)


def test_add_shape_mismatch(device, ll):
    a = ll.to_ll(torch.zeros(4), device)
    b = ll.to_ll(torch.zeros(5), device)
    with pytest.raises(llaisys.LlaisysError, match="add") as e:
        llaisys.ops.add(a, a, b)
    assert e.value.code == llaisys.Status.INVALID_ARGUMENT


if __name__ == "__main__":
    import sys
    sys.exit(pytest.main([__file__] + sys.argv[1:]))
