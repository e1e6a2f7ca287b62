"""Comparison cases shared by tests/test_kernels_gpu.py and tests/gpu_check.py.

Every case builds random inputs from a fixed seed (on the CPU generator, so
the data is identical on any machine), runs the kernel from the artifact root,
and compares it to the fp32 torch reference computed *from the same
(possibly fp16) inputs*. The error is max |kernel - reference| over all
elements, the fp16 output included as is.

Tolerances: fp32 1e-4; fp16 2e-3. For fp16 the output rounding alone is half
an ulp: 9.8e-4 for |y| in [2, 4), 1.95e-3 in [4, 8). Inputs are ~N(0, 1), so
attention outputs (weighted means of v) and rotary outputs (rotations of
(x_i, x_{i+D/2}) pairs) stay well below 8; RMSNorm weights are drawn from
U(0.5, 1) so |x_hat * w| stays below 8 as well.
"""

import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import gllm_kernels as gk  # noqa: E402  (path set up above)
from gllm_kernels import reference as ref  # noqa: E402

TOL = {"float16": 2e-3, "float32": 1e-4}


@dataclass
class Case:
    kernel: str
    variant: str
    dtype: str
    run: object  # callable() -> (kernel output as fp32 torch tensor, fp32 reference)

    @property
    def id(self):
        return f"{self.kernel}-{self.dtype}-{self.variant}".replace(" ", "_")

    @property
    def tol(self):
        return TOL[self.dtype]


def _randn(shape, seed, dtype, scale=1.0, offset=0.0):
    import torch
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g) * scale + offset
    return t.to(device="cuda", dtype=getattr(torch, dtype))


def _rand(shape, seed, dtype, lo, hi):
    import torch
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(shape, generator=g) * (hi - lo) + lo
    return t.to(device="cuda", dtype=getattr(torch, dtype))


def _call(fn, api, *arrays, **kw):
    """Run a gllm_kernels op on torch tensors, or on cupy views of them."""
    import torch
    if api == "cupy":
        import cupy
        out = fn(*[cupy.asarray(a) for a in arrays], **kw)
        out = torch.as_tensor(out, device="cuda")
    else:
        out = fn(*arrays, **kw)
    torch.cuda.synchronize()
    return out.float()


def _flash(shape, causal, seed, dtype, api="torch"):
    b, h, hkv, sq, sk, d = shape
    q = _randn((b, h, sq, d), seed, dtype)
    k = _randn((b, hkv, sk, d), seed + 1, dtype)
    v = _randn((b, hkv, sk, d), seed + 2, dtype)
    out = _call(gk.flash_attn, api, q, k, v, causal=causal)
    return out, ref.flash_attn(q, k, v, causal=causal)


def _rms(rows, dim, seed, dtype, api="torch"):
    x = _randn((rows, dim), seed, dtype)
    w = _rand((dim,), seed + 1, dtype, 0.5, 1.0)
    out = _call(gk.rms_norm, api, x, w, eps=1e-6)
    return out, ref.rms_norm(x, w, eps=1e-6)


def _rotary(shape, shared_pos, seed, dtype, api="torch"):
    import torch
    b, h, s, d = shape
    x = _randn(shape, seed, dtype)
    if shared_pos:
        pos = torch.arange(s, device="cuda")
    else:  # large positions exercise the angle range reduction
        g = torch.Generator().manual_seed(seed + 1)
        pos = torch.randint(0, 32768, (b, s), generator=g).to("cuda")
    out = _call(gk.rotary, api, x, pos, theta=10000.0)
    return out, ref.rotary(x, pos, theta=10000.0)


def cases():
    out = []
    for dtype in ("float16", "float32"):
        # flash_attn: full grid of head dim x causal; 193 is a multiple of
        # neither the 16-row query tile nor the 32-key tile.
        for d in (64, 128):
            for causal in (False, True):
                tag = "causal" if causal else "full"
                out.append(Case("flash_attn", f"B2 H4 S193 d{d} {tag}", dtype,
                                partial(_flash, (2, 4, 4, 193, 193, d), causal, 10 + d, dtype)))
        out.append(Case("flash_attn", "GQA H8/2 S100 d128 causal", dtype,
                        partial(_flash, (1, 8, 2, 100, 100, 128), True, 20, dtype)))
        out.append(Case("flash_attn", "decode Sq5 Sk300 d64 causal", dtype,
                        partial(_flash, (2, 4, 4, 5, 300, 64), True, 30, dtype)))
        for dim in (1000, 4096):
            out.append(Case("rms_norm", f"rows33 dim{dim}", dtype,
                            partial(_rms, 33, dim, 40 + dim, dtype)))
        for d in (64, 128):
            out.append(Case("rotary", f"B2 H3 S77 d{d} pos<32768", dtype,
                            partial(_rotary, (2, 3, 77, d), False, 50 + d, dtype)))
        out.append(Case("rotary", "B2 H3 S77 d128 shared arange", dtype,
                        partial(_rotary, (2, 3, 77, 128), True, 60, dtype)))
    # The same kernels driven through cupy arrays instead of torch tensors.
    out.append(Case("flash_attn", "cupy B2 H4 S193 d64 causal", "float32",
                    partial(_flash, (2, 4, 4, 193, 193, 64), True, 70, "float32", "cupy")))
    out.append(Case("rms_norm", "cupy rows33 dim1000", "float16",
                    partial(_rms, 33, 1000, 71, "float16", "cupy")))
    out.append(Case("rotary", "cupy B2 H3 S77 d64", "float32",
                    partial(_rotary, (2, 3, 77, 64), False, 72, "float32", "cupy")))
    return out


def environment_problem():
    """Why GPU cases cannot run here (a string), or None."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU visible to torch"
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "cupy is not installed (gllm_kernels loads artifacts through cupy)"
    # Exact fp32 reference: no TF32 in the reference matmuls.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return None


def artifact_problem(kernel):
    """Why `kernel` has no usable artifact for GPU 0 (a string), or None."""
    import torch
    major, minor = torch.cuda.get_device_capability(0)
    try:
        gk.select_cuda_artifact(kernel, major * 10 + minor)
    except gk.ArtifactNotFoundError as e:
        return str(e)
    return None


def run_case(case):
    """Max abs error of one case (float)."""
    out, expect = case.run()
    if out.shape != expect.shape:
        raise AssertionError(f"shape {tuple(out.shape)} != reference {tuple(expect.shape)}")
    return (out - expect).abs().max().item()
