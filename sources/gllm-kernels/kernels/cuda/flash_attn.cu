// flash_attn.cu — flash-attention forward (online softmax, tiled over keys).
//
// Self-contained: compiled on its own per arch, e.g.
//   nvcc -ptx -arch=sm_80 -O3 --use_fast_math kernels/cuda/flash_attn.cu -o sm_80.ptx
// Needs nothing newer than sm_75 (plain FP32 FMA + warp shuffles, no tensor
// cores), so the same source serves every arch from Turing to Hopper.
//
// Entry points (extern "C", one per dtype x head_dim):
//   flash_attn_fwd_f16_d64   flash_attn_fwd_f16_d128
//   flash_attn_fwd_f32_d64   flash_attn_fwd_f32_d128
// Arguments (all entry points):
//   const T* q    [batch, heads,    seq_q, D]  contiguous
//   const T* k    [batch, heads_kv, seq_k, D]  contiguous
//   const T* v    [batch, heads_kv, seq_k, D]  contiguous
//   T*       o    [batch, heads,    seq_q, D]  contiguous
//   int batch, int heads, int heads_kv (heads % heads_kv == 0: GQA/MQA),
//   int seq_q, int seq_k, float scale (softmax scale, usually 1/sqrt(D)),
//   int causal (0/1). Causal masking is bottom-right aligned: query i sees
//   keys j <= i + (seq_k - seq_q); with seq_q == seq_k this is the usual
//   lower-triangular mask, with seq_q < seq_k it is KV-cache decoding.
//   Query rows that see no key at all (only if seq_q > seq_k) are written as 0.
// Launch: block = (128, 1, 1), grid = (ceil(seq_q / 16), heads, batch),
//   no dynamic shared memory (static: 40.5 KiB at D=128, under the 48 KiB limit).
//
// Algorithm: a block owns 16 query rows of one (batch, head); each of its 4
// warps owns 4 rows. Keys are walked in tiles of 32 (one key per lane):
// lane j computes the 4 scores q_r . k_j, the warp reduces max/sum for the
// online softmax, then the probabilities are broadcast by shuffle and every
// lane accumulates D/32 output columns. All math is FP32 (fp16 is converted on
// load), scores live in the log2 domain so exp2 is a single instruction.
// No infinities are used anywhere (a finite sentinel + explicit masking), so
// the kernel stays correct under fast-math / finite-math flags.
#include <cuda_fp16.h>

namespace {

constexpr int kWarps = 4;                // warps per block
constexpr int kRows = 4;                 // query rows per warp
constexpr int kBlockM = kWarps * kRows;  // 16 query rows per block
constexpr int kBlockN = 32;              // keys per tile == lanes per warp
constexpr int kThreads = kWarps * 32;
constexpr float kNeg = -1.0e30f;         // finite "minus infinity"
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ void store(float* p, float x) { *p = x; }
__device__ __forceinline__ void store(__half* p, float x) { *p = __float2half_rn(x); }

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

template <typename T, int D>
__device__ __forceinline__ void flash_attn_fwd(const T* __restrict__ q, const T* __restrict__ k,
                                               const T* __restrict__ v, T* __restrict__ o,
                                               int heads, int heads_kv, int seq_q, int seq_k,
                                               float scale, int causal) {
  static_assert(D % 32 == 0, "head_dim must be a multiple of 32");
  constexpr int kDpl = D / 32;  // output columns owned by each lane
  // Qs rows are read as float4 broadcasts; Ks is padded by one float so that
  // lane j reading Ks[j][c] hits 32 distinct banks; Vs is read row-wise.
  __shared__ __align__(16) float Qs[kBlockM][D];
  __shared__ float Ks[kBlockN][D + 1];
  __shared__ float Vs[kBlockN][D];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int q0 = blockIdx.x * kBlockM;
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (heads / heads_kv);
  const size_t qbase = ((size_t)b * heads + h) * (size_t)seq_q * D;
  const size_t kbase = ((size_t)b * heads_kv + hk) * (size_t)seq_k * D;
  const int off = seq_k - seq_q;  // bottom-right causal alignment

  // Q tile, pre-multiplied by scale*log2(e); rows past seq_q are zero.
  const float qs = scale * kLog2e;
  for (int i = tid; i < kBlockM * D; i += kThreads) {
    const int r = i / D, c = i % D, qi = q0 + r;
    Qs[r][c] = qi < seq_q ? to_f(q[qbase + (size_t)qi * D + c]) * qs : 0.f;
  }

  float m[kRows], l[kRows], acc[kRows][kDpl];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    m[r] = kNeg;
    l[r] = 0.f;
#pragma unroll
    for (int i = 0; i < kDpl; ++i) acc[r][i] = 0.f;
  }

  // With causal masking no row of this block sees keys at or past kend.
  const int kend = causal ? min(seq_k, q0 + kBlockM + off) : seq_k;
  for (int k0 = 0; k0 < kend; k0 += kBlockN) {
    __syncthreads();  // previous tile fully consumed (first pass: Qs written)
    for (int i = tid; i < kBlockN * D; i += kThreads) {
      const int r = i / D, c = i % D, j = k0 + r;
      const bool ok = j < seq_k;
      Ks[r][c] = ok ? to_f(k[kbase + (size_t)j * D + c]) : 0.f;
      Vs[r][c] = ok ? to_f(v[kbase + (size_t)j * D + c]) : 0.f;
    }
    __syncthreads();

    // Scores: lane owns key j = k0 + lane, for the warp's kRows query rows.
    float s[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) s[r] = 0.f;
#pragma unroll 4
    for (int c = 0; c < D; c += 4) {
      const float k_0 = Ks[lane][c], k_1 = Ks[lane][c + 1];
      const float k_2 = Ks[lane][c + 2], k_3 = Ks[lane][c + 3];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const float4 qv = *reinterpret_cast<const float4*>(&Qs[warp * kRows + r][c]);
        s[r] = fmaf(qv.x, k_0, fmaf(qv.y, k_1, fmaf(qv.z, k_2, fmaf(qv.w, k_3, s[r]))));
      }
    }

    // Online softmax update; s[r] becomes the (unnormalised) probability.
    const int j = k0 + lane;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int qi = q0 + warp * kRows + r;
      const bool ok = j < seq_k && (!causal || j <= qi + off);
      const float sr = ok ? s[r] : kNeg;
      const float mn = fmaxf(m[r], warp_max(sr));
      const float p = ok ? exp2f(sr - mn) : 0.f;
      const float alpha = exp2f(m[r] - mn);  // 0 when m was the sentinel
      l[r] = l[r] * alpha + warp_sum(p);
      m[r] = mn;
#pragma unroll
      for (int i = 0; i < kDpl; ++i) acc[r][i] *= alpha;
      s[r] = p;
    }

    // acc += P . V: broadcast p_j from lane j, each lane owns kDpl columns.
#pragma unroll 4
    for (int jj = 0; jj < kBlockN; ++jj) {
      float vv[kDpl];
#pragma unroll
      for (int i = 0; i < kDpl; ++i) vv[i] = Vs[jj][lane + 32 * i];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const float pj = __shfl_sync(0xffffffffu, s[r], jj);
#pragma unroll
        for (int i = 0; i < kDpl; ++i) acc[r][i] = fmaf(pj, vv[i], acc[r][i]);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int qi = q0 + warp * kRows + r;
    if (qi >= seq_q) continue;
    const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
    T* orow = o + qbase + (size_t)qi * D;
#pragma unroll
    for (int i = 0; i < kDpl; ++i) store(&orow[lane + 32 * i], acc[r][i] * inv);
  }
}

}  // namespace

#define GLLM_FLASH_ENTRY(NAME, T, D)                                                        \
  extern "C" __global__ void __launch_bounds__(kThreads)                                    \
      NAME(const T* q, const T* k, const T* v, T* o, int batch, int heads, int heads_kv,    \
           int seq_q, int seq_k, float scale, int causal) {                                 \
    (void)batch; /* implied by gridDim.z; kept so every backend has the same signature */ \
    flash_attn_fwd<T, D>(q, k, v, o, heads, heads_kv, seq_q, seq_k, scale, causal);         \
  }

GLLM_FLASH_ENTRY(flash_attn_fwd_f16_d64, __half, 64)
GLLM_FLASH_ENTRY(flash_attn_fwd_f16_d128, __half, 128)
GLLM_FLASH_ENTRY(flash_attn_fwd_f32_d64, float, 64)
GLLM_FLASH_ENTRY(flash_attn_fwd_f32_d128, float, 128)
