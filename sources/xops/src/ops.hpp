#pragma once
#include <cstddef>
#include <stdexcept>

namespace xops {
namespace cpu {
void add(const float* a, const float* b, float* out, std::size_t n);
void rms_norm(const float* x, const float* w, float* out, std::size_t rows, std::size_t dim,
              float eps);
}  // namespace cpu
namespace nvidia {
void add(const float* a, const float* b, float* out, std::size_t n);
void rms_norm(const float* x, const float* w, float* out, std::size_t rows, std::size_t dim,
              float eps);
}  // namespace nvidia
}  // namespace xops
