// Medium: per-row int8 quantisation and dequantisation (one dtype dispatch each).
#include <torch/extension.h>

#include "nvccload.h"

namespace {

template <typename T>
__global__ void quantize_rows(const T* x, int8_t* q, float* scale, int64_t cols) {
  __shared__ float red[128];
  float m = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += 128) m = fmaxf(m, fabsf(static_cast<float>(x[blockIdx.x * cols + c])));
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = 64; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  float sc = red[0] > 0.f ? red[0] / 127.f : 1.f;
  if (threadIdx.x == 0) scale[blockIdx.x] = sc;
  for (int64_t c = threadIdx.x; c < cols; c += 128)
    q[blockIdx.x * cols + c] = static_cast<int8_t>(rintf(static_cast<float>(x[blockIdx.x * cols + c]) / sc));
}

template <typename T>
__global__ void dequantize_rows(const int8_t* q, const float* scale, T* x, int64_t cols) {
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    x[blockIdx.x * cols + c] = static_cast<T>(q[blockIdx.x * cols + c] * scale[blockIdx.x]);
}

}  // namespace

std::vector<at::Tensor> quantize_fwd(const at::Tensor& x) {
  auto q = torch::empty(x.sizes(), x.options().dtype(torch::kChar));
  auto s = torch::empty({x.size(0)}, x.options().dtype(torch::kFloat));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "quantize", [&] {
    quantize_rows<scalar_t><<<static_cast<unsigned>(x.size(0)), 128>>>(
        x.data_ptr<scalar_t>(), q.data_ptr<int8_t>(), s.data_ptr<float>(), x.size(1));
  });
  return {q, s};
}

at::Tensor dequantize_fwd(const at::Tensor& q, const at::Tensor& s, at::ScalarType dtype) {
  auto x = torch::empty(q.sizes(), q.options().dtype(dtype));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "dequantize", [&] {
    dequantize_rows<scalar_t><<<static_cast<unsigned>(q.size(0)), 128>>>(
        q.data_ptr<int8_t>(), s.data_ptr<float>(), x.data_ptr<scalar_t>(), q.size(1));
  });
  return x;
}
