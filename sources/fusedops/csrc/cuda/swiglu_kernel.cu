#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "../fusedops.h"

namespace {

template <typename T>
__global__ void swiglu_kernel(const T* gate, const T* up, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float g = static_cast<float>(gate[i]);
    out[i] = static_cast<T>(g / (1.f + __expf(-g)) * static_cast<float>(up[i]));
  }
}

}  // namespace

namespace fusedops {

torch::Tensor swiglu_cuda(const torch::Tensor& gate, const torch::Tensor& up) {
  TORCH_CHECK(up.is_cuda() && up.scalar_type() == gate.scalar_type(),
              "swiglu: up must be a CUDA tensor of gate's dtype");
  const c10::cuda::CUDAGuard guard(gate.device());
  auto g = gate.contiguous(), u = up.contiguous();
  auto out = torch::empty_like(g);
  const int64_t n = g.numel();
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, g.scalar_type(), "swiglu", [&] {
    swiglu_kernel<scalar_t><<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        g.data_ptr<scalar_t>(), u.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

}  // namespace fusedops
