// Registry, exact baseline and the sampling algorithms (crs, importance).
#include <torch/torch.h>

#include <set>
#include <stdexcept>

#include "test_util.h"

using amm_test::failures;

static void test_registry() {
  const auto names = libamm::list();
  const std::set<std::string> expected = {"block_lra", "cooccurring_fd", "count_sketch",
                                          "crs", "exact", "importance", "pq",
                                          "random_projection"};
  AMM_CHECK(std::set<std::string>(names.begin(), names.end()) == expected,
            "unexpected registry contents (%zu names)", names.size());
  for (const auto& n : names) {
    auto a = libamm::create(n);
    AMM_CHECK(a && a->name() == n, "create(%s) returned '%s'", n.c_str(),
              a ? a->name().c_str() : "null");
  }
  AMM_CHECK(libamm::create("weighted_cr")->name() == "importance", "alias weighted_cr");
  bool threw = false;
  try {
    libamm::create("no_such_algo");
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  AMM_CHECK(threw, "create() of an unknown name must throw");

  // Unknown knob and bad shapes are rejected.
  auto ab = amm_test::gaussian_pair(8, 16, 4, 1);
  libamm::AmmParams p;
  p.knobs["no_such_knob"] = 1;
  threw = false;
  try { libamm::amm("crs", ab.first, ab.second, p); } catch (const c10::Error&) { threw = true; }
  AMM_CHECK(threw, "unknown knob must throw");
  threw = false;
  try { libamm::amm("crs", ab.first, ab.first, {}); } catch (const c10::Error&) { threw = true; }
  AMM_CHECK(threw, "shape mismatch must throw");
}

static void test_exact() {
  auto ab = amm_test::gaussian_pair(64, 96, 32, 2);
  auto C = libamm::amm("exact", ab.first, ab.second);
  AMM_CHECK(torch::equal(C, torch::matmul(ab.first, ab.second)), "exact != A@B");
  auto ab64 = amm_test::gaussian_pair(16, 8, 4, 3);
  auto C64 = libamm::amm("exact", ab64.first.to(torch::kDouble), ab64.second.to(torch::kDouble));
  AMM_CHECK(C64.scalar_type() == torch::kDouble, "dtype must be preserved");
}

static void test_sampling(const std::string& algo) {
  std::printf("%s\n", algo.c_str());
  auto ab = amm_test::gaussian_pair(64, 1024, 48, 4);
  const auto& A = ab.first;
  const auto& B = ab.second;
  // Standard AMM bound: E||C - AB||_F <= ||A||_F ||B||_F / sqrt(k).
  const double scale = (A.norm() * B.norm() / torch::matmul(A, B).norm()).item<double>();
  for (int64_t k : {64, 256}) {
    const double e = amm_test::mean_error(algo, A, B, k);
    AMM_CHECK(e < 1.5 * scale / std::sqrt(double(k)), "%s k=%lld err %.3f bound %.3f",
              algo.c_str(), (long long)k, e, 1.5 * scale / std::sqrt(double(k)));
  }
  amm_test::check_decreasing(algo, A, B, {32, 128, 512});

  // Same seed -> same result; different seed -> different result.
  libamm::AmmParams p;
  p.sketch_size = 64;
  auto c1 = libamm::amm(algo, A, B, p), c2 = libamm::amm(algo, A, B, p);
  AMM_CHECK(torch::equal(c1, c2), "%s not reproducible", algo.c_str());
  p.seed = 7;
  AMM_CHECK(!torch::equal(c1, libamm::amm(algo, A, B, p)), "%s ignores seed", algo.c_str());
}

static void test_importance_exact_when_large() {
  // Bernoulli importance sampling keeps every pair once k >= n: exact.
  auto ab = amm_test::gaussian_pair(16, 40, 8, 5);
  libamm::AmmParams p;
  p.sketch_size = 40;
  auto C = libamm::amm("importance", ab.first, ab.second, p);
  AMM_CHECK(torch::allclose(C, torch::matmul(ab.first, ab.second), 1e-4, 1e-4),
            "importance with k = n must be exact");
}

int main() {
  torch::set_num_threads(1);  // ctest may run tests in parallel on 2 cores
  test_registry();
  test_exact();
  test_sampling("crs");
  test_sampling("importance");
  test_importance_exact_when_large();
  return amm_test::finish("test_sampling");
}
