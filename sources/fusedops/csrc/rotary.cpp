#include "fusedops.h"

namespace fusedops {

// x: [..., seq, dim] with dim even; positions: [seq]. Pairs (2i, 2i+1) are rotated by
// positions * theta^(-2i/dim), computed in float32.
torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& positions, double theta) {
  const auto dim = x.size(-1);
  TORCH_CHECK(dim % 2 == 0, "rotary: the last dimension must be even, got ", dim);
  TORCH_CHECK(positions.dim() == 1 && positions.size(0) == x.size(-2),
              "rotary: positions must be [seq] with seq = ", x.size(-2));
  auto opts = x.options().dtype(torch::kFloat32);
  auto inv = torch::pow(theta, -torch::arange(0, dim, 2, opts) / static_cast<double>(dim));
  auto ang = positions.to(torch::kFloat32).unsqueeze(-1) * inv.unsqueeze(0);  // [seq, dim/2]
  auto cos = torch::cos(ang), sin = torch::sin(ang);
  auto xf = x.to(torch::kFloat32);
  auto even = xf.slice(-1, 0, dim, 2), odd = xf.slice(-1, 1, dim, 2);
  auto out = torch::stack({even * cos - odd * sin, even * sin + odd * cos}, -1);
  return out.flatten(-2).to(x.scalar_type());
}

}  // namespace fusedops
