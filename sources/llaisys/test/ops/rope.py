"""rope (half-split layout): for j < d/2, angle = pos / theta^(2j/d),
  out[j] = x[j] cos - x[j+d/2] sin,  out[j+d/2] = x[j+d/2] cos + x[j] sin."""
import pytest
import torch

import llaisys


def rope_ref(x, pos, theta):
    d = x.shape[-1]
    x = x.double()
    freqs = theta ** (torch.arange(0, d // 2, dtype=torch.float64) * 2 / d)
    ang = pos.double()[:, None, None] / freqs  # [seq, 1, d/2]
    a, b = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([a * ang.cos() - b * ang.sin(), b * ang.cos() + a * ang.sin()], dim=-1)


@pytest.mark.parametrize("seq, nhead, d", [(1, 1, 2), (5, 2, 8), (64, 8, 128), (17, 12, 64)])
@pytest.mark.parametrize("theta", [10000.0, 1e6])
@pytest.mark.parametrize("positions", ["arange", "offset", "random"])
def test_rope(device, dtype, ll, seq, nhead, d, theta, positions):
    torch.manual_seed(seq * nhead + d)
    x = torch.randn(seq, nhead, d, dtype=dtype)
    if positions == "arange":
        pos = torch.arange(seq, dtype=torch.int64)
    elif positions == "offset":  # a decode step deep into a long context
        pos = torch.arange(seq, dtype=torch.int64) + 30000
    else:
        pos = torch.randint(0, 100000, (seq,), dtype=torch.int64)
    out = ll.empty((seq, nhead, d), dtype, device)
    llaisys.ops.rope(out, ll.to_ll(x, device), ll.to_ll(pos, device), theta)
    ll.assert_close(out, rope_ref(x, pos, theta), dtype)


def test_rope_odd_dim_rejected(device, ll):
    x = ll.to_ll(torch.randn(2, 1, 3), device)
    pos = ll.to_ll(torch.arange(2), device)
    with pytest.raises(llaisys.LlaisysError, match="even"):
        llaisys.ops.rope(ll.empty((2, 1, 3), torch.float32, device), x, pos, 10000.0)


if __name__ == "__main__":
    import sys
    sys.exit(pytest.main([__file__] + sys.argv[1:]))
