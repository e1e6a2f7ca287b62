"""argmax over a 1-D vector: index (i64) and value; ties pick the first index
(torch.argmax semantics)."""
import pytest
import torch

import llaisys


def run_argmax(vals, device, ll):
    idx = ll.empty((1,), torch.int64, device)
    val = ll.empty((1,), vals.dtype, device)
    llaisys.ops.argmax(idx, val, ll.to_ll(vals, device))
    return idx.torch(), val.torch()


@pytest.mark.parametrize("n", [1, 4, 1000, 4097, 151936])
def test_argmax(device, dtype, ll, n):
    torch.manual_seed(n)
    vals = torch.randn(n, dtype=dtype)  # bf16/f16 have many exact ties
    idx, val = run_argmax(vals, device, ll)
    assert idx.item() == vals.argmax().item()
    assert val.item() == vals.max().item()


@pytest.mark.parametrize("data, expect", [([0.0, 0.0, 0.0], 0), ([1.0, 5.0, 5.0, 2.0], 1),
                                          ([-3.0, -1.0, -2.0, -1.0], 1), ([float("-inf"), -60000.0], 1)])
def test_argmax_ties_and_extremes(device, dtype, ll, data, expect):
    vals = torch.tensor(data, dtype=dtype)
    idx, val = run_argmax(vals, device, ll)
    assert idx.item() == expect
    assert val.item() == vals[expect].item()


if __name__ == "__main__":
    import sys
    sys.exit(pytest.main([__file__] + sys.argv[1:]))
