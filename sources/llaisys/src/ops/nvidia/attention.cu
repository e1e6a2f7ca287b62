// Causal self-attention with grouped-query heads, single pass "online
// softmax" (flash-attention style) so any key length works without a score
// buffer.
//
// One block per (query position i, head h); its warps take keys j = warp,
// warp + W, ... Each warp keeps a running max m, normaliser l and an output
// accumulator (dv values spread over the lanes, at most kMaxAttentionDv), then
// the warps' partial results are merged in shared memory:
//   out = sum_w acc_w * e^(m_w - M) / sum_w l_w * e^(m_w - M),  M = max_w m_w.
#include "common.cuh"

namespace llaisys::nvidia {
namespace {

constexpr int kWarps = 8;
constexpr int kAccPerLane = int(kMaxAttentionDv / 32);

template <typename T>
__global__ __launch_bounds__(kWarps * 32) void attentionKernel(T *out, const T *q, const T *k, const T *v, int L,
                                                               int S, int H, int KVH, int D, int DV, float scale) {
    extern __shared__ float smem[];
    float *qs = smem;            // [D]   the query row in f32
    float *wm = qs + D;          // [kWarps] running max per warp
    float *wl = wm + kWarps;     // [kWarps] normaliser per warp
    float *wacc = wl + kWarps;   // [kWarps][DV] accumulators per warp

    const int h = blockIdx.x % H, i = blockIdx.x / H;
    const int kvh = h / (H / KVH); // grouped-query: H/KVH query heads share one kv head
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

    for (int t = threadIdx.x; t < D; t += blockDim.x) qs[t] = toF(q[(size_t(i) * H + h) * D + t]);
    __syncthreads();

    const int visible = i + (S - L) + 1; // causal mask aligned to the end of the keys
    float m = -INFINITY, l = 0.f, acc[kAccPerLane];
#pragma unroll
    for (int t = 0; t < kAccPerLane; ++t) acc[t] = 0.f;

    for (int j = warp; j < visible; j += kWarps) {
        const T *kr = k + (size_t(j) * KVH + kvh) * D;
        float dot = 0.f;
        for (int t = lane; t < D; t += 32) dot += qs[t] * toF(kr[t]);
        float s = warpSum(dot) * scale;
        float mn = fmaxf(m, s);
        float corr = expf(m - mn); // 0 on the first key (m = -inf)
        float p = expf(s - mn);
        l = l * corr + p;
        const T *vr = v + (size_t(j) * KVH + kvh) * DV;
#pragma unroll
        for (int t = 0; t < kAccPerLane; ++t) {
            int c = lane + 32 * t;
            if (c < DV) acc[t] = acc[t] * corr + p * toF(vr[c]);
        }
        m = mn;
    }

    if (lane == 0) { wm[warp] = m; wl[warp] = l; }
#pragma unroll
    for (int t = 0; t < kAccPerLane; ++t) {
        int c = lane + 32 * t;
        if (c < DV) wacc[warp * DV + c] = acc[t];
    }
    __syncthreads();

    float M = -INFINITY;
    for (int w = 0; w < kWarps; ++w) M = fmaxf(M, wm[w]);
    float denom = 0.f;
    for (int w = 0; w < kWarps; ++w) denom += wl[w] * expf(wm[w] - M); // idle warps: e^-inf = 0
    for (int c = threadIdx.x; c < DV; c += blockDim.x) {
        float o = 0.f;
        for (int w = 0; w < kWarps; ++w) o += wacc[w * DV + c] * expf(wm[w] - M);
        out[(size_t(i) * H + h) * DV + c] = fromF<T>(o / denom);
    }
}

} // namespace

void selfAttention(void *out, const void *q, const void *k, const void *v, llaisysDataType_t dt, size_t L, size_t S,
                   size_t nhead, size_t nkvhead, size_t d, size_t dv, float scale) {
    if (!L || !nhead || !dv) return;
    int blocks = checkedInt(L * nhead, "self_attention seqlen * nhead");
    int iL = checkedInt(L, "seqlen"), iS = checkedInt(S, "total_len");
    size_t smem = (d + 2 * kWarps + kWarps * dv) * sizeof(float);
    if (smem > 48 * 1024)
        fail(LLAISYS_ERROR_INVALID_ARGUMENT, "self_attention: head dim ", d, " / dv ", dv,
             " need more than 48 KiB of shared memory");
    dispatchCuda(dt, [&](auto tag) {
        using T = decltype(tag);
        attentionKernel<T><<<unsigned(blocks), kWarps * 32, smem>>>(
            static_cast<T *>(out), static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v), iL,
            iS, int(nhead), int(nkvhead), int(d), int(dv), scale);
    });
    LLAISYS_CUDA_CHECK_LAUNCH("attentionKernel");
}

} // namespace llaisys::nvidia
