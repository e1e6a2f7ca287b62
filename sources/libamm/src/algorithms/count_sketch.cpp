// Count sketch AMM (Clarkson & Woodruff 2013; Pagh 2013 "compressed matrix
// multiplication").
//
// S is a k x n sparse sign matrix with exactly one +-1 per column: column i
// goes to bucket h(i) in [0, k) with sign s(i). Then
//
//   C = (A S^T)(S B),   E[S^T S] = I,
//
// and E||C - AB||_F^2 <= 2 ||A||_F^2 ||B||_F^2 / k. Applying S costs only
// O(nnz(A) + nnz(B)) (a scatter-add per bucket), which is why count sketch is
// the cheapest sketch to build; the dense k-wide product is the only matmul.
#include <torch/torch.h>

#include "../detail.h"

namespace libamm {
namespace algo_count_sketch {

class CountSketch final : public Algorithm {
 public:
  std::string name() const override { return "count_sketch"; }
  std::string description() const override {
    return "count sketch (one random +-1 per column of S), C = (A S^T)(S B), "
           "sketch_size = number of buckets k";
  }

 protected:
  at::Tensor compute(const at::Tensor& A, const at::Tensor& B,
                     const AmmParams& params) const override {
    const int64_t n = A.size(1);
    const int64_t k = params.sketch_size;
    auto gen = detail::make_generator(params.seed);
    // Hash and sign drawn on the CPU with the seeded generator.
    auto bucket = torch::randint(k, {n}, gen, torch::kLong).to(A.device());
    auto sign = (torch::randint(2, {n}, gen, torch::kLong) * 2 - 1)
                    .to(A.device(), A.scalar_type());

    // A S^T: column i of A (times its sign) is added into column h(i).
    auto AS = torch::zeros({A.size(0), k}, A.options())
                  .index_add_(1, bucket, A * sign.unsqueeze(0));
    // S B: row i of B (times its sign) is added into row h(i).
    auto SB = torch::zeros({k, B.size(1)}, B.options())
                  .index_add_(0, bucket, B * sign.unsqueeze(1));
    return torch::matmul(AS, SB);
  }
};

}  // namespace algo_count_sketch

AlgorithmPtr detail::make_count_sketch() {
  return std::make_unique<algo_count_sketch::CountSketch>();
}

}  // namespace libamm
