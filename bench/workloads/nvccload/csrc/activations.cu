// Heavy: elementwise activations as functors (GELU tanh/erf, SiLU, ReLU², SwiGLU, GeGLU),
// forward + backward, every dtype: many small template instances.
#include <torch/extension.h>

#include "nvccload.h"

namespace {

struct Gelu {
  __device__ static float f(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678f)); }
  __device__ static float df(float x) {
    return 0.5f * (1.f + erff(x * 0.70710678f)) + x * 0.39894228f * __expf(-0.5f * x * x);
  }
};
struct GeluTanh {
  __device__ static float f(float x) {
    return 0.5f * x * (1.f + tanhf(0.79788456f * (x + 0.044715f * x * x * x)));
  }
  __device__ static float df(float x) {
    float t = tanhf(0.79788456f * (x + 0.044715f * x * x * x));
    return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * 0.79788456f * (1.f + 0.134145f * x * x);
  }
};
struct Silu {
  __device__ static float f(float x) { return x / (1.f + __expf(-x)); }
  __device__ static float df(float x) {
    float s = 1.f / (1.f + __expf(-x));
    return s * (1.f + x * (1.f - s));
  }
};
struct Relu2 {
  __device__ static float f(float x) { return x > 0.f ? x * x : 0.f; }
  __device__ static float df(float x) { return x > 0.f ? 2.f * x : 0.f; }
};

template <typename T, typename Act>
__global__ void act_fwd(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = static_cast<T>(Act::f(static_cast<float>(x[i])));
}
template <typename T, typename Act>
__global__ void act_bwd(const T* dy, const T* x, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dx[i] = static_cast<T>(static_cast<float>(dy[i]) * Act::df(static_cast<float>(x[i])));
}
template <typename T, typename Act>
__global__ void glu_fwd(const T* x, T* y, int64_t rows, int64_t d) {
  const int64_t n = rows * d;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i / d, c = i % d;
    y[i] = static_cast<T>(Act::f(static_cast<float>(x[r * 2 * d + c])) *
                          static_cast<float>(x[r * 2 * d + d + c]));
  }
}

template <typename Act>
at::Tensor fwd(const at::Tensor& x) {
  auto y = torch::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "act_fwd", [&] {
    act_fwd<scalar_t, Act><<<nvccload::grid_for(x.numel()), 256>>>(
        x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), x.numel());
  });
  return y;
}
template <typename Act>
at::Tensor bwd(const at::Tensor& dy, const at::Tensor& x) {
  auto dx = torch::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "act_bwd", [&] {
    act_bwd<scalar_t, Act><<<nvccload::grid_for(x.numel()), 256>>>(
        dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), dx.data_ptr<scalar_t>(), x.numel());
  });
  return dx;
}
template <typename Act>
at::Tensor glu(const at::Tensor& x) {
  const int64_t d = x.size(-1) / 2, rows = x.numel() / x.size(-1);
  auto sizes = x.sizes().vec();
  sizes.back() = d;
  auto y = torch::empty(sizes, x.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "glu_fwd", [&] {
    glu_fwd<scalar_t, Act><<<nvccload::grid_for(rows * d), 256>>>(
        x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), rows, d);
  });
  return y;
}

}  // namespace

at::Tensor activation_fwd(const at::Tensor& x, const std::string& kind) {
  if (kind == "gelu") return fwd<Gelu>(x);
  if (kind == "gelu_tanh") return fwd<GeluTanh>(x);
  if (kind == "silu") return fwd<Silu>(x);
  if (kind == "relu2") return fwd<Relu2>(x);
  if (kind == "swiglu") return glu<Silu>(x);
  if (kind == "geglu") return glu<Gelu>(x);
  TORCH_CHECK(false, "unknown activation ", kind);
}

at::Tensor activation_bwd(const at::Tensor& dy, const at::Tensor& x, const std::string& kind) {
  if (kind == "gelu") return bwd<Gelu>(dy, x);
  if (kind == "gelu_tanh") return bwd<GeluTanh>(dy, x);
  if (kind == "silu") return bwd<Silu>(dy, x);
  if (kind == "relu2") return bwd<Relu2>(dy, x);
  TORCH_CHECK(false, "no backward for ", kind);
}
