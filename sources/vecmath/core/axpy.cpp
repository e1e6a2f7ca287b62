#include "vecmath.h"

namespace vecmath {
void axpy(double alpha, const double* x, double* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}
}  // namespace vecmath
