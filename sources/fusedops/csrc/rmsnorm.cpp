#include "fusedops.h"

namespace fusedops {

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  TORCH_CHECK(x.size(-1) == weight.size(0), "rms_norm: weight has ", weight.size(0),
              " elements, the last dimension of x ", x.size(-1));
#ifdef FUSEDOPS_CUDA
  if (x.is_cuda()) return rms_norm_cuda(x, weight, eps);
#endif
  // accumulate in float32 whatever the input type, as the CUDA kernel does
  auto xf = x.to(torch::kFloat32);
  auto inv = torch::rsqrt(xf.pow(2).mean({-1}, /*keepdim=*/true) + eps);
  return (xf * inv * weight.to(torch::kFloat32)).to(x.scalar_type());
}

}  // namespace fusedops
