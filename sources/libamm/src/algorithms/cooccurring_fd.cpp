// Co-occurring directions (Mroueh, Marcheret & Goel, "Co-occurring directions
// sketching for approximate matrix multiply", AISTATS 2017) -- the
// frequent-directions idea applied to a product.
//
// Stream the inner dimension: pair i contributes the outer product
// x_i y_i^T with x_i = A[:, i] (in R^m) and y_i = B[i, :]^T (in R^p). Keep two
// sketches BX (m x l) and BY (p x l), l = sketch_size, with
// BX BY^T ~= sum_i x_i y_i^T. New pairs fill empty columns; when the
// sketches are full, shrink:
//
//   QX RX = qr(BX),  QY RY = qr(BY),  U S V^T = svd(RX RY^T)
//   delta = S[l/2],  S' = max(S - delta, 0)
//   BX = QX U sqrt(S'),  BY = QY V sqrt(S')
//
// which frees at least half the columns. Deterministic guarantee:
// ||AB - BX BY^T||_2 <= 2 ||A||_F ||B||_F / l. If rank(AB-stream) < l/2 no
// shrink ever loses mass (delta = 0) and the result is exact.
//
// Batched insertion: instead of one column at a time, a whole block of
// columns is copied into the free slots at once -- same algorithm, far fewer
// tensor ops.
#include <torch/torch.h>

#include <algorithm>

#include "../detail.h"

namespace libamm {
namespace algo_cooccurring_fd {

struct CoFDState {
  at::Tensor BX;  // m x l
  at::Tensor BY;  // p x l
  int64_t filled = 0;
};

// Shrink step: rotate both sketches onto the singular vectors of the
// sketched product and subtract the (l/2)-th singular value.
void coofd_shrink(CoFDState& st) {
  const int64_t l = st.BX.size(1);
  auto qx = torch::linalg_qr(st.BX, "reduced");
  auto qy = torch::linalg_qr(st.BY, "reduced");
  const auto& QX = std::get<0>(qx);
  const auto& RX = std::get<1>(qx);
  const auto& QY = std::get<0>(qy);
  const auto& RY = std::get<1>(qy);
  auto svd = torch::linalg_svd(torch::matmul(RX, RY.t()), /*full_matrices=*/false);
  const auto& U = std::get<0>(svd);
  auto S = std::get<1>(svd);
  const auto& Vh = std::get<2>(svd);

  const int64_t half = l / 2;
  // S has min(m, p, l) entries; if fewer than l/2 exist nothing is lost.
  auto delta = S.size(0) >= half && half >= 1 ? S[half - 1].item<double>() : 0.0;
  auto S_shrunk = (S - delta).clamp_min(0.0);
  const int64_t keep = (S_shrunk > 0).sum().item<int64_t>();

  auto root = S_shrunk.narrow(0, 0, keep).sqrt();
  st.BX.zero_();
  st.BY.zero_();
  if (keep > 0) {
    st.BX.narrow(1, 0, keep)
        .copy_(torch::matmul(QX, U.narrow(1, 0, keep)) * root.unsqueeze(0));
    st.BY.narrow(1, 0, keep)
        .copy_(torch::matmul(QY, Vh.narrow(0, 0, keep).t()) * root.unsqueeze(0));
  }
  st.filled = keep;
}

class CoOccurringFD final : public Algorithm {
 public:
  std::string name() const override { return "cooccurring_fd"; }
  std::string description() const override {
    return "co-occurring directions (frequent-directions sketch of the product), "
           "deterministic, sketch_size = sketch width l";
  }

 protected:
  at::Tensor compute(const at::Tensor& A, const at::Tensor& B,
                     const AmmParams& params) const override {
    const int64_t m = A.size(0), n = A.size(1), p = B.size(1);
    // l >= 2 so that a shrink always frees at least one column.
    const int64_t l = std::max<int64_t>(2, params.sketch_size);
    if (l >= n) return torch::matmul(A, B);  // the sketch could hold everything

    CoFDState st;
    st.BX = torch::zeros({m, l}, A.options());
    st.BY = torch::zeros({p, l}, B.options());
    const auto Bt = B.t();  // p x n; column i is y_i
    int64_t pos = 0;
    while (pos < n) {
      if (st.filled == l) coofd_shrink(st);
      const int64_t take = std::min(l - st.filled, n - pos);
      st.BX.narrow(1, st.filled, take).copy_(A.narrow(1, pos, take));
      st.BY.narrow(1, st.filled, take).copy_(Bt.narrow(1, pos, take));
      st.filled += take;
      pos += take;
    }
    return torch::matmul(st.BX, st.BY.t());
  }
};

}  // namespace algo_cooccurring_fd

AlgorithmPtr detail::make_cooccurring_fd() {
  return std::make_unique<algo_cooccurring_fd::CoOccurringFD>();
}

}  // namespace libamm
