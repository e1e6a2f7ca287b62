// rms_norm.hip — y = x / sqrt(mean(x^2) + eps) * w over the last dimension.
//
// HIP port of kernels/cuda/rms_norm.cu, kept line-for-line parallel (only the
// includes and shuffles differ). Self-contained:
//   HIP_PLATFORM=amd hipcc --genco --offload-arch=gfx1030 -O3 kernels/rocm/rms_norm.hip
// Any gfx9/gfx10/gfx11 target; wave32 or wave64 both work.
//
// Entry points (extern "C"):
//   rms_norm_f16(const __half* x, const __half* w, __half* y, int rows, int dim, float eps)
//   rms_norm_f32(const float*  x, const float*  w, float*  y, int rows, int dim, float eps)
//   x, y: [rows, dim] contiguous (y may alias x for in-place); w: [dim].
// Launch: grid = (rows, 1, 1), block = (256, 1, 1) — any multiple of 32 up to
//   1024 works; no dynamic shared memory.
//
// The sum of squares and the scaling are done in FP32 for both dtypes; the
// weight is applied in FP32 too (before the single rounding to the output
// dtype), which is slightly more accurate than casting x_hat to fp16 first.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

namespace {

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ void store(float* p, float x) { *p = x; }
__device__ __forceinline__ void store(__half* p, float x) { *p = __float2half_rn(x); }

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor(x, o, 32);
  return x;
}

// Sum over the whole block; every thread gets the result.
__device__ __forceinline__ float block_sum(float x) {
  __shared__ float part[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nwarps = (blockDim.x + 31) >> 5;
  x = warp_sum(x);
  if (lane == 0) part[warp] = x;
  __syncthreads();
  if (warp == 0) {
    x = lane < nwarps ? part[lane] : 0.f;
    x = warp_sum(x);
    if (lane == 0) part[0] = x;
  }
  __syncthreads();
  return part[0];
}

template <typename T>
__device__ __forceinline__ void rms_norm(const T* x, const T* __restrict__ w, T* y, int rows,
                                         int dim, float eps) {
  const int row = blockIdx.x;
  if (row >= rows) return;  // whole block leaves together: no barrier hazard
  const T* xr = x + (size_t)row * dim;
  T* yr = y + (size_t)row * dim;
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    const float a = to_f(xr[i]);
    ss = fmaf(a, a, ss);
  }
  const float r = rsqrtf(block_sum(ss) / (float)dim + eps);
  // block_sum ended with a barrier, so in-place (y == x) writes are safe.
  for (int i = threadIdx.x; i < dim; i += blockDim.x) store(&yr[i], to_f(xr[i]) * r * to_f(w[i]));
}

}  // namespace

extern "C" __global__ void __launch_bounds__(1024)
    rms_norm_f16(const __half* x, const __half* w, __half* y, int rows, int dim, float eps) {
  rms_norm<__half>(x, w, y, rows, dim, eps);
}

extern "C" __global__ void __launch_bounds__(1024)
    rms_norm_f32(const float* x, const float* w, float* y, int rows, int dim, float eps) {
  rms_norm<float>(x, w, y, rows, dim, eps);
}
