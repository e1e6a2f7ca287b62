"""Public ops. Each takes torch CUDA tensors or cupy arrays (fp16/fp32) and
returns a new array of the same kind, dtype and device.
"""

import math

from . import _spec
from ._cuda import Arrays

_TAGS = {"float16": "f16", "float32": "f32"}


def _tag(a, name):
    tag = _TAGS.get(a.dtype.name)
    if tag is None:
        raise TypeError(f"{name} must be float16 or float32, got {a.dtype}")
    return tag


def flash_attn(q, k, v, causal=False, scale=None):
    """Attention forward: softmax(q k^T * scale [+ causal mask]) v.

    q: [batch, heads, seq_q, D]; k, v: [batch, heads_kv, seq_k, D] with
    heads % heads_kv == 0 (GQA/MQA); D in (64, 128); scale defaults to 1/sqrt(D).
    causal masks bottom-right aligned: query i sees keys j <= i + seq_k - seq_q
    (the usual triangle when seq_q == seq_k; KV-cache decoding otherwise).
    Query rows that see no key (only possible when seq_q > seq_k) come out as 0.
    """
    import numpy as np  # lazy, like cupy: importing the package needs neither

    ar = Arrays(q)
    qa, ka, va = ar.view(q, "q"), ar.view(k, "k"), ar.view(v, "v")
    if qa.ndim != 4 or ka.ndim != 4 or va.shape != ka.shape:
        raise ValueError(f"expected q [B,H,Sq,D], k = v [B,Hkv,Sk,D]; got "
                         f"{qa.shape}, {ka.shape}, {va.shape}")
    b, h, sq, d = qa.shape
    bk, hkv, sk, dk = ka.shape
    if bk != b or dk != d or hkv == 0 or h % hkv:
        raise ValueError(f"k/v shape {ka.shape} does not match q {qa.shape}")
    if d not in _spec.FLASH_HEAD_DIMS:
        raise ValueError(f"head_dim {d} unsupported; compiled for {_spec.FLASH_HEAD_DIMS}")
    if not (qa.dtype == ka.dtype == va.dtype):
        raise TypeError("q, k, v must share one dtype")
    if h > 65535 or b > 65535:
        raise ValueError("heads and batch must be <= 65535 (grid y/z limits)")
    tag = _tag(qa, "q")
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    out, oa = ar.empty(qa.shape, qa)
    if qa.size:
        grid = ((sq + _spec.FLASH_BLOCK_M - 1) // _spec.FLASH_BLOCK_M, h, b)
        ar.launch("flash_attn", _spec.entry_name("flash_attn", tag, d), grid,
                  (_spec.FLASH_THREADS, 1, 1),
                  (qa, ka, va, oa, np.int32(b), np.int32(h), np.int32(hkv), np.int32(sq),
                   np.int32(sk), np.float32(scale), np.int32(1 if causal else 0)))
    return out


def rms_norm(x, w, eps=1e-6):
    """y = x / sqrt(mean(x^2, -1) + eps) * w over the last dim; w: [dim].
    Accumulation and scaling in fp32, one rounding to x's dtype."""
    import numpy as np

    ar = Arrays(x)
    xa, wa = ar.view(x, "x"), ar.view(w, "w")
    if xa.ndim < 1 or wa.shape != (xa.shape[-1],):
        raise ValueError(f"w must have shape ({xa.shape[-1:]}), got {wa.shape}")
    if wa.dtype != xa.dtype:
        raise TypeError("x and w must share one dtype")
    tag = _tag(xa, "x")
    dim = xa.shape[-1]
    rows = xa.size // dim if dim else 0
    out, oa = ar.empty(xa.shape, xa)
    if rows:
        # One block per row; enough threads to cover short rows in one pass.
        block = 256 if dim >= 256 else max(32, (dim + 31) // 32 * 32)
        ar.launch("rms_norm", _spec.entry_name("rms_norm", tag), (rows, 1, 1), (block, 1, 1),
                  (xa, wa, oa, np.int32(rows), np.int32(dim), np.float32(eps)))
    return out


def rotary(x, positions, theta=10000.0):
    """Rotary embedding, rotate-half (GPT-NeoX / HF Llama) pairing (i, i + D/2).

    x: [batch, heads, seq, D] with D even; positions: integer [seq] (shared by
    the batch) or [batch, seq]; inv_freq_i = theta^(-2i/D), computed in-kernel.
    """
    import numpy as np

    ar = Arrays(x)
    xa = ar.view(x, "x")
    pa = ar.view(positions, "positions", dtype="int32")
    if xa.ndim != 4 or xa.shape[-1] % 2:
        raise ValueError(f"x must be [batch, heads, seq, D] with D even, got {xa.shape}")
    b, h, s, d = xa.shape
    if pa.shape == (s,) or pa.shape == (1, s):
        stride = 0
    elif pa.shape == (b, s):
        stride = s
    else:
        raise ValueError(f"positions must be [{s}] or [{b}, {s}], got {pa.shape}")
    tag = _tag(xa, "x")
    out, oa = ar.empty(xa.shape, xa)
    n = b * s * (d // 2)
    if n and h:
        t = _spec.ROTARY_THREADS
        ar.launch("rotary", _spec.entry_name("rotary", tag), ((n + t - 1) // t, 1, 1), (t, 1, 1),
                  (xa, pa, oa, np.int32(b), np.int32(h), np.int32(s), np.int32(d),
                   np.int32(stride), np.float32(theta)))
    return out
