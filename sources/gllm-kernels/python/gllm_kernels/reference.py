"""PyTorch reference implementations (fp32 math) for testing the kernels.

Each takes torch tensors of any float dtype, computes in fp32 (rotary's
cos/sin tables in fp64, then fp32 — see below) and returns fp32.
"""

import math


def flash_attn(q, k, v, causal=False, scale=None):
    import torch
    q, k, v = q.float(), k.float(), v.float()
    h, hkv, sq, sk = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    if hkv != h:  # GQA: each kv head serves h // hkv consecutive query heads
        k = k.repeat_interleave(h // hkv, dim=1)
        v = v.repeat_interleave(h // hkv, dim=1)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if causal:  # bottom-right aligned, like the kernel
        keep = torch.ones(sq, sk, dtype=torch.bool, device=q.device).tril(diagonal=sk - sq)
        s = s.masked_fill(~keep, float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)  # rows with no key -> 0, like the kernel
    return torch.matmul(p, v)


def rms_norm(x, w, eps=1e-6):
    import torch
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w.float()


def rotary(x, positions, theta=10000.0):
    # cos/sin from fp64 angles: an fp32 angle at position p is already off by
    # ~p * 6e-8 rad, which would make the *reference* the inaccurate side.
    import torch
    x = x.float()
    d = x.shape[-1]
    i = torch.arange(d // 2, dtype=torch.float64, device=x.device)
    inv_freq = theta ** (-2.0 * i / d)
    pos = positions.to(device=x.device, dtype=torch.float64)
    if pos.ndim == 1:
        pos = pos[None]
    ang = pos[:, None, :, None] * inv_freq  # [B or 1, 1, S, D/2]
    cos, sin = ang.cos().float(), ang.sin().float()
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
