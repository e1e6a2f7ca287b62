// add, swiglu, embedding and rope CUDA kernels (memory-bound, one thread per
// output element or pair, grid-stride loops).
#include "common.cuh"

namespace llaisys::nvidia {

extern __device__ int g_device_error_flag; // device_flags.cu

namespace {

template <typename T>
__global__ void addKernel(T *c, const T *a, const T *b, size_t n) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x)
        c[i] = fromF<T>(toF(a[i]) + toF(b[i]));
}

template <typename T>
__global__ void swigluKernel(T *out, const T *gate, const T *up, size_t n) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) {
        float g = toF(gate[i]);
        out[i] = fromF<T>(toF(up[i]) * g / (1.f + expf(-g)));
    }
}

// One block per output row. A bad index writes zeros and raises the flag
// instead of reading out of bounds.
template <typename T>
__global__ void embeddingKernel(T *out, const int64_t *index, const T *weight, size_t vocab, size_t d) {
    int64_t r = index[blockIdx.x];
    T *o = out + blockIdx.x * d;
    bool ok = r >= 0 && size_t(r) < vocab;
    if (!ok && threadIdx.x == 0) atomicExch(&g_device_error_flag, 1);
    const T *w = weight + (ok ? size_t(r) * d : 0);
    for (size_t j = threadIdx.x; j < d; j += blockDim.x) o[j] = ok ? w[j] : fromF<T>(0.f);
}

// One thread per (position, head, j < d/2) rotating the pair (j, j + d/2).
template <typename T>
__global__ void ropeKernel(T *out, const T *in, const int64_t *pos, size_t seq, size_t nhead, size_t d, float theta) {
    size_t half = d / 2, total = seq * nhead * half;
    for (size_t t = blockIdx.x * size_t(blockDim.x) + threadIdx.x; t < total; t += size_t(blockDim.x) * gridDim.x) {
        size_t j = t % half, sh = t / half, s = sh / nhead;
        // f64 angle like the CPU path: pos * freq in f32 loses digits for long sequences.
        double ang = double(pos[s]) / pow(double(theta), 2.0 * double(j) / double(d));
        double sn, cs;
        sincos(ang, &sn, &cs);
        size_t base = sh * d;
        float a = toF(in[base + j]), b = toF(in[base + j + half]);
        float c = float(cs), s_ = float(sn);
        out[base + j] = fromF<T>(a * c - b * s_);
        out[base + j + half] = fromF<T>(b * c + a * s_);
    }
}

} // namespace

void add(void *c, const void *a, const void *b, llaisysDataType_t dt, size_t n) {
    if (!n) return;
    dispatchCuda(dt, [&](auto tag) {
        using T = decltype(tag);
        addKernel<T><<<gridFor(n, 256), 256>>>(static_cast<T *>(c), static_cast<const T *>(a),
                                               static_cast<const T *>(b), n);
    });
    LLAISYS_CUDA_CHECK_LAUNCH("addKernel");
}

void swiglu(void *out, const void *gate, const void *up, llaisysDataType_t dt, size_t n) {
    if (!n) return;
    dispatchCuda(dt, [&](auto tag) {
        using T = decltype(tag);
        swigluKernel<T><<<gridFor(n, 256), 256>>>(static_cast<T *>(out), static_cast<const T *>(gate),
                                                  static_cast<const T *>(up), n);
    });
    LLAISYS_CUDA_CHECK_LAUNCH("swigluKernel");
}

void embedding(void *out, const int64_t *index, const void *weight, llaisysDataType_t dt, size_t n, size_t vocab,
               size_t d) {
    if (!n) return;
    checkedInt(n, "embedding rows");
    resetDeviceErrorFlag();
    dispatchCuda(dt, [&](auto tag) {
        using T = decltype(tag);
        embeddingKernel<T><<<unsigned(n), 256>>>(static_cast<T *>(out), index, static_cast<const T *>(weight),
                                                 vocab, d);
    });
    LLAISYS_CUDA_CHECK_LAUNCH("embeddingKernel");
    // Reading the flag synchronizes; it buys the same error the CPU path
    // raises instead of silently returning zero rows.
    if (readDeviceErrorFlag())
        fail(LLAISYS_ERROR_INVALID_ARGUMENT, "embedding: an index is out of range [0, ", vocab, ")");
}

void rope(void *out, const void *in, const int64_t *pos, llaisysDataType_t dt, size_t seq, size_t nhead, size_t d,
          float theta) {
    size_t total = seq * nhead * (d / 2);
    if (!total) return;
    dispatchCuda(dt, [&](auto tag) {
        using T = decltype(tag);
        ropeKernel<T><<<gridFor(total, 256), 256>>>(static_cast<T *>(out), static_cast<const T *>(in), pos, seq,
                                                    nhead, d, theta);
    });
    LLAISYS_CUDA_CHECK_LAUNCH("ropeKernel");
}

} // namespace llaisys::nvidia
