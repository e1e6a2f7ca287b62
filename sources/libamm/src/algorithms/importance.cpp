// Weighted (importance) column-row sampling without replacement, by
// independent Bernoulli ("Poisson") sampling with water-filled inclusion
// probabilities -- the Horvitz-Thompson form of CRS.
//
// Each pair i is kept independently with probability q_i = min(1, tau * w_i),
// w_i = ||A[:, i]|| ||B[i, :]||, where tau is chosen so that sum_i q_i = c
// (c = sketch_size, the expected number of kept pairs). Kept pairs are scaled
// by 1/q_i, so the estimate is unbiased, and
//
//   E||C - AB||_F^2 <= sum_i (1 - q_i)/q_i ||A[:, i]||^2 ||B[i, :]||^2,
//
// which is never worse than CRS with replacement: heavy pairs (q_i = 1) are
// taken exactly, with zero variance, and no pair is drawn twice. When c is at
// least the number of non-zero pairs the result is exact.
#include <torch/torch.h>

#include <vector>

#include "../detail.h"

namespace libamm {
namespace algo_importance {

// Water-filling: q_i = min(1, tau w_i) with sum q_i = c. Walk the weights in
// decreasing order; the first t are saturated (q = 1) while tau * w_(t) >= 1.
at::Tensor importance_inclusion_probs(const at::Tensor& w_cpu, int64_t c) {
  const int64_t n = w_cpu.size(0);
  auto sorted = std::get<0>(w_cpu.sort(/*dim=*/0, /*descending=*/true));
  auto sw = sorted.accessor<double, 1>();
  // suffix[t] = sum_{j >= t} sorted[j]
  std::vector<double> suffix(n + 1, 0.0);
  for (int64_t j = n - 1; j >= 0; --j) suffix[j] = suffix[j + 1] + sw[j];

  int64_t nonzero = 0;
  for (int64_t j = 0; j < n; ++j) nonzero += sw[j] > 0.0;
  if (c >= nonzero) return (w_cpu > 0.0).to(torch::kDouble);  // take all

  double tau = 0.0;
  for (int64_t t = 0; t < n; ++t) {
    tau = static_cast<double>(c - t) / suffix[t];
    if (sw[t] * tau <= 1.0) break;  // no more saturated entries
  }
  return (w_cpu * tau).clamp_max(1.0);
}

class ImportanceSampling final : public Algorithm {
 public:
  std::string name() const override { return "importance"; }
  std::string description() const override {
    return "weighted column-row sampling without replacement (Bernoulli, "
           "q_i = min(1, tau*||A[:,i]||*||B[i,:]||)), sketch_size = expected "
           "number of kept pairs";
  }

 protected:
  at::Tensor compute(const at::Tensor& A, const at::Tensor& B,
                     const AmmParams& params) const override {
    auto w = (A.to(torch::kDouble).pow(2).sum(0).sqrt() *
              B.to(torch::kDouble).pow(2).sum(1).sqrt())
                 .cpu();
    auto q = importance_inclusion_probs(w, params.sketch_size);

    auto gen = detail::make_generator(params.seed);
    auto u = torch::rand({q.size(0)}, gen, torch::kDouble);
    auto keep = (u < q).nonzero().view({-1});  // q_i = 0 is never kept
    if (keep.numel() == 0) return torch::zeros({A.size(0), B.size(1)}, A.options());

    auto scale = q.index_select(0, keep).reciprocal();
    keep = keep.to(A.device());
    scale = scale.to(A.device(), A.scalar_type());
    return torch::matmul(A.index_select(1, keep) * scale.unsqueeze(0),
                         B.index_select(0, keep));
  }
};

}  // namespace algo_importance

AlgorithmPtr detail::make_importance() {
  return std::make_unique<algo_importance::ImportanceSampling>();
}

}  // namespace libamm
