// Heavy: rotary position embedding (interleaved and half-split), in place and out of place.
#include <torch/extension.h>

#include "nvccload.h"

namespace {

template <typename T, bool INTERLEAVED>
__global__ void rotary_kernel(const T* x, const float* cos, const float* sin, T* y,
                              int64_t tokens, int64_t heads, int64_t dim) {
  const int64_t half = dim / 2;
  const int64_t n = tokens * heads * half;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t p = i % half, th = i / half, t = th / heads;
    int64_t a = INTERLEAVED ? 2 * p : p, b = INTERLEAVED ? 2 * p + 1 : p + half;
    float c = cos[t * half + p], s = sin[t * half + p];
    float x0 = static_cast<float>(x[th * dim + a]), x1 = static_cast<float>(x[th * dim + b]);
    y[th * dim + a] = static_cast<T>(x0 * c - x1 * s);
    y[th * dim + b] = static_cast<T>(x0 * s + x1 * c);
  }
}

template <bool INTERLEAVED>
void apply(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, at::Tensor& y) {
  const int64_t tokens = x.size(0), heads = x.size(1), dim = x.size(2);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "rotary", [&] {
    rotary_kernel<scalar_t, INTERLEAVED><<<nvccload::grid_for(tokens * heads * dim / 2), 256>>>(
        x.data_ptr<scalar_t>(), cos.data_ptr<float>(), sin.data_ptr<float>(),
        y.data_ptr<scalar_t>(), tokens, heads, dim);
  });
}

}  // namespace

at::Tensor rotary_fwd(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                      bool interleaved) {
  TORCH_CHECK(x.dim() == 3 && x.size(2) % 2 == 0, "x: [tokens, heads, even dim]");
  auto y = torch::empty_like(x);
  if (interleaved) apply<true>(x, cos, sin, y);
  else apply<false>(x, cos, sin, y);
  return y;
}

void rotary_inplace(at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                    bool interleaved) {
  if (interleaved) apply<true>(x, cos, sin, x);
  else apply<false>(x, cos, sin, x);
}
