// rotary.cu — rotary position embedding, rotate-half (GPT-NeoX / HF Llama) style.
//
// Self-contained: nvcc -ptx -arch=sm_XY -O3 --use_fast_math kernels/cuda/rotary.cu
// Needs nothing newer than sm_75.
//
// For each head vector x[0:D] and i in [0, D/2), with
//   inv_freq_i = theta^(-2i/D),  a = position * inv_freq_i:
//   y[i]       = x[i]       * cos(a) - x[i + D/2] * sin(a)
//   y[i + D/2] = x[i + D/2] * cos(a) + x[i]       * sin(a)
// (rotate-half pairs element i with i + D/2, not 2i with 2i+1.)
// cos/sin are computed in-kernel from the positions; no tables.
//
// Entry points (extern "C"):
//   rotary_f16(const __half* x, const int* positions, __half* y, int batch, int heads,
//              int seq, int head_dim, int pos_batch_stride, float theta)
//   rotary_f32(const float*  x, const int* positions, float*  y, ...same...)
//   x, y: [batch, heads, seq, head_dim] contiguous (y may alias x: in-place);
//   head_dim even; positions: int32, position of (b, s) is
//   positions[b * pos_batch_stride + s] (stride = seq for [batch, seq],
//   0 for one [seq] vector shared by the batch).
// Launch: block = (256, 1, 1), grid = (ceil(batch * seq * head_dim/2 / 256), 1, 1).
//   One thread per (b, s, i) loops over the heads, so the angle is computed
//   once and reused heads times.
//
// Accuracy: the angle grows to position * 1 radian, so an FP32 angle would
// already carry ~pos * 6e-8 rad of error, and --use_fast_math turns sincosf
// into __sincosf whose error explodes outside [-pi, pi]. So inv_freq, the
// angle and its reduction to [-pi, pi] are done in FP64 (a few DP ops per
// thread, amortised over all heads) and only the reduced angle goes to sincosf.
#include <cuda_fp16.h>

namespace {

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ void store(float* p, float x) { *p = x; }
__device__ __forceinline__ void store(__half* p, float x) { *p = __float2half_rn(x); }

template <typename T>
__device__ __forceinline__ void rotary(const T* x, const int* __restrict__ positions, T* y,
                                       int batch, int heads, int seq, int head_dim,
                                       int pos_batch_stride, float theta) {
  const int half_dim = head_dim >> 1;
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (long long)batch * seq * half_dim) return;
  const int i = (int)(idx % half_dim);
  const long long t = idx / half_dim;
  const int s = (int)(t % seq), b = (int)(t / seq);

  const double inv_freq = exp2(-(2.0 * i / head_dim) * log2((double)theta));
  const double ang = (double)positions[(size_t)b * pos_batch_stride + s] * inv_freq;
  const double two_pi = 6.283185307179586476925286766559;
  const float red = (float)(ang - rint(ang * (1.0 / two_pi)) * two_pi);  // in [-pi, pi]
  float sn, cs;
  sincosf(red, &sn, &cs);

  for (int h = 0; h < heads; ++h) {
    const size_t base = (((size_t)b * heads + h) * seq + s) * head_dim;
    const float x1 = to_f(x[base + i]), x2 = to_f(x[base + i + half_dim]);
    // Each element is read and written by this thread only: in-place is safe.
    store(&y[base + i], x1 * cs - x2 * sn);
    store(&y[base + i + half_dim], x2 * cs + x1 * sn);
  }
}

}  // namespace

extern "C" __global__ void rotary_f16(const __half* x, const int* positions, __half* y, int batch,
                                      int heads, int seq, int head_dim, int pos_batch_stride,
                                      float theta) {
  rotary<__half>(x, positions, y, batch, heads, seq, head_dim, pos_batch_stride, theta);
}

extern "C" __global__ void rotary_f32(const float* x, const int* positions, float* y, int batch,
                                      int heads, int seq, int head_dim, int pos_batch_stride,
                                      float theta) {
  rotary<float>(x, positions, y, batch, heads, seq, head_dim, pos_batch_stride, theta);
}
