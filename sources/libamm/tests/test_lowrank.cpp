// Low-rank / quantization algorithms: block_lra, pq.
#include <torch/torch.h>

#include "test_util.h"

static void test_block_lra() {
  std::printf("block_lra\n");
  // Rank-6 A: rank >= 6 per block recovers A @ B up to rounding.
  auto ab = amm_test::low_rank_pair(200, 300, 40, 6, 21);
  auto exact = torch::matmul(ab.first, ab.second);
  libamm::AmmParams p;
  p.sketch_size = 6;
  double e = libamm::relative_frobenius_error(
      libamm::amm("block_lra", ab.first, ab.second, p), exact);
  AMM_CHECK(e < 1e-4, "block_lra rank 6 on rank-6 input: err %.3g", e);

  // Block-diagonal A: rank 4 per block, rank 12 globally; 4-rank blocks of
  // size 64 are exact whereas a global rank-4 approximation is not.
  torch::manual_seed(22);
  auto A = torch::zeros({192, 192});
  for (int b = 0; b < 3; ++b) {
    A.narrow(0, 64 * b, 64).narrow(1, 64 * b, 64)
        .copy_(torch::matmul(torch::randn({64, 4}), torch::randn({4, 64})));
  }
  auto B = torch::randn({192, 32});
  p.sketch_size = 4;
  p.knobs = {{"block_rows", 64}, {"block_inner", 64}};
  e = libamm::relative_frobenius_error(libamm::amm("block_lra", A, B, p), torch::matmul(A, B));
  AMM_CHECK(e < 1e-4, "block_lra on block-diagonal input: err %.3g", e);
  p.knobs = {{"block_rows", 0}, {"block_inner", 0}};
  const double global = libamm::relative_frobenius_error(libamm::amm("block_lra", A, B, p),
                                                         torch::matmul(A, B));
  AMM_CHECK(global > 0.1, "global rank-4 should miss block structure, err %.3g", global);

  // Decaying spectrum: error falls with the rank.
  torch::manual_seed(23);
  auto U = std::get<0>(torch::linalg_qr(torch::randn({256, 256})));
  auto V = std::get<0>(torch::linalg_qr(torch::randn({256, 256})));
  auto s = torch::pow(0.9, torch::arange(256, torch::kFloat));
  auto Ad = torch::matmul(U * s.unsqueeze(0), V.t());
  amm_test::check_decreasing("block_lra", Ad, torch::randn({256, 64}), {4, 16, 64});
}

static void test_pq() {
  std::printf("pq\n");
  // Clustered rows: 8 distinct row prototypes + tiny noise -> K = 8 is
  // essentially exact, K = 2 is not.
  torch::manual_seed(31);
  auto protos = torch::randn({8, 64});
  auto labels = torch::randint(8, {256}, torch::kLong);
  auto A = protos.index_select(0, labels) + 1e-3 * torch::randn({256, 64});
  auto B = torch::randn({64, 32});
  auto exact = torch::matmul(A, B);
  libamm::AmmParams p;
  p.sketch_size = 8;
  double e8 = 1e9;
  // k-means can land in a local minimum from one seeding; the best of a
  // few seeds must find the clusters.
  for (uint64_t seed = 0; seed < 4; ++seed) {
    p.seed = seed;
    e8 = std::min(e8, libamm::relative_frobenius_error(libamm::amm("pq", A, B, p), exact));
  }
  AMM_CHECK(e8 < 1e-2, "pq K=8 on 8 clusters: err %.3g", e8);

  // K >= m: every row its own centroid -> exact.
  auto small = amm_test::gaussian_pair(20, 33, 7, 32);
  p.sketch_size = 20;
  p.knobs = {{"subspace_dim", 5}};  // 33 not a multiple of 5: exercises padding
  const double ex = libamm::relative_frobenius_error(
      libamm::amm("pq", small.first, small.second, p),
      torch::matmul(small.first, small.second));
  AMM_CHECK(ex < 1e-5, "pq with K >= m must be exact, err %.3g", ex);

  auto g = amm_test::gaussian_pair(512, 64, 32, 33);
  amm_test::check_decreasing("pq", g.first, g.second, {4, 16, 64});
}

int main() {
  torch::set_num_threads(1);
  test_block_lra();
  test_pq();
  return amm_test::finish("test_lowrank");
}
