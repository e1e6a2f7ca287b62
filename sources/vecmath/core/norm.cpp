#include <cmath>

#include "vecmath.h"

namespace vecmath {
double norm2(const double* a, std::size_t n) { return std::sqrt(dot(a, a, n)); }
}  // namespace vecmath
