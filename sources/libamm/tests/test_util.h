// Minimal test harness for the C++ tests (no gtest dependency: the point of
// these executables is to exercise the installed API and to be heavy torch
// TUs like upstream's tests, not to pull in another framework).
#pragma once

#include <libamm/amm.h>

#include <torch/torch.h>

#include <cstdio>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace amm_test {

inline int& failures() {
  static int count = 0;
  return count;
}

#define AMM_CHECK(cond, ...)                                              \
  do {                                                                    \
    if (!(cond)) {                                                        \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s  ", __FILE__, __LINE__, \
                   #cond);                                                \
      std::fprintf(stderr, __VA_ARGS__);                                  \
      std::fprintf(stderr, "\n");                                         \
      ++amm_test::failures();                                             \
    }                                                                     \
  } while (0)

// Gaussian A (m x n), B (n x p) from a fixed seed.
inline std::pair<torch::Tensor, torch::Tensor> gaussian_pair(int64_t m, int64_t n,
                                                             int64_t p, uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({m, n}), torch::randn({n, p})};
}

// Rank-r A (m x n) and B = A^T W style correlated pair: the regime where
// AMM is accurate (||A||_F ||B||_F is not much larger than ||AB||_F).
inline std::pair<torch::Tensor, torch::Tensor> low_rank_pair(int64_t m, int64_t n,
                                                             int64_t p, int64_t r,
                                                             uint64_t seed) {
  torch::manual_seed(seed);
  auto A = torch::matmul(torch::randn({m, r}), torch::randn({r, n}));
  auto B = torch::matmul(torch::randn({n, r}), torch::randn({r, p}));
  B = B + torch::matmul(A.t(), torch::randn({m, p})) / std::sqrt(double(m));
  return {A, B};
}

// Mean relative error of `algo` over `seeds` seeds.
inline double mean_error(const std::string& algo, const torch::Tensor& A,
                         const torch::Tensor& B, int64_t k, int seeds = 4,
                         std::map<std::string, double> knobs = {}) {
  auto exact = torch::matmul(A, B);
  double total = 0.0;
  for (int s = 0; s < seeds; ++s) {
    libamm::AmmParams p;
    p.sketch_size = k;
    p.seed = 1000 + s;
    p.knobs = knobs;
    total += libamm::relative_frobenius_error(libamm::amm(algo, A, B, p), exact);
  }
  return total / seeds;
}

// Error must fall (on average over seeds) as the sketch grows.
inline void check_decreasing(const std::string& algo, const torch::Tensor& A,
                             const torch::Tensor& B, const std::vector<int64_t>& ks) {
  double prev = 1e300;
  for (auto k : ks) {
    const double e = mean_error(algo, A, B, k);
    std::printf("  %-18s k=%-4lld mean rel err %.4f\n", algo.c_str(),
                static_cast<long long>(k), e);
    AMM_CHECK(e < prev, "%s: error %.4f at k=%lld not below %.4f", algo.c_str(), e,
              static_cast<long long>(k), prev);
    prev = e;
  }
}

inline int finish(const char* name) {
  if (failures() == 0) {
    std::printf("%s: all checks passed\n", name);
    return 0;
  }
  std::fprintf(stderr, "%s: %d check(s) failed\n", name, failures());
  return 1;
}

}  // namespace amm_test
