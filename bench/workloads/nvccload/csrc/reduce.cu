// Heavy: row-wise reductions (sum, max, L2 norm, argmax) with a reduction-op template.
#include <torch/extension.h>

#include "nvccload.h"

namespace {

struct Sum {
  __device__ static float init() { return 0.f; }
  __device__ static float op(float a, float b) { return a + b; }
  __device__ static float pre(float x) { return x; }
  __device__ static float post(float x) { return x; }
};
struct Max {
  __device__ static float init() { return -INFINITY; }
  __device__ static float op(float a, float b) { return fmaxf(a, b); }
  __device__ static float pre(float x) { return x; }
  __device__ static float post(float x) { return x; }
};
struct L2 {
  __device__ static float init() { return 0.f; }
  __device__ static float op(float a, float b) { return a + b; }
  __device__ static float pre(float x) { return x * x; }
  __device__ static float post(float x) { return sqrtf(x); }
};

template <typename T, typename R, int BLOCK>
__global__ void reduce_rows(const T* x, T* y, int64_t cols) {
  __shared__ float red[BLOCK];
  float a = R::init();
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK)
    a = R::op(a, R::pre(static_cast<float>(x[blockIdx.x * cols + c])));
  red[threadIdx.x] = a;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = R::op(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = static_cast<T>(R::post(red[0]));
}

template <typename T, int BLOCK>
__global__ void argmax_rows(const T* x, int64_t* idx, int64_t cols) {
  __shared__ float best[BLOCK];
  __shared__ int64_t where[BLOCK];
  float b = -INFINITY;
  int64_t w = 0;
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK) {
    float v = static_cast<float>(x[blockIdx.x * cols + c]);
    if (v > b) { b = v; w = c; }
  }
  best[threadIdx.x] = b;
  where[threadIdx.x] = w;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s && best[threadIdx.x + s] > best[threadIdx.x]) {
      best[threadIdx.x] = best[threadIdx.x + s];
      where[threadIdx.x] = where[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) idx[blockIdx.x] = where[0];
}

template <typename R>
at::Tensor rows(const at::Tensor& x) {
  auto y = torch::empty({x.size(0)}, x.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "reduce", [&] {
    auto g = static_cast<unsigned>(x.size(0));
    if (x.size(1) <= 1024) reduce_rows<scalar_t, R, 128><<<g, 128>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), x.size(1));
    else reduce_rows<scalar_t, R, 512><<<g, 512>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), x.size(1));
  });
  return y;
}

}  // namespace

at::Tensor reduce_fwd(const at::Tensor& x, const std::string& kind) {
  TORCH_CHECK(x.dim() == 2, "x must be 2-D");
  if (kind == "sum") return rows<Sum>(x);
  if (kind == "max") return rows<Max>(x);
  if (kind == "l2") return rows<L2>(x);
  TORCH_CHECK(false, "unknown reduction ", kind);
}

at::Tensor argmax_fwd(const at::Tensor& x) {
  auto idx = torch::empty({x.size(0)}, x.options().dtype(torch::kLong));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "argmax", [&] {
    argmax_rows<scalar_t, 256><<<static_cast<unsigned>(x.size(0)), 256>>>(
        x.data_ptr<scalar_t>(), idx.data_ptr<int64_t>(), x.size(1));
  });
  return idx;
}
