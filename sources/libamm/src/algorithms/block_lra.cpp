// Block low-rank approximation (BLRA) AMM.
//
// A is tiled into blocks A_ij (rows R_i x inner columns J_j, knobs
// block_rows / block_inner). Each block is replaced by a rank-r factorisation
// A_ij ~= U_ij V_ij^T from the randomized range finder + SVD of Halko,
// Martinsson & Tropp (2011):
//
//   Y = (A_ij A_ij^T)^q A_ij Omega,  Q = orth(Y),   Omega ~ N(0,1), r + o cols
//   Q^T A_ij = U' S V^T  (small SVD),  keep the top r:  A_ij ~= (Q U'_r S_r) V_r^T
//
// and then C[R_i, :] = sum_j (Q U'_r S_r) (V_r^T B[J_j, :]). The rank r is
// sketch_size. Blocks whose rank is already <= r are multiplied exactly; for
// inputs whose blocks have rank <= r the result is exact up to rounding.
// Block-local factors capture local structure (e.g. block-diagonal or
// banded matrices) that a single global low-rank approximation would miss.
#include <torch/torch.h>

#include <algorithm>

#include "../detail.h"

namespace libamm {
namespace algo_block_lra {

// Rank-r factorisation (left, right) with block ~= left @ right.
std::pair<at::Tensor, at::Tensor> blra_factorize(const at::Tensor& block,
                                                  int64_t rank, int64_t oversample,
                                                  int64_t power_iters,
                                                  at::Generator& gen) {
  const int64_t cols = block.size(1);
  const int64_t width = std::min<int64_t>(rank + oversample, std::min(block.size(0), cols));
  auto omega = torch::randn({cols, width}, gen, torch::kDouble)
                   .to(block.device(), block.scalar_type());
  auto Q = std::get<0>(torch::linalg_qr(torch::matmul(block, omega), "reduced"));
  // Power iterations sharpen the spectrum; re-orthonormalise each half step
  // to avoid losing the small singular directions to rounding.
  for (int64_t it = 0; it < power_iters; ++it) {
    auto Z = std::get<0>(torch::linalg_qr(torch::matmul(block.t(), Q), "reduced"));
    Q = std::get<0>(torch::linalg_qr(torch::matmul(block, Z), "reduced"));
  }
  auto small = torch::matmul(Q.t(), block);  // width x cols
  auto svd = torch::linalg_svd(small, /*full_matrices=*/false);
  const int64_t r = std::min<int64_t>(rank, std::get<1>(svd).size(0));
  auto left = torch::matmul(Q, std::get<0>(svd).narrow(1, 0, r)) *
              std::get<1>(svd).narrow(0, 0, r).unsqueeze(0);
  auto right = std::get<2>(svd).narrow(0, 0, r);  // r x cols
  return {left, right};
}

class BlockLowRank final : public Algorithm {
 public:
  std::string name() const override { return "block_lra"; }
  std::string description() const override {
    return "block low-rank approximation of A (randomized SVD per block), "
           "sketch_size = rank per block";
  }
  std::vector<KnobInfo> knobs() const override {
    return {{"block_rows", 128.0, "rows of A per block (0 = all rows)"},
            {"block_inner", 128.0, "inner-dimension columns per block (0 = all)"},
            {"oversample", 8.0, "extra random vectors for the range finder"},
            {"power_iters", 1.0, "subspace (power) iterations"}};
  }

 protected:
  at::Tensor compute(const at::Tensor& A, const at::Tensor& B,
                     const AmmParams& params) const override {
    const int64_t m = A.size(0), n = A.size(1);
    int64_t br = detail::int_knob(params, "block_rows", 128, 0);
    int64_t bn = detail::int_knob(params, "block_inner", 128, 0);
    const int64_t oversample = detail::int_knob(params, "oversample", 8, 0);
    const int64_t power_iters = detail::int_knob(params, "power_iters", 1, 0);
    if (br == 0 || br > m) br = m;
    if (bn == 0 || bn > n) bn = n;
    const int64_t rank = params.sketch_size;

    auto gen = detail::make_generator(params.seed);
    auto C = torch::zeros({m, B.size(1)}, A.options());
    for (int64_t r0 = 0; r0 < m; r0 += br) {
      const int64_t rows = std::min(br, m - r0);
      auto Ci = C.narrow(0, r0, rows);
      for (int64_t c0 = 0; c0 < n; c0 += bn) {
        const int64_t cols = std::min(bn, n - c0);
        auto block = A.narrow(0, r0, rows).narrow(1, c0, cols);
        auto Bj = B.narrow(0, c0, cols);
        if (rank >= std::min(rows, cols)) {
          Ci.add_(torch::matmul(block, Bj));  // low rank would not be cheaper
          continue;
        }
        auto lr = blra_factorize(block, rank, oversample, power_iters, gen);
        Ci.add_(torch::matmul(lr.first, torch::matmul(lr.second, Bj)));
      }
    }
    return C;
  }
};

}  // namespace algo_block_lra

AlgorithmPtr detail::make_block_lra() {
  return std::make_unique<algo_block_lra::BlockLowRank>();
}

}  // namespace libamm
