"""The eight operators. Outputs first, like the C API; every tensor must be
contiguous and on one device. Failures raise LlaisysError."""
from ._lib import lib


def add(c, a, b):
    lib.llaisysAdd(c.handle, a.handle, b.handle)


def argmax(max_idx, max_val, vals):
    lib.llaisysArgmax(max_idx.handle, max_val.handle, vals.handle)


def embedding(out, index, weight):
    lib.llaisysEmbedding(out.handle, index.handle, weight.handle)


def linear(out, inp, weight, bias=None):
    lib.llaisysLinear(out.handle, inp.handle, weight.handle, bias.handle if bias is not None else None)


def rms_norm(out, inp, weight, eps):
    lib.llaisysRmsNorm(out.handle, inp.handle, weight.handle, float(eps))


def rope(out, inp, pos_ids, theta):
    lib.llaisysRoPE(out.handle, inp.handle, pos_ids.handle, float(theta))


def self_attention(out, q, k, v, scale):
    lib.llaisysSelfAttention(out.handle, q.handle, k.handle, v.handle, float(scale))


def swiglu(out, gate, up):
    lib.llaisysSwiGLU(out.handle, gate.handle, up.handle)


def linear_last_backend():
    """GEMM used by the last NVIDIA linear on this thread: 'cublas', 'tiled' or 'none'."""
    return lib.llaisysLinearLastBackend().decode()
