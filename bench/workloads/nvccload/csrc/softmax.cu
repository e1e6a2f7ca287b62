// Heavy: row softmax / log-softmax forward + backward with a block-size template.
#include <torch/extension.h>

#include "nvccload.h"

namespace {

template <typename T, int BLOCK, bool LOG>
__global__ void softmax_fwd(const T* x, T* y, int64_t cols) {
  __shared__ float red[BLOCK];
  const int64_t row = blockIdx.x;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, static_cast<float>(x[row * cols + c]));
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK) sum += __expf(static_cast<float>(x[row * cols + c]) - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  sum = red[0];
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK) {
    float v = static_cast<float>(x[row * cols + c]) - m;
    y[row * cols + c] = static_cast<T>(LOG ? v - __logf(sum) : __expf(v) / sum);
  }
}

template <typename T, int BLOCK, bool LOG>
__global__ void softmax_bwd(const T* dy, const T* y, T* dx, int64_t cols) {
  __shared__ float red[BLOCK];
  const int64_t row = blockIdx.x;
  float dot = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK) {
    float g = static_cast<float>(dy[row * cols + c]);
    dot += LOG ? g : g * static_cast<float>(y[row * cols + c]);
  }
  red[threadIdx.x] = dot;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  dot = red[0];
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK) {
    float g = static_cast<float>(dy[row * cols + c]);
    float yv = static_cast<float>(y[row * cols + c]);
    dx[row * cols + c] = static_cast<T>(LOG ? g - __expf(yv) * dot : yv * (g - dot));
  }
}


template <bool LOG>
at::Tensor fwd(const at::Tensor& x) {
  auto y = torch::empty_like(x);
  const int64_t rows = x.size(0), cols = x.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "softmax_fwd", [&] {
    auto* xp = x.data_ptr<scalar_t>();
    auto* yp = y.data_ptr<scalar_t>();
    auto g = static_cast<unsigned>(rows);
    if (cols <= 256) softmax_fwd<scalar_t, 128, LOG><<<g, 128>>>(xp, yp, cols);
    else if (cols <= 2048) softmax_fwd<scalar_t, 256, LOG><<<g, 256>>>(xp, yp, cols);
    else softmax_fwd<scalar_t, 512, LOG><<<g, 512>>>(xp, yp, cols);
  });
  return y;
}

template <bool LOG>
at::Tensor bwd(const at::Tensor& dy, const at::Tensor& y) {
  auto dx = torch::empty_like(y);
  const int64_t rows = y.size(0), cols = y.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, y.scalar_type(), "softmax_bwd", [&] {
    auto* a = dy.data_ptr<scalar_t>();
    auto* b = y.data_ptr<scalar_t>();
    auto* c = dx.data_ptr<scalar_t>();
    auto g = static_cast<unsigned>(rows);
    if (cols <= 256) softmax_bwd<scalar_t, 128, LOG><<<g, 128>>>(a, b, c, cols);
    else if (cols <= 2048) softmax_bwd<scalar_t, 256, LOG><<<g, 256>>>(a, b, c, cols);
    else softmax_bwd<scalar_t, 512, LOG><<<g, 512>>>(a, b, c, cols);
  });
  return dx;
}

}  // namespace

at::Tensor softmax_fwd(const at::Tensor& x) { return fwd<false>(x); }
at::Tensor log_softmax_fwd(const at::Tensor& x) { return fwd<true>(x); }
at::Tensor softmax_bwd(const at::Tensor& dy, const at::Tensor& y) { return bwd<false>(dy, y); }
at::Tensor log_softmax_bwd(const at::Tensor& dy, const at::Tensor& y) { return bwd<true>(dy, y); }
