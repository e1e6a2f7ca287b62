#include <string>

#include "ops.hpp"
#include "xops/xops.h"

namespace {
thread_local std::string last_error;
}

extern "C" {
int xops_has_nvidia(void) {
#ifdef XOPS_NVIDIA
  return 1;
#else
  return 0;
#endif
}

const char* xops_last_error(void) { return last_error.c_str(); }

int xops_add(int device, const float* a, const float* b, float* out, size_t n) {
  try {
    if (device == 1) {
#ifdef XOPS_NVIDIA
      xops::nvidia::add(a, b, out, n);
      return 0;
#else
      throw std::runtime_error("xops was built without --nv_gpu=y");
#endif
    }
    xops::cpu::add(a, b, out, n);
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return -1;
  }
}

int xops_rms_norm(int device, const float* x, const float* w, float* out, size_t rows,
                  size_t dim, float eps) {
  try {
    if (device == 1) {
#ifdef XOPS_NVIDIA
      xops::nvidia::rms_norm(x, w, out, rows, dim, eps);
      return 0;
#else
      throw std::runtime_error("xops was built without --nv_gpu=y");
#endif
    }
    xops::cpu::rms_norm(x, w, out, rows, dim, eps);
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return -1;
  }
}
}
