#include "fusedops.h"

namespace fusedops {

torch::Tensor swiglu(const torch::Tensor& gate, const torch::Tensor& up) {
  TORCH_CHECK(gate.sizes() == up.sizes(), "swiglu: gate and up differ in shape");
#ifdef FUSEDOPS_CUDA
  if (gate.is_cuda()) return swiglu_cuda(gate, up);
#endif
  auto g = gate.to(torch::kFloat32);
  return (g * torch::sigmoid(g) * up.to(torch::kFloat32)).to(gate.scalar_type());
}

}  // namespace fusedops
