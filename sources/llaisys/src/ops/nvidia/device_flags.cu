// A per-device error flag written by kernels that detect bad input they cannot
// report otherwise (e.g. an out-of-range embedding index). It is defined here
// and referenced as `extern __device__` from other .cu files, which is exactly
// the cross-translation-unit device reference that needs
// CUDA_SEPARABLE_COMPILATION and a device-link step: if the build got that
// wrong, libllaisys.so would not link or load.
#include "common.cuh"

namespace llaisys::nvidia {

__device__ int g_device_error_flag = 0;

void resetDeviceErrorFlag() {
    int zero = 0;
    LLAISYS_CUDA_CHECK(cudaMemcpyToSymbol(g_device_error_flag, &zero, sizeof(int)));
}

int readDeviceErrorFlag() {
    int v = 0;
    LLAISYS_CUDA_CHECK(cudaMemcpyFromSymbol(&v, g_device_error_flag, sizeof(int)));
    return v;
}

} // namespace llaisys::nvidia
