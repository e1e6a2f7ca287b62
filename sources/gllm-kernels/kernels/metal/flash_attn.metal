// flash_attn.metal — flash-attention forward, Metal port of kernels/cuda/flash_attn.cu.
//
// Self-contained (Metal Shading Language 2.4, Apple7+ GPUs: M1/M2/M3), e.g.
//   xcrun -sdk macosx metal -std=macos-metal2.4 -c kernels/metal/flash_attn.metal -o flash_attn.air
//   xcrun -sdk macosx metallib flash_attn.air -o apple-m1.metallib
//
// Same algorithm, tile sizes and entry-point names as the CUDA/HIP versions:
//   flash_attn_fwd_f16_d64   flash_attn_fwd_f16_d128
//   flash_attn_fwd_f32_d64   flash_attn_fwd_f32_d128
// Buffers: 0 q, 1 k, 2 v, 3 o (layouts as in the CUDA file: [batch, heads, seq, D],
//   k/v with heads_kv heads), 4 int batch, 5 int heads, 6 int heads_kv,
//   7 int seq_q, 8 int seq_k, 9 float scale, 10 int causal (bottom-right aligned).
// Dispatch: threadgroups = (ceil(seq_q / 16), heads, batch), 128 threads each
//   (4 SIMD-groups of 32). A "warp" below is a SIMD-group.
//
// One deliberate difference: Apple GPUs give a threadgroup 32 KiB, so K and V
// share one tile buffer (K, barrier, scores, barrier, V, barrier, P.V):
// D=128 uses 8 KiB (Q) + 16.1 KiB (K/V) instead of the 40.5 KiB on CUDA.
#include <metal_stdlib>
using namespace metal;

enum : int {
  kWarps = 4,                  // SIMD-groups per threadgroup
  kRows = 4,                   // query rows per SIMD-group
  kBlockM = kWarps * kRows,    // 16 query rows per threadgroup
  kBlockN = 32,                // keys per tile == lanes per SIMD-group
  kThreads = kWarps * 32,
};

namespace gllm {

// Metal compiles with fast math by default; clamp so exp2 of the finite
// "-infinity" sentinel is a clean 0 rather than whatever the fast path gives.
inline float fexp2(float x) { return exp2(max(x, -127.0f)); }

template <typename T, int D>
inline void flash_attn_fwd(device const T* q, device const T* k, device const T* v,
                           device T* o, int heads, int heads_kv, int seq_q, int seq_k,
                           float scale, bool causal, uint3 tgid, int tid, int lane, int warp,
                           threadgroup float4* Qs4, threadgroup float* KVs) {
  const int kDpl = D / 32;          // output columns owned by each lane
  const int kKStride = D + 1;       // padded K rows: lane j reads row j bank-conflict free
  const float kNeg = -1.0e30f;      // finite "minus infinity"
  const float kLog2e = 1.4426950408889634f;
  threadgroup float* Qs = (threadgroup float*)Qs4;

  const int q0 = int(tgid.x) * kBlockM;
  const int h = int(tgid.y), b = int(tgid.z);
  const int hk = h / (heads / heads_kv);
  const ulong qbase = (ulong(b) * ulong(heads) + ulong(h)) * ulong(seq_q) * ulong(D);
  const ulong kbase = (ulong(b) * ulong(heads_kv) + ulong(hk)) * ulong(seq_k) * ulong(D);
  const int off = seq_k - seq_q;

  const float qs = scale * kLog2e;
  for (int i = tid; i < kBlockM * D; i += kThreads) {
    const int r = i / D, c = i % D, qi = q0 + r;
    Qs[i] = qi < seq_q ? float(q[qbase + ulong(qi) * D + c]) * qs : 0.0f;
  }

  float m[kRows], l[kRows], acc[kRows][kDpl];
  for (int r = 0; r < kRows; ++r) {
    m[r] = kNeg;
    l[r] = 0.0f;
    for (int i = 0; i < kDpl; ++i) acc[r][i] = 0.0f;
  }

  const int kend = causal ? min(seq_k, q0 + kBlockM + off) : seq_k;
  for (int k0 = 0; k0 < kend; k0 += kBlockN) {
    threadgroup_barrier(mem_flags::mem_threadgroup);  // previous V tile consumed
    for (int i = tid; i < kBlockN * D; i += kThreads) {
      const int r = i / D, c = i % D, j = k0 + r;
      KVs[r * kKStride + c] = j < seq_k ? float(k[kbase + ulong(j) * D + c]) : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    float s[kRows];
    for (int r = 0; r < kRows; ++r) s[r] = 0.0f;
    for (int c = 0; c < D; c += 4) {
      threadgroup const float* kr = KVs + lane * kKStride + c;
      const float k_0 = kr[0], k_1 = kr[1], k_2 = kr[2], k_3 = kr[3];
      for (int r = 0; r < kRows; ++r) {
        const float4 qv = Qs4[((warp * kRows + r) * D + c) / 4];
        s[r] = fma(qv.x, k_0, fma(qv.y, k_1, fma(qv.z, k_2, fma(qv.w, k_3, s[r]))));
      }
    }

    const int j = k0 + lane;
    for (int r = 0; r < kRows; ++r) {
      const int qi = q0 + warp * kRows + r;
      const bool ok = j < seq_k && (!causal || j <= qi + off);
      const float sr = ok ? s[r] : kNeg;
      const float mn = max(m[r], simd_max(sr));
      const float p = ok ? fexp2(sr - mn) : 0.0f;
      const float alpha = fexp2(m[r] - mn);
      l[r] = l[r] * alpha + simd_sum(p);
      m[r] = mn;
      for (int i = 0; i < kDpl; ++i) acc[r][i] *= alpha;
      s[r] = p;
    }

    threadgroup_barrier(mem_flags::mem_threadgroup);  // all SIMD-groups done with K
    for (int i = tid; i < kBlockN * D; i += kThreads) {
      const int r = i / D, c = i % D, jv = k0 + r;
      KVs[i] = jv < seq_k ? float(v[kbase + ulong(jv) * D + c]) : 0.0f;  // V rows: stride D
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (int jj = 0; jj < kBlockN; ++jj) {
      float vv[kDpl];
      for (int i = 0; i < kDpl; ++i) vv[i] = KVs[jj * D + lane + 32 * i];
      for (int r = 0; r < kRows; ++r) {
        const float pj = simd_shuffle(s[r], ushort(jj));
        for (int i = 0; i < kDpl; ++i) acc[r][i] = fma(pj, vv[i], acc[r][i]);
      }
    }
  }

  for (int r = 0; r < kRows; ++r) {
    const int qi = q0 + warp * kRows + r;
    if (qi >= seq_q) continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    device T* orow = o + qbase + ulong(qi) * D;
    for (int i = 0; i < kDpl; ++i) orow[lane + 32 * i] = T(acc[r][i] * inv);
  }
}

}  // namespace gllm

// Threadgroup memory may only be declared in kernel scope, so each entry point
// owns its tiles and hands them to the shared template body.
#define GLLM_FLASH_ENTRY(NAME, T, D)                                                      \
  kernel void NAME(device const T* q [[buffer(0)]], device const T* k [[buffer(1)]],      \
                   device const T* v [[buffer(2)]], device T* o [[buffer(3)]],            \
                   constant int& batch [[buffer(4)]], constant int& heads [[buffer(5)]],  \
                   constant int& heads_kv [[buffer(6)]], constant int& seq_q [[buffer(7)]], \
                   constant int& seq_k [[buffer(8)]], constant float& scale [[buffer(9)]], \
                   constant int& causal [[buffer(10)]],                                   \
                   uint3 tgid [[threadgroup_position_in_grid]],                           \
                   uint tid [[thread_index_in_threadgroup]],                              \
                   uint lane [[thread_index_in_simdgroup]],                               \
                   uint warp [[simdgroup_index_in_threadgroup]]) {                        \
    threadgroup float4 Qs4[kBlockM * D / 4];                                              \
    threadgroup float KVs[kBlockN * (D + 1)];                                             \
    (void)batch; /* implied by the grid; kept so every backend has the same signature */  \
    gllm::flash_attn_fwd<T, D>(q, k, v, o, heads, heads_kv, seq_q, seq_k, scale,          \
                               causal != 0, tgid, int(tid), int(lane), int(warp), Qs4,    \
                               KVs);                                                      \
  }

GLLM_FLASH_ENTRY(flash_attn_fwd_f16_d64, half, 64)
GLLM_FLASH_ENTRY(flash_attn_fwd_f16_d128, half, 128)
GLLM_FLASH_ENTRY(flash_attn_fwd_f32_d64, float, 64)
GLLM_FLASH_ENTRY(flash_attn_fwd_f32_d128, float, 128)
