// Light: only <ATen/ATen.h>: dtype casts between float, half and bfloat16.
#include <ATen/ATen.h>

#include "nvccload.h"

namespace {

template <typename S, typename D>
__global__ void cast_kernel(const S* x, D* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = static_cast<D>(static_cast<float>(x[i]));
}

template <typename S>
void to(const at::Tensor& x, at::Tensor& y) {
  auto g = nvccload::grid_for(x.numel());
  switch (y.scalar_type()) {
    case at::kFloat: cast_kernel<S, float><<<g, 256>>>(x.data_ptr<S>(), y.data_ptr<float>(), x.numel()); break;
    case at::kHalf: cast_kernel<S, at::Half><<<g, 256>>>(x.data_ptr<S>(), y.data_ptr<at::Half>(), x.numel()); break;
    case at::kBFloat16: cast_kernel<S, at::BFloat16><<<g, 256>>>(x.data_ptr<S>(), y.data_ptr<at::BFloat16>(), x.numel()); break;
    default: TORCH_CHECK(false, "unsupported target dtype");
  }
}

}  // namespace

void cast_fwd(const at::Tensor& x, at::Tensor& y) {
  switch (x.scalar_type()) {
    case at::kFloat: to<float>(x, y); break;
    case at::kHalf: to<at::Half>(x, y); break;
    case at::kBFloat16: to<at::BFloat16>(x, y); break;
    default: TORCH_CHECK(false, "unsupported source dtype");
  }
}
