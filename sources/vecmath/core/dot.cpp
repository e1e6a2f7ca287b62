#include "vecmath.h"

namespace vecmath {
double dot(const double* a, const double* b, std::size_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t i = 0;
#ifdef VECMATH_UNROLL
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
#endif
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}
bool unrolled() {
#ifdef VECMATH_UNROLL
  return true;
#else
  return false;
#endif
}
}  // namespace vecmath
