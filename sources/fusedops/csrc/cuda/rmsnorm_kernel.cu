// One block per row; float accumulation; fp32/fp16/bf16 in and out.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "../fusedops.h"

namespace {

template <typename T>
__global__ void rms_norm_kernel(const T* x, const T* w, T* out, int64_t dim, float eps) {
  const int64_t row = blockIdx.x;
  const T* xr = x + row * dim;
  __shared__ float partial[32];
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    float v = static_cast<float>(xr[i]);
    sum += v * v;
  }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffff, sum, off);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    sum = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
    for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffff, sum, off);
    if (threadIdx.x == 0) partial[0] = rsqrtf(sum / dim + eps);
  }
  __syncthreads();
  const float inv = partial[0];
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x)
    out[row * dim + i] = static_cast<T>(static_cast<float>(xr[i]) * inv * static_cast<float>(w[i]));
}

}  // namespace

namespace fusedops {

torch::Tensor rms_norm_cuda(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  TORCH_CHECK(weight.is_cuda() && weight.scalar_type() == x.scalar_type(),
              "rms_norm: weight must be a CUDA tensor of x's dtype");
  const c10::cuda::CUDAGuard guard(x.device());
  auto xc = x.contiguous();
  auto out = torch::empty_like(xc);
  const int64_t dim = x.size(-1), rows = xc.numel() / dim;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "rms_norm", [&] {
    rms_norm_kernel<scalar_t><<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<scalar_t>(), weight.contiguous().data_ptr<scalar_t>(),
        out.data_ptr<scalar_t>(), dim, static_cast<float>(eps));
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

}  // namespace fusedops
