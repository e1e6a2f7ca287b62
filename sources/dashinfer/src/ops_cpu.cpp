// CPU operators. Parallelised with OpenMP where it pays; each output element
// is owned by exactly one thread and accumulated in a fixed order, so results
// are bit-identical for any OMP_NUM_THREADS (generate() determinism relies on
// this). Without OpenMP (or under TSan, see CMakeLists) the pragmas are inert.
#include <algorithm>
#include <cmath>
#include <vector>

#include "dashinfer/ops.h"
#include "logging.h"

namespace dashinfer {
namespace cpu {

void Gemm(int M, int N, int K, const float* A, const float* B, float* C) {
  CHECK(M >= 0 && N >= 0 && K >= 0) << "Gemm: bad shape " << M << "x" << N << "x" << K;
  // Tile over (row, 64-column block) so that decode steps (M == 1) still
  // spread over threads; i-k-j order streams rows of B and C contiguously.
  constexpr int kNB = 64;
  const int nblocks = (N + kNB - 1) / kNB;
#pragma omp parallel for collapse(2) schedule(static)
  for (int i = 0; i < M; ++i) {
    for (int jb = 0; jb < nblocks; ++jb) {
      const int j0 = jb * kNB, j1 = std::min(N, j0 + kNB);
      float acc[kNB] = {0};
      const float* a = A + static_cast<int64_t>(i) * K;
      for (int k = 0; k < K; ++k) {
        const float av = a[k];
        const float* b = B + static_cast<int64_t>(k) * N;
        for (int j = j0; j < j1; ++j) acc[j - j0] += av * b[j];
      }
      float* c = C + static_cast<int64_t>(i) * N;
      for (int j = j0; j < j1; ++j) c[j] = acc[j - j0];
    }
  }
}

void RMSNorm(const float* x, const float* gamma, float* y, int rows, int cols, float eps) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<int64_t>(r) * cols;
    float* yr = y + static_cast<int64_t>(r) * cols;
    double ss = 0;
    for (int c = 0; c < cols; ++c) ss += static_cast<double>(xr[c]) * xr[c];
    const float inv = 1.0f / std::sqrt(static_cast<float>(ss / cols) + eps);
    for (int c = 0; c < cols; ++c) yr[c] = xr[c] * inv * gamma[c];
  }
}

void LayerNorm(const float* x, const float* gamma, const float* beta, float* y, int rows,
               int cols, float eps) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<int64_t>(r) * cols;
    float* yr = y + static_cast<int64_t>(r) * cols;
    double mean = 0, var = 0;
    for (int c = 0; c < cols; ++c) mean += xr[c];
    mean /= cols;
    for (int c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= cols;
    const float inv = 1.0f / std::sqrt(static_cast<float>(var) + eps);
    const float m = static_cast<float>(mean);
    for (int c = 0; c < cols; ++c) yr[c] = (xr[c] - m) * inv * gamma[c] + beta[c];
  }
}

void Rotary(float* x, int n, int heads, int head_dim, int pos0, float theta) {
  CHECK_EQ(head_dim % 2, 0) << "Rotary needs an even head_dim";
  const int half = head_dim / 2;
#pragma omp parallel for collapse(2) schedule(static)
  for (int i = 0; i < n; ++i) {
    for (int h = 0; h < heads; ++h) {
      float* v = x + (static_cast<int64_t>(i) * heads + h) * head_dim;
      const float pos = static_cast<float>(pos0 + i);
      for (int j = 0; j < half; ++j) {
        // Same float formula as the CUDA kernel and the numpy reference.
        const float inv_freq = std::pow(theta, -2.0f * j / head_dim);
        const float ang = pos * inv_freq;
        const float c = std::cos(ang), s = std::sin(ang);
        const float a = v[j], b = v[j + half];
        v[j] = a * c - b * s;
        v[j + half] = b * c + a * s;
      }
    }
  }
}

static void SoftmaxRow(float* x, int cols) {
  float mx = -INFINITY;
  for (int c = 0; c < cols; ++c) mx = std::max(mx, x[c]);
  float sum = 0;
  for (int c = 0; c < cols; ++c) {
    x[c] = std::exp(x[c] - mx);
    sum += x[c];
  }
  const float inv = 1.0f / sum;
  for (int c = 0; c < cols; ++c) x[c] *= inv;
}

void Softmax(float* x, int rows, int cols) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; ++r) SoftmaxRow(x + static_cast<int64_t>(r) * cols, cols);
}

void Attention(const float* q, const float* k_cache, const float* v_cache, float* out, int n,
               int pos0, int heads, int kv_heads, int head_dim) {
  CHECK(kv_heads > 0 && heads % kv_heads == 0) << "GQA: heads % kv_heads != 0";
  const int group = heads / kv_heads;
  const int kv_stride = kv_heads * head_dim;  // one cache row = one position
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
#pragma omp parallel
  {
    std::vector<float> scores(pos0 + n);  // per-thread scratch
#pragma omp for collapse(2) schedule(static)
    for (int i = 0; i < n; ++i) {
      for (int h = 0; h < heads; ++h) {
        const int kvh = h / group, len = pos0 + i + 1;  // causal: keys 0..pos0+i
        const float* qv = q + (static_cast<int64_t>(i) * heads + h) * head_dim;
        for (int t = 0; t < len; ++t) {
          const float* kv = k_cache + static_cast<int64_t>(t) * kv_stride + kvh * head_dim;
          float dot = 0;
          for (int d = 0; d < head_dim; ++d) dot += qv[d] * kv[d];
          scores[t] = dot * scale;
        }
        SoftmaxRow(scores.data(), len);
        float* o = out + (static_cast<int64_t>(i) * heads + h) * head_dim;
        for (int d = 0; d < head_dim; ++d) o[d] = 0;
        for (int t = 0; t < len; ++t) {
          const float* vv = v_cache + static_cast<int64_t>(t) * kv_stride + kvh * head_dim;
          for (int d = 0; d < head_dim; ++d) o[d] += scores[t] * vv[d];
        }
      }
    }
  }
}

void SwiGLU(const float* gate, const float* up, float* out, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void Add(float* x, const float* y, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void Embedding(const int32_t* ids, int n, const float* table, int dim, float* out) {
  for (int i = 0; i < n; ++i)
    std::copy(table + static_cast<int64_t>(ids[i]) * dim,
              table + static_cast<int64_t>(ids[i] + 1) * dim, out + static_cast<int64_t>(i) * dim);
}

int Argmax(const float* x, int n) {
  CHECK_GT(n, 0);
  return static_cast<int>(std::max_element(x, x + n) - x);
}

}  // namespace cpu
}  // namespace dashinfer
