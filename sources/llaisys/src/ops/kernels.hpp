// Raw-pointer kernel entry points shared by both backends. The dispatch layer
// (ops.cpp) has already checked shapes, dtypes, devices and contiguity, so these
// only compute. cpu:: and nvidia:: declare exactly the same functions; the
// nvidia:: ones launch CUDA kernels on the default stream of the current device.
#pragma once

#include "llaisys/llaisys.h"

#include <cstddef>
#include <cstdint>

#define LLAISYS_DECLARE_KERNELS                                                               \
    void add(void *c, const void *a, const void *b, llaisysDataType_t dt, size_t n);          \
    void argmax(int64_t *max_idx, void *max_val, const void *vals, llaisysDataType_t dt,      \
                size_t n);                                                                    \
    void embedding(void *out, const int64_t *index, const void *weight, llaisysDataType_t dt, \
                   size_t n, size_t vocab, size_t d);                                         \
    void linear(void *out, const void *in, const void *weight, const void *bias,              \
                llaisysDataType_t dt, size_t M, size_t N, size_t K);                          \
    void rmsNorm(void *out, const void *in, const void *weight, llaisysDataType_t dt,         \
                 size_t rows, size_t d, float eps);                                           \
    void rope(void *out, const void *in, const int64_t *pos, llaisysDataType_t dt,            \
              size_t seq, size_t nhead, size_t d, float theta);                               \
    void selfAttention(void *out, const void *q, const void *k, const void *v,               \
                       llaisysDataType_t dt, size_t L, size_t S, size_t nhead,                \
                       size_t nkvhead, size_t d, size_t dv, float scale);                     \
    void swiglu(void *out, const void *gate, const void *up, llaisysDataType_t dt, size_t n);

namespace llaisys::cpu { LLAISYS_DECLARE_KERNELS }
#ifdef LLAISYS_ENABLE_CUDA
namespace llaisys::nvidia {
LLAISYS_DECLARE_KERNELS
// Which GEMM the last linear() on this thread used: "cublas" or "tiled".
const char *lastLinearBackend();
// Largest dv supported by the attention kernel (per-lane accumulators).
constexpr size_t kMaxAttentionDv = 256;
}
#endif
