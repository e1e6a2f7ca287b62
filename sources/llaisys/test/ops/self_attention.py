"""Causal self-attention with grouped-query heads against torch.

q [L, H, D], k [S, KVH, D], v [S, KVH, DV] -> out [L, H, DV]; query i sees keys
j <= i + S - L (the queries are the last L positions of the sequence)."""
import math

import pytest
import torch

import llaisys


def attention_ref(q, k, v, scale):
    L, H, _ = q.shape
    S, KVH, _ = k.shape
    q, k, v = (t.double().transpose(0, 1) for t in (q, k, v))  # [heads, len, dim]
    k = k.repeat_interleave(H // KVH, dim=0)
    v = v.repeat_interleave(H // KVH, dim=0)
    mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L)
    scores = (q @ k.transpose(-2, -1)) * scale
    scores = scores.masked_fill(~mask, float("-inf"))
    return (torch.softmax(scores, dim=-1) @ v).transpose(0, 1)  # [L, H, DV]


CASES = [  # L, S, H, KVH, D, DV
    (1, 1, 1, 1, 8, 8),
    (5, 11, 4, 2, 16, 16),
    (16, 16, 8, 8, 64, 64),      # prefill, plain multi-head
    (16, 64, 8, 2, 64, 64),      # chunked prefill, GQA 4:1
    (3, 40, 6, 3, 32, 48),       # dv != d
    (1, 300, 4, 1, 128, 128),    # decode step, MQA
    (7, 33, 12, 2, 128, 256),    # dv at the CUDA kernel limit
]


@pytest.mark.parametrize("L, S, H, KVH, D, DV", CASES)
def test_self_attention(device, dtype, ll, L, S, H, KVH, D, DV):
    torch.manual_seed(L + S + H + D)
    q = torch.randn(L, H, D, dtype=dtype)
    k = torch.randn(S, KVH, D, dtype=dtype)
    v = torch.randn(S, KVH, DV, dtype=dtype)
    scale = 1.0 / math.sqrt(D)
    out = ll.empty((L, H, DV), dtype, device)
    llaisys.ops.self_attention(out, ll.to_ll(q, device), ll.to_ll(k, device), ll.to_ll(v, device), scale)
    # f32: the softmax weights are exact to ~1e-7 relative and the output is a
    # convex combination of v rows (|out| <= max|v| ~ 4), so the base 2e-4
    # holds; sum_len=D covers the score dot products for large heads.
    ll.assert_close(out, attention_ref(q, k, v, scale), dtype, sum_len=D)


def test_self_attention_rejects_bad_heads(device, ll):
    q = ll.to_ll(torch.randn(2, 3, 8), device)
    k = ll.to_ll(torch.randn(2, 2, 8), device)  # 3 heads not a multiple of 2
    v = ll.to_ll(torch.randn(2, 2, 8), device)
    with pytest.raises(llaisys.LlaisysError, match="multiple"):
        llaisys.ops.self_attention(ll.empty((2, 3, 8), torch.float32, device), q, k, v, 0.5)


if __name__ == "__main__":
    import sys
    sys.exit(pytest.main([__file__] + sys.argv[1:]))
