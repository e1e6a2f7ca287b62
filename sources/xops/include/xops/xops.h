/* xops: a C API over C++ kernels (CPU, and NVIDIA when built with --nv_gpu=y). */
#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
/* 0: CPU, 1: NVIDIA. Pointers are host pointers; the NVIDIA path copies in and out. */
int xops_has_nvidia(void);
int xops_add(int device, const float* a, const float* b, float* out, size_t n);
int xops_rms_norm(int device, const float* x, const float* w, float* out, size_t rows,
                  size_t dim, float eps);
const char* xops_last_error(void);
#ifdef __cplusplus
}
#endif
