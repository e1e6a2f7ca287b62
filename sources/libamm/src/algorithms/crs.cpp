// Column-row sampling (CRS), Drineas, Kannan & Mahoney, "Fast Monte Carlo
// algorithms for matrices I: approximating matrix multiplication" (2006).
//
// A @ B = sum_i A[:, i] B[i, :]. Draw c = sketch_size indices i.i.d. (with
// replacement) from p_i and average the rescaled outer products:
//
//   C = sum_{t=1..c} A[:, i_t] B[i_t, :] / (c p_{i_t})        (unbiased)
//
// With p_i proportional to ||A[:, i]|| ||B[i, :]|| (the variance-optimal
// choice) E||C - AB||_F^2 <= ||A||_F^2 ||B||_F^2 / c, so the error falls like
// 1/sqrt(c). Knob uniform=1 gives the naive uniform-probability variant.
#include <torch/torch.h>

#include "../detail.h"

namespace libamm {
namespace algo_crs {

// Sampling probabilities on the CPU in float64: multinomial on float32
// weights loses tiny probabilities, and the generator is a CPU generator.
at::Tensor crs_probabilities(const at::Tensor& A, const at::Tensor& B,
                             bool uniform) {
  const int64_t n = A.size(1);
  if (uniform) return torch::full({n}, 1.0 / n, torch::kDouble);
  auto col_norms = A.to(torch::kDouble).pow(2).sum(0).sqrt();  // ||A[:, i]||
  auto row_norms = B.to(torch::kDouble).pow(2).sum(1).sqrt();  // ||B[i, :]||
  auto w = (col_norms * row_norms).cpu();
  const double total = w.sum().item<double>();
  if (!(total > 0.0)) return at::Tensor();  // A @ B is exactly zero
  return w / total;
}

class ColumnRowSampling final : public Algorithm {
 public:
  std::string name() const override { return "crs"; }
  std::string description() const override {
    return "column-row sampling with probabilities ~ ||A[:,i]||*||B[i,:]|| "
           "(Drineas-Kannan-Mahoney), sketch_size = number of samples";
  }
  std::vector<KnobInfo> knobs() const override {
    return {{"uniform", 0.0, "1 = sample column/row pairs uniformly"}};
  }

 protected:
  at::Tensor compute(const at::Tensor& A, const at::Tensor& B,
                     const AmmParams& params) const override {
    const bool uniform = params.knob("uniform", 0.0) != 0.0;
    auto probs = crs_probabilities(A, B, uniform);
    if (!probs.defined()) return torch::zeros({A.size(0), B.size(1)}, A.options());

    const int64_t c = params.sketch_size;
    auto gen = detail::make_generator(params.seed);
    auto idx = torch::multinomial(probs, c, /*replacement=*/true, gen);
    // 1 / (c p_i): the importance weight that makes the estimator unbiased.
    auto scale = (probs.index_select(0, idx) * static_cast<double>(c)).reciprocal();

    idx = idx.to(A.device());
    scale = scale.to(A.device(), A.scalar_type());
    auto As = A.index_select(1, idx) * scale.unsqueeze(0);  // m x c
    auto Bs = B.index_select(0, idx);                       // c x p
    return torch::matmul(As, Bs);
  }
};

}  // namespace algo_crs

AlgorithmPtr detail::make_crs() {
  return std::make_unique<algo_crs::ColumnRowSampling>();
}

}  // namespace libamm
