// argmax and rms_norm CUDA kernels (block reductions accumulated in f32).
#include "common.cuh"

#include <cmath>

namespace llaisys::nvidia {
namespace {

// (value, index) pair order for argmax: larger value wins, ties go to the
// smaller index so the result matches torch.argmax (first maximum).
__device__ __forceinline__ void argmaxCombine(float &bv, size_t &bi, float ov, size_t oi) {
    if (ov > bv || (ov == bv && oi < bi)) { bv = ov; bi = oi; }
}

// A single block scans the vector (vocab-sized, so one block of 1024 threads
// keeps it simple and still saturates bandwidth for logits-sized inputs).
template <typename T>
__global__ void argmaxKernel(int64_t *max_idx, T *max_val, const T *vals, size_t n) {
    __shared__ float sv[32];
    __shared__ size_t si[32];
    float bv = -INFINITY;
    size_t bi = n; // sentinel: loses every tie against a real index
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) argmaxCombine(bv, bi, toF(vals[i]), i);
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        size_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
        argmaxCombine(bv, bi, ov, oi);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { sv[warp] = bv; si[warp] = bi; }
    __syncthreads();
    if (warp == 0) {
        int nwarps = blockDim.x >> 5;
        bv = lane < nwarps ? sv[lane] : -INFINITY;
        bi = lane < nwarps ? si[lane] : n;
        for (int o = 16; o > 0; o >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            size_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
            argmaxCombine(bv, bi, ov, oi);
        }
        if (lane == 0) {
            if (bi >= n) bi = 0; // only NaNs: report index 0, like a scan that never updates
            *max_idx = int64_t(bi);
            *max_val = vals[bi]; // exact copy, no f32 round trip
        }
    }
}

// One block per row: sum of squares -> 1/rms -> scaled output.
template <typename T>
__global__ void rmsNormKernel(T *out, const T *in, const T *weight, size_t d, float eps) {
    __shared__ float scratch[32];
    const T *x = in + blockIdx.x * d;
    T *y = out + blockIdx.x * d;
    float ss = 0.f;
    for (size_t j = threadIdx.x; j < d; j += blockDim.x) {
        float v = toF(x[j]);
        ss += v * v;
    }
    ss = blockSum(ss, scratch);
    float inv = 1.f / sqrtf(ss / float(d) + eps);
    for (size_t j = threadIdx.x; j < d; j += blockDim.x) y[j] = fromF<T>(toF(x[j]) * inv * toF(weight[j]));
}

} // namespace

void argmax(int64_t *max_idx, void *max_val, const void *vals, llaisysDataType_t dt, size_t n) {
    dispatchCuda(dt, [&](auto tag) {
        using T = decltype(tag);
        argmaxKernel<T><<<1, 1024>>>(max_idx, static_cast<T *>(max_val), static_cast<const T *>(vals), n);
    });
    LLAISYS_CUDA_CHECK_LAUNCH("argmaxKernel");
}

void rmsNorm(void *out, const void *in, const void *weight, llaisysDataType_t dt, size_t rows, size_t d, float eps) {
    if (!rows) return;
    checkedInt(rows, "rms_norm rows");
    // Fewer threads for short rows so most lanes have work; always whole warps.
    unsigned threads = unsigned(std::min<size_t>(1024, std::max<size_t>(32, (d + 31) / 32 * 32)));
    dispatchCuda(dt, [&](auto tag) {
        using T = decltype(tag);
        rmsNormKernel<T><<<unsigned(rows), threads>>>(static_cast<T *>(out), static_cast<const T *>(in),
                                                      static_cast<const T *>(weight), d, eps);
    });
    LLAISYS_CUDA_CHECK_LAUNCH("rmsNormKernel");
}

} // namespace llaisys::nvidia
