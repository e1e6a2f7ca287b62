// Heavy: a naive tiled attention (QK^T, masked softmax, PV) for several head sizes —
// the template-per-head-dim pattern of flash-attention, much smaller.
#include <torch/extension.h>

#include "nvccload.h"

namespace {

template <typename T, int HEAD, int TILE, bool CAUSAL>
__global__ void attn_kernel(const T* q, const T* k, const T* v, T* o, int64_t seq, float scale) {
  __shared__ float ks[TILE][HEAD];
  __shared__ float vs[TILE][HEAD];
  const int64_t bh = blockIdx.y;
  const int64_t qi = blockIdx.x * blockDim.x + threadIdx.x;
  const T* qb = q + bh * seq * HEAD;
  const T* kb = k + bh * seq * HEAD;
  const T* vb = v + bh * seq * HEAD;
  float acc[HEAD];
  float qr[HEAD];
#pragma unroll
  for (int d = 0; d < HEAD; ++d) {
    acc[d] = 0.f;
    qr[d] = qi < seq ? static_cast<float>(qb[qi * HEAD + d]) * scale : 0.f;
  }
  float m = -INFINITY, l = 0.f;
  for (int64_t t0 = 0; t0 < seq; t0 += TILE) {
    for (int i = threadIdx.x; i < TILE * HEAD; i += blockDim.x) {
      int64_t r = t0 + i / HEAD;
      ks[i / HEAD][i % HEAD] = r < seq ? static_cast<float>(kb[r * HEAD + i % HEAD]) : 0.f;
      vs[i / HEAD][i % HEAD] = r < seq ? static_cast<float>(vb[r * HEAD + i % HEAD]) : 0.f;
    }
    __syncthreads();
#pragma unroll 4
    for (int j = 0; j < TILE; ++j) {
      int64_t kj = t0 + j;
      if (kj >= seq || (CAUSAL && kj > qi)) break;
      float s = 0.f;
#pragma unroll
      for (int d = 0; d < HEAD; ++d) s += qr[d] * ks[j][d];
      float mn = fmaxf(m, s);
      float corr = __expf(m - mn), p = __expf(s - mn);
      l = l * corr + p;
#pragma unroll
      for (int d = 0; d < HEAD; ++d) acc[d] = acc[d] * corr + p * vs[j][d];
      m = mn;
    }
    __syncthreads();
  }
  if (qi < seq) {
#pragma unroll
    for (int d = 0; d < HEAD; ++d) o[bh * seq * HEAD + qi * HEAD + d] = static_cast<T>(acc[d] / l);
  }
}

template <typename T, bool CAUSAL>
void run(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& o) {
  const int64_t bh = q.size(0), seq = q.size(1), head = q.size(2);
  dim3 grid(nvccload::grid_for(seq, 64), static_cast<unsigned>(bh));
  const float scale = 1.f / sqrtf(static_cast<float>(head));
  auto* qp = q.data_ptr<T>();
  auto* kp = k.data_ptr<T>();
  auto* vp = v.data_ptr<T>();
  auto* op = o.data_ptr<T>();
  switch (head) {
    case 32: attn_kernel<T, 32, 32, CAUSAL><<<grid, 64>>>(qp, kp, vp, op, seq, scale); break;
    case 64: attn_kernel<T, 64, 32, CAUSAL><<<grid, 64>>>(qp, kp, vp, op, seq, scale); break;
    case 96: attn_kernel<T, 96, 16, CAUSAL><<<grid, 64>>>(qp, kp, vp, op, seq, scale); break;
    case 128: attn_kernel<T, 128, 16, CAUSAL><<<grid, 64>>>(qp, kp, vp, op, seq, scale); break;
    default: TORCH_CHECK(false, "head size ", head, " not compiled");
  }
}

}  // namespace

at::Tensor attention_fwd(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         bool causal) {
  TORCH_CHECK(q.dim() == 3 && q.sizes() == k.sizes() && q.sizes() == v.sizes(),
              "q, k, v: [batch*heads, seq, head]");
  auto o = torch::empty_like(q);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, q.scalar_type(), "attention", [&] {
    if (causal) run<scalar_t, true>(q, k, v, o);
    else run<scalar_t, false>(q, k, v, o);
  });
  return o;
}
