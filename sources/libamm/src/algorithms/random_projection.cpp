// Random projection (Johnson-Lindenstrauss) AMM, Sarlos 2006.
//
// S is a dense k x n matrix with i.i.d. N(0, 1/k) entries (or +-1/sqrt(k)
// Rademacher entries with knob rademacher=1), so E[S^T S] = I and
//
//   C = (A S^T)(S B),  E||C - AB||_F^2 = (||A||_F^2 ||B||_F^2 + ||AB||_F^2)/k
//
// for the Gaussian case. Building S A costs O(mnk) -- more than count sketch --
// but the error does not depend on how the mass of A and B is spread over
// the inner dimension.
#include <torch/torch.h>

#include <cmath>

#include "../detail.h"

namespace libamm {
namespace algo_random_projection {

class RandomProjection final : public Algorithm {
 public:
  std::string name() const override { return "random_projection"; }
  std::string description() const override {
    return "Gaussian (JL) random projection, C = (A S^T)(S B) with "
           "S ~ N(0, 1/k), sketch_size = k";
  }
  std::vector<KnobInfo> knobs() const override {
    return {{"rademacher", 0.0, "1 = use +-1/sqrt(k) entries instead of Gaussian"}};
  }

 protected:
  at::Tensor compute(const at::Tensor& A, const at::Tensor& B,
                     const AmmParams& params) const override {
    const int64_t n = A.size(1);
    const int64_t k = params.sketch_size;
    auto gen = detail::make_generator(params.seed);
    at::Tensor S;
    if (params.knob("rademacher", 0.0) != 0.0) {
      S = torch::randint(2, {k, n}, gen, torch::kDouble) * 2.0 - 1.0;
    } else {
      S = torch::randn({k, n}, gen, torch::kDouble);
    }
    S = (S / std::sqrt(static_cast<double>(k))).to(A.device(), A.scalar_type());
    auto AS = torch::matmul(A, S.t());  // m x k
    auto SB = torch::matmul(S, B);      // k x p
    return torch::matmul(AS, SB);
  }
};

}  // namespace algo_random_projection

AlgorithmPtr detail::make_random_projection() {
  return std::make_unique<algo_random_projection::RandomProjection>();
}

}  // namespace libamm
