// rotary.metal — rotary position embedding (rotate-half / GPT-NeoX style),
// Metal port of kernels/cuda/rotary.cu.
//
// Self-contained (Metal Shading Language 2.4, Apple7+ GPUs: M1/M2/M3):
//   xcrun -sdk macosx metal -std=macos-metal2.4 -c kernels/metal/rotary.metal -o rotary.air
//   xcrun -sdk macosx metallib rotary.air -o apple-m1.metallib
//
// Same formula as CUDA: pairs (i, i + D/2), inv_freq_i = theta^(-2i/D),
//   y[i] = x[i] cos a - x[i+D/2] sin a,  y[i+D/2] = x[i+D/2] cos a + x[i] sin a.
// Entry points: rotary_f16, rotary_f32.
// Buffers: 0 x [batch, heads, seq, head_dim], 1 int positions, 2 y (may alias x),
//   3 int batch, 4 int heads, 5 int seq, 6 int head_dim, 7 int pos_batch_stride
//   (seq for [batch, seq] positions, 0 for one shared [seq] vector), 8 float theta.
// Dispatch: batch * seq * head_dim/2 threads (one per (b, s, i), looping over
//   heads), e.g. threadgroups of 256; excess threads return.
//
// Accuracy difference from CUDA/HIP: Metal has no FP64, so the angle is an FP32
// product (error ~ position * 6e-8 rad, the same as an FP32 PyTorch reference)
// and precise::sin/cos do the range reduction (the default fast sin/cos are
// only accurate near [-pi, pi]).
#include <metal_stdlib>
using namespace metal;

namespace gllm {

template <typename T>
inline void rotary(device const T* x, device const int* positions, device T* y, int batch,
                   int heads, int seq, int head_dim, int pos_batch_stride, float theta,
                   uint gid) {
  const int half_dim = head_dim >> 1;
  if (ulong(gid) >= ulong(batch) * ulong(seq) * ulong(half_dim)) return;
  const int i = int(gid % uint(half_dim));
  const uint t = gid / uint(half_dim);
  const int s = int(t % uint(seq)), b = int(t / uint(seq));

  const float inv_freq = precise::exp2(-(2.0f * float(i) / float(head_dim)) * precise::log2(theta));
  const float ang = float(positions[ulong(b) * ulong(pos_batch_stride) + ulong(s)]) * inv_freq;
  const float sn = precise::sin(ang), cs = precise::cos(ang);

  for (int h = 0; h < heads; ++h) {
    const ulong base = ((ulong(b) * ulong(heads) + ulong(h)) * ulong(seq) + ulong(s)) * ulong(head_dim);
    const float x1 = float(x[base + i]), x2 = float(x[base + i + half_dim]);
    y[base + i] = T(x1 * cs - x2 * sn);
    y[base + i + half_dim] = T(x2 * cs + x1 * sn);
  }
}

}  // namespace gllm

#define GLLM_ROTARY_ENTRY(NAME, T)                                                        \
  kernel void NAME(device const T* x [[buffer(0)]], device const int* positions [[buffer(1)]], \
                   device T* y [[buffer(2)]], constant int& batch [[buffer(3)]],          \
                   constant int& heads [[buffer(4)]], constant int& seq [[buffer(5)]],    \
                   constant int& head_dim [[buffer(6)]],                                  \
                   constant int& pos_batch_stride [[buffer(7)]],                          \
                   constant float& theta [[buffer(8)]],                                   \
                   uint gid [[thread_position_in_grid]]) {                                \
    gllm::rotary<T>(x, positions, y, batch, heads, seq, head_dim, pos_batch_stride, theta, gid); \
  }

GLLM_ROTARY_ENTRY(rotary_f16, half)
GLLM_ROTARY_ENTRY(rotary_f32, float)
