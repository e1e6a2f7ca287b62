// Shared helpers for the gtest suites.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "dashinfer/dashinfer.h"

namespace dashinfer_test {

inline std::vector<float> RandVec(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

inline float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

inline dashinfer::ModelConfig SmallConfig(dashinfer::NormType norm = dashinfer::NormType::kRMSNorm) {
  dashinfer::ModelConfig c;
  c.name = "test";
  c.num_layers = 2;
  c.hidden_size = 48;
  c.num_heads = 6;
  c.num_kv_heads = 2;  // GQA group of 3
  c.head_dim = 8;
  c.ffn_size = 96;
  c.vocab_size = 101;
  c.max_seq_len = 40;
  c.norm_type = norm;
  return c;
}

inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/dashinfer_test_" + std::to_string(::getpid()) + "_" + name;
}

// Sets an environment variable for one scope (engines read AS_PROFILE at construction).
class ScopedEnv {
 public:
  ScopedEnv(const char* k, const char* v) : k_(k) {
    const char* old = std::getenv(k);
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv(k, v, 1);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(k_.c_str(), old_.c_str(), 1);
    else ::unsetenv(k_.c_str());
  }

 private:
  std::string k_, old_;
  bool had_ = false;
};

}  // namespace dashinfer_test
