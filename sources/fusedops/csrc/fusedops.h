// fusedops: fused ops on the PyTorch C++ API. CPU paths use ATen; CUDA paths (built with
// FUSEDOPS_CUDA) launch the kernels in csrc/cuda.
#pragma once
#include <torch/extension.h>

namespace fusedops {

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);
torch::Tensor swiglu(const torch::Tensor& gate, const torch::Tensor& up);
torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& positions, double theta);
bool has_cuda();

#ifdef FUSEDOPS_CUDA
torch::Tensor rms_norm_cuda(const torch::Tensor& x, const torch::Tensor& weight, double eps);
torch::Tensor swiglu_cuda(const torch::Tensor& gate, const torch::Tensor& up);
#endif

}  // namespace fusedops
