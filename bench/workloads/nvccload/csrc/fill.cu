// Light: only <ATen/ATen.h> (no torch/extension.h, no pybind11): fill and arange.
#include <ATen/ATen.h>

#include "nvccload.h"

namespace {

__global__ void fill_kernel(float* y, float v, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) y[i] = v;
}
__global__ void arange_kernel(float* y, float start, float step, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = start + step * static_cast<float>(i);
}

}  // namespace

void fill_fwd(at::Tensor& y, double v) {
  TORCH_CHECK(y.scalar_type() == at::kFloat, "float32 only");
  fill_kernel<<<nvccload::grid_for(y.numel()), 256>>>(y.data_ptr<float>(), static_cast<float>(v), y.numel());
}

void arange_fwd(at::Tensor& y, double start, double step) {
  TORCH_CHECK(y.scalar_type() == at::kFloat, "float32 only");
  arange_kernel<<<nvccload::grid_for(y.numel()), 256>>>(y.data_ptr<float>(), static_cast<float>(start),
                                                         static_cast<float>(step), y.numel());
}
