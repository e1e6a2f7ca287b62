// Sketching algorithms: count_sketch, random_projection, cooccurring_fd.
#include <torch/torch.h>

#include "test_util.h"

static void test_random_sketch(const std::string& algo) {
  std::printf("%s\n", algo.c_str());
  auto ab = amm_test::gaussian_pair(64, 1024, 48, 11);
  const auto& A = ab.first;
  const auto& B = ab.second;
  const double scale = (A.norm() * B.norm() / torch::matmul(A, B).norm()).item<double>();
  // E||C - AB||_F^2 <= 2 ||A||_F^2 ||B||_F^2 / k for both sketches.
  for (int64_t k : {64, 256}) {
    const double bound = 1.5 * std::sqrt(2.0) * scale / std::sqrt(double(k));
    const double e = amm_test::mean_error(algo, A, B, k);
    AMM_CHECK(e < bound, "%s k=%lld err %.3f bound %.3f", algo.c_str(), (long long)k, e, bound);
  }
  amm_test::check_decreasing(algo, A, B, {32, 128, 512});

  libamm::AmmParams p;
  p.sketch_size = 32;
  AMM_CHECK(torch::equal(libamm::amm(algo, A, B, p), libamm::amm(algo, A, B, p)),
            "%s not reproducible", algo.c_str());
}

static void test_cooccurring_fd() {
  std::printf("cooccurring_fd\n");
  // Deterministic bound: ||AB - C||_2 <= 2 ||A||_F ||B||_F / l.
  auto ab = amm_test::gaussian_pair(64, 1024, 48, 12);
  const auto& A = ab.first;
  const auto& B = ab.second;
  auto exact = torch::matmul(A, B);
  for (int64_t l : {16, 32, 64}) {
    libamm::AmmParams p;
    p.sketch_size = l;
    auto C = libamm::amm("cooccurring_fd", A, B, p);
    const double spec = torch::linalg_matrix_norm(C - exact, 2).item<double>();
    const double bound = 2.0 * (A.norm() * B.norm()).item<double>() / l;
    AMM_CHECK(spec <= bound * 1.001, "coofd l=%lld spectral err %.3g > bound %.3g",
              (long long)l, spec, bound);
  }
  amm_test::check_decreasing("cooccurring_fd", A, B, {8, 32, 64});

  // Rank-4 stream, l = 16 > 2 * rank: no mass is ever shrunk away -> exact.
  auto lr = amm_test::low_rank_pair(64, 512, 48, 4, 13);
  auto lrA = lr.first;
  auto lrB = torch::matmul(torch::randn({512, 4}), torch::randn({4, 48}));
  libamm::AmmParams p;
  p.sketch_size = 16;
  auto C = libamm::amm("cooccurring_fd", lrA, lrB, p);
  const double e = libamm::relative_frobenius_error(C, torch::matmul(lrA, lrB));
  AMM_CHECK(e < 1e-4, "coofd on rank-4 input should be exact, err %.3g", e);
}

int main() {
  torch::set_num_threads(1);
  test_random_sketch("count_sketch");
  test_random_sketch("random_projection");
  test_cooccurring_fd();
  return amm_test::finish("test_sketching");
}
