"""embedding: out[i, :] = weight[index[i], :] (a gather, so results are exact)."""
import pytest
import torch

import llaisys


@pytest.mark.parametrize("n, vocab, d", [(1, 1, 1), (17, 1000, 64), (128, 32000, 256)])
def test_embedding(device, dtype, ll, n, vocab, d):
    torch.manual_seed(1)
    weight = torch.randn(vocab, d, dtype=dtype)
    index = torch.randint(0, vocab, (n,), dtype=torch.int64)
    index[0] = vocab - 1  # the last row, and repeats below
    if n > 2:
        index[1] = index[2]
    out = ll.empty((n, d), dtype, device)
    llaisys.ops.embedding(out, ll.to_ll(index, device), ll.to_ll(weight, device))
    assert torch.equal(out.torch(), torch.nn.functional.embedding(index, weight))


@pytest.mark.parametrize("bad", [-1, 10])
def test_embedding_index_out_of_range(device, ll, bad):
    weight = ll.to_ll(torch.randn(10, 4), device)
    index = ll.to_ll(torch.tensor([0, bad], dtype=torch.int64), device)
    out = ll.empty((2, 4), torch.float32, device)
    with pytest.raises(llaisys.LlaisysError, match="out of range") as e:
        llaisys.ops.embedding(out, index, weight)
    assert e.value.code == llaisys.Status.INVALID_ARGUMENT


if __name__ == "__main__":
    import sys
    sys.exit(pytest.main([__file__] + sys.argv[1:]))
