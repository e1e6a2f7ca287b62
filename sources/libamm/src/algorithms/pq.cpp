// Product quantization (PQ) AMM (Jegou, Douze & Schmid 2011; used for AMM by
// Blalock & Guttag, "Multiplying matrices without multiplying", 2021).
//
// Split the inner dimension into S sub-spaces of d columns (knob
// subspace_dim). In each sub-space s, run k-means with K = sketch_size
// centroids on the m row-pieces A[:, s]; every row of A is then encoded by S
// centroid ids. The product becomes table look-ups:
//
//   T_s = centroids_s @ B[s, :]           (K x p, one table per sub-space)
//   C[i, :] = sum_s T_s[code_s(i), :]
//
// Encoding replaces the m*n*p multiply by an S*K*d*p table build plus
// m*S*p additions. The error is the quantization error of A; it shrinks as K
// grows and is zero when K >= m (every row is its own centroid) or when
// the rows of A take at most K distinct values per sub-space.
//
// Here the codebooks are learnt on A itself (data-aware, no separate
// training set); all S k-means problems run batched as 3-D tensors.
#include <torch/torch.h>

#include <algorithm>

#include "../detail.h"

namespace libamm {
namespace algo_pq {

// Squared distances (S, m, K) between points X (S, m, d) and centroids
// C (S, K, d), via |x|^2 - 2 x.c + |c|^2 (one batched matmul, no m*K*d temp).
at::Tensor pq_sq_dists(const at::Tensor& X, const at::Tensor& C) {
  auto xx = X.pow(2).sum(-1, /*keepdim=*/true);           // S, m, 1
  auto cc = C.pow(2).sum(-1).unsqueeze(1);                // S, 1, K
  return torch::baddbmm(xx + cc, X, C.transpose(1, 2), /*beta=*/1, /*alpha=*/-2);
}

// k-means++ seeding (Arthur & Vassilvitskii 2007), batched over sub-spaces:
// each next centroid is drawn with probability ~ squared distance to the
// nearest centroid so far. Plain random (Forgy) seeding often puts two seeds
// in one cluster and Lloyd cannot move them apart.
at::Tensor pq_kmeanspp_init(const at::Tensor& X, int64_t K, at::Generator& gen) {
  const int64_t S = X.size(0), m = X.size(1), d = X.size(2);
  auto cent = torch::empty({S, K, d}, X.options());
  auto first = torch::randint(m, {S}, gen, torch::kLong).to(X.device());
  auto batch = torch::arange(S, first.options());
  cent.select(1, 0).copy_(X.index({batch, first}));
  auto best = (X - cent.narrow(1, 0, 1)).pow(2).sum(-1);  // S, m
  for (int64_t j = 1; j < K; ++j) {
    // Rows whose points all coincide with chosen centroids: fall back to
    // uniform so multinomial never sees an all-zero row.
    auto w = best.to(torch::kDouble).cpu();
    auto degenerate = (w.sum(-1, /*keepdim=*/true) <= 0);
    w = torch::where(degenerate, torch::ones_like(w), w);
    auto pick = torch::multinomial(w, 1, /*replacement=*/false, gen).view({-1}).to(X.device());
    cent.select(1, j).copy_(X.index({batch, pick}));
    best = torch::minimum(best, (X - cent.narrow(1, j, 1)).pow(2).sum(-1));
  }
  return cent;
}

// Batched Lloyd iterations; returns (centroids (S,K,d), codes (S,m)).
std::pair<at::Tensor, at::Tensor> pq_kmeans(const at::Tensor& X, int64_t K,
                                            int64_t iters, at::Generator& gen) {
  const int64_t S = X.size(0), m = X.size(1), d = X.size(2);
  auto cent = pq_kmeanspp_init(X, K, gen);  // S, K, d
  auto codes = pq_sq_dists(X, cent).argmin(-1);  // S, m
  for (int64_t it = 0; it < iters; ++it) {
    auto sums = torch::zeros({S, K, d}, X.options())
                    .scatter_add_(1, codes.unsqueeze(-1).expand({S, m, d}), X);
    auto counts = torch::zeros({S, K}, X.options())
                      .scatter_add_(1, codes, torch::ones({S, m}, X.options()));
    auto means = sums / counts.clamp_min(1).unsqueeze(-1);
    // Empty clusters keep their previous centroid instead of collapsing to 0.
    cent = torch::where((counts > 0).unsqueeze(-1), means, cent);
    auto new_codes = pq_sq_dists(X, cent).argmin(-1);
    const bool converged = new_codes.equal(codes);
    codes = new_codes;
    if (converged) break;
  }
  return {cent, codes};
}

class ProductQuantization final : public Algorithm {
 public:
  std::string name() const override { return "pq"; }
  std::string description() const override {
    return "product quantization of A's rows (k-means per sub-space) + "
           "look-up tables, sketch_size = centroids per sub-space K";
  }
  std::vector<KnobInfo> knobs() const override {
    return {{"subspace_dim", 4.0, "inner-dimension columns per sub-space d"},
            {"kmeans_iters", 25.0, "maximum Lloyd iterations"}};
  }

 protected:
  at::Tensor compute(const at::Tensor& A, const at::Tensor& B,
                     const AmmParams& params) const override {
    const int64_t m = A.size(0), n = A.size(1), p = B.size(1);
    const int64_t d = std::min(detail::int_knob(params, "subspace_dim", 4, 1), n);
    const int64_t iters = detail::int_knob(params, "kmeans_iters", 25, 0);
    const int64_t K = detail::clamp_size(params.sketch_size, m);
    const int64_t S = (n + d - 1) / d;
    const int64_t padded = S * d;

    // Zero-pad the inner dimension to a multiple of d (contributes nothing).
    auto Ap = padded == n ? A : torch::constant_pad_nd(A, {0, padded - n});
    auto Bp = padded == n ? B : torch::constant_pad_nd(B, {0, 0, 0, padded - n});
    auto X = Ap.view({m, S, d}).permute({1, 0, 2}).contiguous();  // S, m, d

    auto gen = detail::make_generator(params.seed);
    auto km = pq_kmeans(X, K, iters, gen);
    const auto& cent = km.first;   // S, K, d
    const auto& codes = km.second; // S, m

    // Look-up tables T_s = centroids_s @ B_s, flattened to (S*K, p).
    auto tables = torch::bmm(cent, Bp.view({S, d, p})).reshape({S * K, p});
    auto flat = codes + torch::arange(S, codes.options()).unsqueeze(1) * K;

    // Sum the looked-up rows, a chunk of sub-spaces at a time so the gathered
    // temporary stays below ~16M elements.
    auto C = torch::zeros({m, p}, A.options());
    const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 24) / std::max<int64_t>(1, m * p));
    for (int64_t s0 = 0; s0 < S; s0 += chunk) {
      const int64_t cs = std::min(chunk, S - s0);
      auto idx = flat.narrow(0, s0, cs).reshape({-1});
      C.add_(tables.index_select(0, idx).view({cs, m, p}).sum(0));
    }
    return C;
  }
};

}  // namespace algo_pq

AlgorithmPtr detail::make_pq() {
  return std::make_unique<algo_pq::ProductQuantization>();
}

}  // namespace libamm
