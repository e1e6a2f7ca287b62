// Validation and device dispatch. The NVIDIA branch calls CUDA code only:
// there is deliberately no CPU fallback, so a test on --device nvidia really
// exercises the kernels.
#include "ops.hpp"
#include "kernels.hpp"

#include <initializer_list>

namespace llaisys::ops {
namespace {

// Common checks: all tensors contiguous, on one device; returns that device.
void checkSameDevice(const char *op, std::initializer_list<const Tensor *> ts) {
    const Tensor &first = **ts.begin();
    for (const Tensor *t : ts) {
        LLAISYS_CHECK_ARG(t->isContiguous(), op, ": tensor ", t->describe(), " is not contiguous");
        LLAISYS_CHECK_ARG(t->deviceType() == first.deviceType() && t->deviceId() == first.deviceId(),
                          op, ": tensors on different devices (", first.describe(), " vs ",
                          t->describe(), ")");
    }
}

void checkDtype(const char *op, const Tensor &t, llaisysDataType_t dt) {
    LLAISYS_CHECK_ARG(t.dtype() == dt, op, ": expected dtype ", dtypeName(dt), ", got ", t.describe());
}

void checkFloat(const char *op, const Tensor &t) {
    LLAISYS_CHECK_ARG(isFloatDtype(t.dtype()), op, ": expected f32/f16/bf16, got ", t.describe());
}

void checkShape(const char *op, const Tensor &t, std::initializer_list<size_t> shape) {
    LLAISYS_CHECK_ARG(t.shape() == std::vector<size_t>(shape), op, ": unexpected shape ", t.describe());
}

// Runs `fn` with the kernel namespace of the tensor's device, on that device.
template <typename CpuFn, typename GpuFn>
void dispatch(const Tensor &t, CpuFn &&cpu_fn, GpuFn &&gpu_fn) {
    switch (t.deviceType()) {
    case LLAISYS_DEVICE_CPU: cpu_fn(); return;
    case LLAISYS_DEVICE_NVIDIA: {
#ifdef LLAISYS_ENABLE_CUDA
        DeviceGuard guard(t.deviceType(), t.deviceId());
        gpu_fn();
        return;
#else
        (void)gpu_fn;
        fail(LLAISYS_ERROR_UNSUPPORTED, "NVIDIA op requested but llaisys was built without CUDA");
#endif
    }
    default: fail(LLAISYS_ERROR_INVALID_ARGUMENT, "unknown device");
    }
}

#ifdef LLAISYS_ENABLE_CUDA
#define LLAISYS_DISPATCH(t, call) dispatch(t, [&] { cpu::call; }, [&] { nvidia::call; })
#else
#define LLAISYS_DISPATCH(t, call) dispatch(t, [&] { cpu::call; }, [] {})
#endif

} // namespace

void add(Tensor &c, const Tensor &a, const Tensor &b) {
    checkSameDevice("add", {&c, &a, &b});
    checkFloat("add", c);
    LLAISYS_CHECK_ARG(a.shape() == c.shape() && b.shape() == c.shape() && a.dtype() == c.dtype() &&
                          b.dtype() == c.dtype(),
                      "add: shapes/dtypes differ: ", c.describe(), " = ", a.describe(), " + ", b.describe());
    LLAISYS_DISPATCH(c, add(c.data(), a.data(), b.data(), c.dtype(), c.numel()));
}

void argmax(Tensor &max_idx, Tensor &max_val, const Tensor &vals) {
    checkSameDevice("argmax", {&max_idx, &max_val, &vals});
    checkFloat("argmax", vals);
    LLAISYS_CHECK_ARG(vals.ndim() == 1 && vals.numel() > 0, "argmax: vals must be 1-D and non-empty, got ",
                      vals.describe());
    checkDtype("argmax", max_idx, LLAISYS_DTYPE_I64);
    checkDtype("argmax", max_val, vals.dtype());
    LLAISYS_CHECK_ARG(max_idx.numel() == 1 && max_val.numel() == 1, "argmax: outputs must hold one element");
    auto *idx = static_cast<int64_t *>(max_idx.data());
    LLAISYS_DISPATCH(vals, argmax(idx, max_val.data(), vals.data(), vals.dtype(), vals.numel()));
}

void embedding(Tensor &out, const Tensor &index, const Tensor &weight) {
    checkSameDevice("embedding", {&out, &index, &weight});
    checkFloat("embedding", weight);
    checkDtype("embedding", index, LLAISYS_DTYPE_I64);
    checkDtype("embedding", out, weight.dtype());
    LLAISYS_CHECK_ARG(index.ndim() == 1 && weight.ndim() == 2, "embedding: need index [n], weight [V, d]");
    checkShape("embedding", out, {index.dim(0), weight.dim(1)});
    auto *idx = static_cast<const int64_t *>(index.data());
    LLAISYS_DISPATCH(out, embedding(out.data(), idx, weight.data(), out.dtype(), index.dim(0),
                                    weight.dim(0), weight.dim(1)));
}

void linear(Tensor &out, const Tensor &in, const Tensor &weight, const Tensor *bias) {
    checkSameDevice("linear", {&out, &in, &weight, bias ? bias : &weight});
    checkFloat("linear", out);
    LLAISYS_CHECK_ARG(in.ndim() == 2 && weight.ndim() == 2 && in.dim(1) == weight.dim(1),
                      "linear: need in [M, K] and weight [N, K], got ", in.describe(), ", ", weight.describe());
    size_t M = in.dim(0), K = in.dim(1), N = weight.dim(0);
    checkShape("linear", out, {M, N});
    checkDtype("linear", in, out.dtype());
    checkDtype("linear", weight, out.dtype());
    if (bias) {
        checkDtype("linear", *bias, out.dtype());
        checkShape("linear", *bias, {N});
    }
    const void *b = bias ? bias->data() : nullptr;
    LLAISYS_DISPATCH(out, linear(out.data(), in.data(), weight.data(), b, out.dtype(), M, N, K));
}

void rmsNorm(Tensor &out, const Tensor &in, const Tensor &weight, float eps) {
    checkSameDevice("rms_norm", {&out, &in, &weight});
    checkFloat("rms_norm", out);
    LLAISYS_CHECK_ARG(in.ndim() == 2, "rms_norm: need in [rows, d], got ", in.describe());
    checkShape("rms_norm", out, {in.dim(0), in.dim(1)});
    checkShape("rms_norm", weight, {in.dim(1)});
    checkDtype("rms_norm", in, out.dtype());
    checkDtype("rms_norm", weight, out.dtype());
    LLAISYS_DISPATCH(out, rmsNorm(out.data(), in.data(), weight.data(), out.dtype(), in.dim(0), in.dim(1), eps));
}

void rope(Tensor &out, const Tensor &in, const Tensor &pos_ids, float theta) {
    checkSameDevice("rope", {&out, &in, &pos_ids});
    checkFloat("rope", out);
    LLAISYS_CHECK_ARG(in.ndim() == 3 && in.dim(2) % 2 == 0, "rope: need in [seq, nhead, d] with even d, got ",
                      in.describe());
    checkShape("rope", out, {in.dim(0), in.dim(1), in.dim(2)});
    checkDtype("rope", in, out.dtype());
    checkDtype("rope", pos_ids, LLAISYS_DTYPE_I64);
    checkShape("rope", pos_ids, {in.dim(0)});
    LLAISYS_CHECK_ARG(theta > 0.f, "rope: theta must be positive");
    auto *pos = static_cast<const int64_t *>(pos_ids.data());
    LLAISYS_DISPATCH(out, rope(out.data(), in.data(), pos, out.dtype(), in.dim(0), in.dim(1), in.dim(2), theta));
}

void selfAttention(Tensor &out, const Tensor &q, const Tensor &k, const Tensor &v, float scale) {
    checkSameDevice("self_attention", {&out, &q, &k, &v});
    checkFloat("self_attention", out);
    LLAISYS_CHECK_ARG(q.ndim() == 3 && k.ndim() == 3 && v.ndim() == 3,
                      "self_attention: q, k, v must be 3-D [len, heads, dim]");
    size_t L = q.dim(0), H = q.dim(1), D = q.dim(2), S = k.dim(0), KVH = k.dim(1), DV = v.dim(2);
    LLAISYS_CHECK_ARG(k.dim(2) == D, "self_attention: q and k head dims differ");
    LLAISYS_CHECK_ARG(v.dim(0) == S && v.dim(1) == KVH, "self_attention: k and v disagree: ", k.describe(),
                      " vs ", v.describe());
    LLAISYS_CHECK_ARG(KVH > 0 && H % KVH == 0, "self_attention: nhead ", H, " is not a multiple of nkvhead ", KVH);
    LLAISYS_CHECK_ARG(S >= L, "self_attention: total_len ", S, " < seqlen ", L,
                      " would leave queries with no visible key");
    checkShape("self_attention", out, {L, H, DV});
    for (const Tensor *t : {&q, &k, &v}) checkDtype("self_attention", *t, out.dtype());
#ifdef LLAISYS_ENABLE_CUDA
    if (out.deviceType() == LLAISYS_DEVICE_NVIDIA)
        LLAISYS_CHECK_ARG(DV <= nvidia::kMaxAttentionDv, "self_attention: dv ", DV, " exceeds the CUDA kernel limit ",
                          nvidia::kMaxAttentionDv);
#endif
    LLAISYS_DISPATCH(out, selfAttention(out.data(), q.data(), k.data(), v.data(), out.dtype(), L, S, H, KVH, D, DV,
                                        scale));
}

void swiglu(Tensor &out, const Tensor &gate, const Tensor &up) {
    checkSameDevice("swiglu", {&out, &gate, &up});
    checkFloat("swiglu", out);
    LLAISYS_CHECK_ARG(gate.shape() == out.shape() && up.shape() == out.shape() && gate.dtype() == out.dtype() &&
                          up.dtype() == out.dtype(),
                      "swiglu: shapes/dtypes differ: ", out.describe(), ", ", gate.describe(), ", ", up.describe());
    LLAISYS_DISPATCH(out, swiglu(out.data(), gate.data(), up.data(), out.dtype(), out.numel()));
}

} // namespace llaisys::ops
