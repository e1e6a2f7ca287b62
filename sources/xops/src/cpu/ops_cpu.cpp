#include <cmath>

#include "../ops.hpp"

namespace xops::cpu {
void add(const float* a, const float* b, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
void rms_norm(const float* x, const float* w, float* out, std::size_t rows, std::size_t dim,
              float eps) {
  for (std::size_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::size_t i = 0; i < dim; ++i) s += double(x[r * dim + i]) * x[r * dim + i];
    const float inv = 1.0f / std::sqrt(float(s / dim) + eps);
    for (std::size_t i = 0; i < dim; ++i) out[r * dim + i] = x[r * dim + i] * inv * w[i];
  }
}
}  // namespace xops::cpu
