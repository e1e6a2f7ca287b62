// rms_norm.metal — y = x / sqrt(mean(x^2) + eps) * w, Metal port of kernels/cuda/rms_norm.cu.
//
// Self-contained (Metal Shading Language 2.4, Apple7+ GPUs: M1/M2/M3):
//   xcrun -sdk macosx metal -std=macos-metal2.4 -c kernels/metal/rms_norm.metal -o rms_norm.air
//   xcrun -sdk macosx metallib rms_norm.air -o apple-m1.metallib
//
// Entry points (same names as CUDA/HIP): rms_norm_f16, rms_norm_f32.
// Buffers: 0 x [rows, dim], 1 w [dim], 2 y [rows, dim] (may alias x),
//   3 int rows, 4 int dim, 5 float eps.
// Dispatch: threadgroups = (rows, 1, 1), 256 threads each (any multiple of 32
//   up to 1024). FP32 accumulation and scaling for both dtypes.
#include <metal_stdlib>
using namespace metal;

namespace gllm {

template <typename T>
inline void rms_norm(device const T* x, device const T* w, device T* y, int rows, int dim,
                     float eps, int row, int tid, int ntg, int lane, int warp, int nwarps,
                     threadgroup float* part) {
  if (row >= rows) return;  // whole threadgroup leaves together: no barrier hazard
  device const T* xr = x + ulong(row) * ulong(dim);
  device T* yr = y + ulong(row) * ulong(dim);
  float ss = 0.0f;
  for (int i = tid; i < dim; i += ntg) {
    const float a = float(xr[i]);
    ss = fma(a, a, ss);
  }
  // Block sum: SIMD-group sums, then SIMD-group 0 sums the partials.
  ss = simd_sum(ss);
  if (lane == 0) part[warp] = ss;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (warp == 0) {
    ss = lane < nwarps ? part[lane] : 0.0f;
    ss = simd_sum(ss);
    if (lane == 0) part[0] = ss;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const float r = rsqrt(part[0] / float(dim) + eps);
  for (int i = tid; i < dim; i += ntg) yr[i] = T(float(xr[i]) * r * float(w[i]));
}

}  // namespace gllm

#define GLLM_RMS_ENTRY(NAME, T)                                                         \
  kernel void NAME(device const T* x [[buffer(0)]], device const T* w [[buffer(1)]],    \
                   device T* y [[buffer(2)]], constant int& rows [[buffer(3)]],         \
                   constant int& dim [[buffer(4)]], constant float& eps [[buffer(5)]],  \
                   uint row [[threadgroup_position_in_grid]],                           \
                   uint tid [[thread_index_in_threadgroup]],                            \
                   uint ntg [[threads_per_threadgroup]],                                \
                   uint lane [[thread_index_in_simdgroup]],                             \
                   uint warp [[simdgroup_index_in_threadgroup]],                        \
                   uint nwarps [[simdgroups_per_threadgroup]]) {                        \
    threadgroup float part[32];                                                         \
    gllm::rms_norm<T>(x, w, y, rows, dim, eps, int(row), int(tid), int(ntg), int(lane), \
                      int(warp), int(nwarps), part);                                    \
  }

GLLM_RMS_ENTRY(rms_norm_f16, half)
GLLM_RMS_ENTRY(rms_norm_f32, float)
