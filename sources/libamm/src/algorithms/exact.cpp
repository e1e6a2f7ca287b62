// Exact baseline: C = A @ B. Every approximate algorithm is measured against
// it, and it is the reference point for speed in benchmarks.
#include <torch/torch.h>

#include "../detail.h"

namespace libamm {
namespace algo_exact {

class Exact final : public Algorithm {
 public:
  std::string name() const override { return "exact"; }
  std::string description() const override {
    return "exact product A @ B (baseline; sketch_size and seed ignored)";
  }

 protected:
  at::Tensor compute(const at::Tensor& A, const at::Tensor& B,
                     const AmmParams& /*params*/) const override {
    return torch::matmul(A, B);
  }
};

}  // namespace algo_exact

AlgorithmPtr detail::make_exact() {
  return std::make_unique<algo_exact::Exact>();
}

}  // namespace libamm
