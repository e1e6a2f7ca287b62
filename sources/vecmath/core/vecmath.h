#pragma once
#include <cstddef>

namespace vecmath {
double dot(const double* a, const double* b, std::size_t n);
double norm2(const double* a, std::size_t n);
void axpy(double alpha, const double* x, double* y, std::size_t n);
bool unrolled();
}  // namespace vecmath
