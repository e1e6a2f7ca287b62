"""Time each operator on a device with the runtime's events (cudaEvent on
NVIDIA) and check it against CPU torch, one line per op:

    PYTHONPATH=<prefix>/python python test/bench_ops.py --device nvidia [--dtype f16]

Shapes are those of a small LLM layer (Qwen2-1.5B-like: hidden 1536, MLP 8960,
12 query / 2 kv heads of 128, 128 prefill tokens over a 512-token cache). Each
line also says where the op's output lives: 'device' means the result was
written to cudaMalloc'ed memory, which CPU code could not have produced (the
NVIDIA dispatch has no CPU fallback anyway)."""
import argparse
import ctypes
import math
import sys

import torch

import llaisys

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def cases(dt, small):
    T, Hd, I, H, KV, D, S, V = (8, 256, 512, 4, 2, 64, 32, 1000) if small else \
        (128, 1536, 8960, 12, 2, 128, 512, 32000)
    g = torch.Generator().manual_seed(0)

    def r(*shape, s=1.0):
        return (torch.randn(*shape, generator=g) * s).to(dt)

    x, y = r(T, Hd), r(T, Hd)
    yield "add", f"[{T},{Hd}]", (T, Hd), dt, lambda o, a: llaisys.ops.add(o, *a), [x, y], x.double() + y.double(), 0
    logits = r(151936 if not small else V)
    yield "argmax", f"[{logits.numel()}]", (1,), torch.int64, \
        lambda o, a: llaisys.ops.argmax(o, a[1], a[0]), [logits, torch.empty(1, dtype=dt)], \
        logits.argmax().reshape(1), 0
    w, idx = r(V, Hd), torch.randint(0, V, (T,), generator=g)
    yield "embedding", f"[{T}] x [{V},{Hd}]", (T, Hd), dt, lambda o, a: llaisys.ops.embedding(o, *a), \
        [idx, w], w[idx].double(), 0
    W, b = r(I, Hd, s=Hd ** -0.5), r(I)
    yield "linear", f"[{T},{Hd}] x [{I},{Hd}]^T", (T, I), dt, lambda o, a: llaisys.ops.linear(o, *a), \
        [x, W, b], torch.nn.functional.linear(x.double(), W.double(), b.double()), 2 * T * Hd * I
    nw = r(Hd)
    xd = x.double()
    yield "rms_norm", f"[{T},{Hd}]", (T, Hd), dt, lambda o, a: llaisys.ops.rms_norm(o, *a, 1e-6), [x, nw], \
        xd / torch.sqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * nw.double(), 0
    q, pos = r(T, H, D), torch.arange(S - T, S)
    freqs = 10000.0 ** (torch.arange(0, D // 2, dtype=torch.float64) * 2 / D)
    ang = pos.double()[:, None, None] / freqs
    qa, qb = q.double()[..., : D // 2], q.double()[..., D // 2:]
    yield "rope", f"[{T},{H},{D}]", (T, H, D), dt, lambda o, a: llaisys.ops.rope(o, *a, 10000.0), [q, pos], \
        torch.cat([qa * ang.cos() - qb * ang.sin(), qb * ang.cos() + qa * ang.sin()], -1), 0
    k, v = r(S, KV, D), r(S, KV, D)
    qq, kk, vv = (t.double().transpose(0, 1) for t in (q, k, v))
    kk, vv = kk.repeat_interleave(H // KV, 0), vv.repeat_interleave(H // KV, 0)
    sc = (qq @ kk.transpose(-2, -1)) / math.sqrt(D)
    sc = sc.masked_fill(~torch.ones(T, S, dtype=torch.bool).tril(S - T), float("-inf"))
    yield "self_attention", f"q[{T},{H},{D}] kv[{S},{KV},{D}]", (T, H, D), dt, \
        lambda o, a: llaisys.ops.self_attention(o, *a, 1 / math.sqrt(D)), [q, k, v], \
        (torch.softmax(sc, -1) @ vv).transpose(0, 1), 4 * H * D * T * S // 2
    gt, up = r(T, I), r(T, I)
    yield "swiglu", f"[{T},{I}]", (T, I), dt, lambda o, a: llaisys.ops.swiglu(o, *a), [gt, up], \
        up.double() * torch.nn.functional.silu(gt.double()), 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="nvidia", choices=("cpu", "nvidia"))
    p.add_argument("--dtype", default="all", choices=("all", *DTYPES))
    p.add_argument("--iters", type=int, default=None, help="timed iterations (default 50 nvidia, 3 cpu)")
    p.add_argument("--small", action="store_true", help="tiny shapes (quick smoke run)")
    args = p.parse_args()
    info = llaisys.cuda_info()
    print(f"# {info['build']}; nvidia devices: {info['device_count']}; library: {llaisys.LIB_PATH}")
    if args.device == "nvidia" and (not info["compiled"] or info["device_count"] == 0):
        print("SKIP: no usable NVIDIA device (" + info["reason"] + ")")
        return 0
    iters = args.iters or (50 if args.device == "nvidia" else 3)
    dev = args.device
    probe = ctypes.create_string_buffer(8)
    failed = 0
    for dname, dt in DTYPES.items():
        if args.dtype not in ("all", dname):
            continue
        for name, shape_s, out_shape, out_dt, fn, inputs, ref, flops in cases(dt, args.small):
            ll_in = [llaisys.Tensor.from_torch(t, device=dev) for t in inputs]
            out = llaisys.Tensor(out_shape, llaisys.tensor._torch_dtypes()[out_dt], dev)
            fn(out, ll_in)  # warm-up (and the run that is checked)
            llaisys.synchronize(dev)
            got = out.torch()
            err = 0.0 if out_dt == torch.int64 and torch.equal(got, ref) else (got.double() - ref.double()).abs().max().item()
            start, end = llaisys.Event(dev), llaisys.Event(dev)
            start.record()
            for _ in range(iters):
                fn(out, ll_in)
            end.record()
            end.synchronize()
            ms = start.elapsed_ms(end) / iters
            kind = llaisys.resolve_memcpy_kind(dev, ctypes.addressof(probe), out.data_ptr())
            where = "device" if kind == llaisys.MemcpyKind.D2H else "host"
            extra = f" {flops / ms / 1e6:9.1f} GFLOP/s" if flops else ""
            if name == "linear" and dev == "nvidia":
                extra += f" gemm={llaisys.ops.linear_last_backend()}"
            tol = {torch.float32: 1e-3, torch.float16: 2e-2, torch.bfloat16: 1e-1}[dt]
            ok = err <= tol * max(1.0, ref.double().abs().max().item())
            failed += not ok
            print(f"{name:15s} {dname:4s} {shape_s:32s} {ms:10.4f} ms/iter  out={where:6s} "
                  f"max_err={err:.2e} {'ok' if ok else 'MISMATCH'}{extra}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
