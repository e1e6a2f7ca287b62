// CPU operators against straightforward reference loops.
#include <unistd.h>

#include <array>
#include <numeric>

#include "dashinfer/ops.h"
#include "test_util.h"

using namespace dashinfer;
using dashinfer_test::MaxAbsDiff;
using dashinfer_test::RandVec;

TEST(Ops, GemmMatchesNaive) {
  for (auto [M, N, K] : std::vector<std::array<int, 3>>{{1, 1, 1}, {1, 130, 33}, {7, 65, 19}, {16, 64, 64}, {3, 200, 5}}) {
    auto A = RandVec(size_t(M) * K, 1), B = RandVec(size_t(K) * N, 2);
    std::vector<float> C(size_t(M) * N), R(size_t(M) * N, 0.f);
    cpu::Gemm(M, N, K, A.data(), B.data(), C.data());
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += double(A[i * K + k]) * B[k * N + j];
        R[i * N + j] = float(s);
      }
    EXPECT_LT(MaxAbsDiff(C, R), 1e-4f) << M << "x" << N << "x" << K;
  }
}

TEST(Ops, RMSNormMatchesNaive) {
  const int rows = 5, cols = 37;
  auto x = RandVec(rows * cols, 3), g = RandVec(cols, 4, 0.5f, 1.5f);
  std::vector<float> y(x.size()), r(x.size());
  cpu::RMSNorm(x.data(), g.data(), y.data(), rows, cols, 1e-5f);
  for (int i = 0; i < rows; ++i) {
    double ss = 0;
    for (int c = 0; c < cols; ++c) ss += x[i * cols + c] * x[i * cols + c];
    const double inv = 1.0 / std::sqrt(ss / cols + 1e-5);
    for (int c = 0; c < cols; ++c) r[i * cols + c] = float(x[i * cols + c] * inv * g[c]);
  }
  EXPECT_LT(MaxAbsDiff(y, r), 1e-5f);
}

TEST(Ops, LayerNormZeroMeanUnitVar) {
  const int rows = 4, cols = 64;
  auto x = RandVec(rows * cols, 5, -3.f, 5.f);
  std::vector<float> g(cols, 1.f), b(cols, 0.f), y(x.size());
  cpu::LayerNorm(x.data(), g.data(), b.data(), y.data(), rows, cols, 1e-6f);
  for (int i = 0; i < rows; ++i) {
    double m = 0, v = 0;
    for (int c = 0; c < cols; ++c) m += y[i * cols + c];
    m /= cols;
    for (int c = 0; c < cols; ++c) v += (y[i * cols + c] - m) * (y[i * cols + c] - m);
    EXPECT_NEAR(m, 0.0, 1e-5);
    EXPECT_NEAR(v / cols, 1.0, 1e-4);
  }
  // gamma/beta are applied affinely
  auto g2 = RandVec(cols, 6), b2 = RandVec(cols, 7);
  std::vector<float> y2(x.size());
  cpu::LayerNorm(x.data(), g2.data(), b2.data(), y2.data(), rows, cols, 1e-6f);
  for (int i = 0; i < rows * cols; ++i) EXPECT_NEAR(y2[i], y[i] * g2[i % cols] + b2[i % cols], 1e-5);
}

TEST(Ops, RotaryMatchesFormulaAndPreservesNorm) {
  const int n = 3, heads = 2, d = 8, pos0 = 5;
  const float theta = 10000.f;
  auto x = RandVec(n * heads * d, 8);
  auto y = x;
  cpu::Rotary(y.data(), n, heads, d, pos0, theta);
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < heads; ++h) {
      const float* a = &x[(i * heads + h) * d];
      const float* b = &y[(i * heads + h) * d];
      double na = 0, nb = 0;
      for (int j = 0; j < d / 2; ++j) {
        const double ang = (pos0 + i) * std::pow(double(theta), -2.0 * j / d);
        EXPECT_NEAR(b[j], a[j] * std::cos(ang) - a[j + d / 2] * std::sin(ang), 1e-5);
        EXPECT_NEAR(b[j + d / 2], a[j + d / 2] * std::cos(ang) + a[j] * std::sin(ang), 1e-5);
      }
      for (int j = 0; j < d; ++j) na += a[j] * a[j], nb += b[j] * b[j];
      EXPECT_NEAR(na, nb, 1e-4);
    }
  auto z = x;  // position 0 is the identity
  cpu::Rotary(z.data(), 1, heads, d, 0, theta);
  for (int j = 0; j < heads * d; ++j) EXPECT_FLOAT_EQ(z[j], x[j]);
}

TEST(Ops, SoftmaxStableAndNormalised) {
  std::vector<float> x = {1000.f, 1001.f, 1002.f, -5.f, 0.f, 5.f};
  cpu::Softmax(x.data(), 2, 3);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NEAR(x[r * 3] + x[r * 3 + 1] + x[r * 3 + 2], 1.f, 1e-6);
    for (int c = 0; c < 3; ++c) EXPECT_TRUE(std::isfinite(x[r * 3 + c]));
  }
  const double e0 = 1.0, e1 = std::exp(1.0), e2 = std::exp(2.0);
  EXPECT_NEAR(x[2], e2 / (e0 + e1 + e2), 1e-6);
}

// Attention over a prefill chunk + a cached prefix vs a full naive recompute.
TEST(Ops, CausalGQAAttentionMatchesNaive) {
  const int heads = 6, kvh = 2, d = 4, pos0 = 3, n = 4, T = pos0 + n, group = heads / kvh;
  auto q = RandVec(n * heads * d, 9), k = RandVec(T * kvh * d, 10), v = RandVec(T * kvh * d, 11);
  std::vector<float> out(n * heads * d), ref(out.size(), 0.f);
  cpu::Attention(q.data(), k.data(), v.data(), out.data(), n, pos0, heads, kvh, d);
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < heads; ++h) {
      const int g = h / group, len = pos0 + i + 1;
      std::vector<double> s(len);
      double mx = -1e30, sum = 0;
      for (int t = 0; t < len; ++t) {
        double dot = 0;
        for (int j = 0; j < d; ++j) dot += q[(i * heads + h) * d + j] * k[(t * kvh + g) * d + j];
        s[t] = dot / std::sqrt(double(d));
        mx = std::max(mx, s[t]);
      }
      for (int t = 0; t < len; ++t) sum += (s[t] = std::exp(s[t] - mx));
      for (int j = 0; j < d; ++j) {
        double o = 0;
        for (int t = 0; t < len; ++t) o += s[t] / sum * v[(t * kvh + g) * d + j];
        ref[(i * heads + h) * d + j] = float(o);
      }
    }
  EXPECT_LT(MaxAbsDiff(out, ref), 1e-5f);
}

TEST(Ops, SwiGLUAddEmbeddingArgmax) {
  auto g = RandVec(100, 12, -6.f, 6.f), u = RandVec(100, 13);
  std::vector<float> o(100);
  cpu::SwiGLU(g.data(), u.data(), o.data(), 100);
  for (int i = 0; i < 100; ++i) EXPECT_NEAR(o[i], g[i] / (1 + std::exp(-g[i])) * u[i], 1e-6);
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  cpu::Add(a.data(), b.data(), 3);
  EXPECT_EQ(a, (std::vector<float>{11, 22, 33}));
  std::vector<float> table = {0, 1, 10, 11, 20, 21};
  std::vector<int32_t> ids = {2, 0};
  std::vector<float> e(4);
  cpu::Embedding(ids.data(), 2, table.data(), 2, e.data());
  EXPECT_EQ(e, (std::vector<float>{20, 21, 0, 1}));
  std::vector<float> l = {0.1f, 3.f, -1.f, 3.f};
  EXPECT_EQ(cpu::Argmax(l.data(), 4), 1);  // first maximum wins ties
}
