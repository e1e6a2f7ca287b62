// Heavy: LayerNorm and RMSNorm forward + backward, float/half/bfloat16, warp reductions.
#include <torch/extension.h>

#include "nvccload.h"

namespace {

template <typename T>
__device__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T, bool RMS>
__global__ void norm_fwd(const T* x, const T* w, const T* b, T* y, float* mean, float* rstd,
                         int64_t cols, float eps) {
  const int64_t row = blockIdx.x;
  const T* xr = x + row * cols;
  float s = 0.f, s2 = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = static_cast<float>(xr[c]);
    s += v;
    s2 += v * v;
  }
  s = warp_sum(s);
  s2 = warp_sum(s2);
  float mu = RMS ? 0.f : s / cols;
  float var = s2 / cols - mu * mu;
  float r = rsqrtf(var + eps);
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = r;
  }
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = (static_cast<float>(xr[c]) - mu) * r * static_cast<float>(w[c]);
    if (!RMS) v += static_cast<float>(b[c]);
    y[row * cols + c] = static_cast<T>(v);
  }
}

template <typename T, bool RMS>
__global__ void norm_bwd(const T* dy, const T* x, const T* w, const float* mean,
                         const float* rstd, T* dx, int64_t cols) {
  const int64_t row = blockIdx.x;
  float a = 0.f, b = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float xh = (static_cast<float>(x[row * cols + c]) - mean[row]) * rstd[row];
    float g = static_cast<float>(dy[row * cols + c]) * static_cast<float>(w[c]);
    a += g;
    b += g * xh;
  }
  a = warp_sum(a) / cols;
  b = warp_sum(b) / cols;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float xh = (static_cast<float>(x[row * cols + c]) - mean[row]) * rstd[row];
    float g = static_cast<float>(dy[row * cols + c]) * static_cast<float>(w[c]);
    float d = RMS ? (g - xh * b) * rstd[row] : (g - a - xh * b) * rstd[row];
    dx[row * cols + c] = static_cast<T>(d);
  }
}

template <bool RMS>
std::vector<at::Tensor> forward(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                                double eps) {
  TORCH_CHECK(x.dim() == 2, "x must be 2-D");
  auto y = torch::empty_like(x);
  auto opts = x.options().dtype(torch::kFloat);
  auto mean = torch::empty({x.size(0)}, opts);
  auto rstd = torch::empty({x.size(0)}, opts);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "norm_fwd", [&] {
    norm_fwd<scalar_t, RMS><<<static_cast<unsigned>(x.size(0)), 32>>>(
        x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), RMS ? nullptr : b.data_ptr<scalar_t>(),
        y.data_ptr<scalar_t>(), mean.data_ptr<float>(), rstd.data_ptr<float>(), x.size(1),
        static_cast<float>(eps));
  });
  return {y, mean, rstd};
}

template <bool RMS>
at::Tensor backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& w,
                    const at::Tensor& mean, const at::Tensor& rstd) {
  auto dx = torch::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "norm_bwd", [&] {
    norm_bwd<scalar_t, RMS><<<static_cast<unsigned>(x.size(0)), 32>>>(
        dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
        mean.data_ptr<float>(), rstd.data_ptr<float>(), dx.data_ptr<scalar_t>(), x.size(1));
  });
  return dx;
}

}  // namespace

std::vector<at::Tensor> layernorm_fwd(const at::Tensor& x, const at::Tensor& w,
                                      const at::Tensor& b, double eps) {
  return forward<false>(x, w, b, eps);
}
std::vector<at::Tensor> rmsnorm_fwd(const at::Tensor& x, const at::Tensor& w, double eps) {
  return forward<true>(x, w, w, eps);
}
at::Tensor layernorm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& w,
                         const at::Tensor& mean, const at::Tensor& rstd) {
  return backward<false>(dy, x, w, mean, rstd);
}
at::Tensor rmsnorm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& w,
                       const at::Tensor& mean, const at::Tensor& rstd) {
  return backward<true>(dy, x, w, mean, rstd);
}
