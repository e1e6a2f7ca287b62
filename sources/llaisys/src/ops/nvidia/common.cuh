// Shared helpers of the CUDA kernels: f32 load/store for every element type,
// dtype -> CUDA type dispatch, warp/block reductions, grid sizing.
#pragma once

#include "../../device/nvidia/cuda_check.hpp"
#include "../kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>

namespace llaisys::nvidia {

__device__ __forceinline__ float toF(float v) { return v; }
__device__ __forceinline__ float toF(__half v) { return __half2float(v); }
__device__ __forceinline__ float toF(__nv_bfloat16 v) { return __bfloat162float(v); }

// Round-to-nearest-even, matching the CPU path (core/dtype.hpp) and torch.
template <typename T> __device__ __forceinline__ T fromF(float v);
template <> __device__ __forceinline__ float fromF<float>(float v) { return v; }
template <> __device__ __forceinline__ __half fromF<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 fromF<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Calls fn(T{}) with the CUDA element type of a float dtype (host side).
template <typename Fn> void dispatchCuda(llaisysDataType_t dt, Fn &&fn) {
    switch (dt) {
    case LLAISYS_DTYPE_F32: fn(float{}); return;
    case LLAISYS_DTYPE_F16: fn(__half{}); return;
    case LLAISYS_DTYPE_BF16: fn(__nv_bfloat16{}); return;
    default: fail(LLAISYS_ERROR_INVALID_ARGUMENT, "CUDA kernels support f32/f16/bf16 only, got dtype ", int(dt));
    }
}

// Sum over the 32 lanes; every lane gets the result (xor butterfly).
__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over a whole block (blockDim.x a multiple of 32, <= 1024); all threads
// get the result. `scratch` needs 32 floats of shared memory.
__device__ __forceinline__ float blockSum(float v, float *scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warpSum(v);
    __syncthreads(); // scratch may still be read by a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < nwarps ? scratch[lane] : 0.f;
    return warpSum(v);
}

// Blocks for a grid-stride loop over n items with `threads` per block.
inline unsigned gridFor(size_t n, unsigned threads) {
    size_t blocks = (n + threads - 1) / threads;
    return unsigned(std::max<size_t>(1, std::min<size_t>(blocks, 1u << 20)));
}

inline int checkedInt(size_t v, const char *what) {
    if (v > size_t(INT_MAX)) fail(LLAISYS_ERROR_INVALID_ARGUMENT, what, " = ", v, " exceeds the CUDA kernel limit");
    return int(v);
}

// Device-side error flag (defined in device_flags.cu; kernels in other
// translation units write it, so this relies on relocatable device code plus
// the device-link step of the build).
void resetDeviceErrorFlag();
int readDeviceErrorFlag(); // synchronizes with the default stream

} // namespace llaisys::nvidia
