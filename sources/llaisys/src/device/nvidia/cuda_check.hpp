// CUDA error checking for the NVIDIA backend: every runtime call goes through
// LLAISYS_CUDA_CHECK, which throws llaisys::Error carrying the failed call
// text, the CUDA error name/number and cudaGetErrorString(). Kernel launches are
// checked with LLAISYS_CUDA_CHECK_LAUNCH (launch-configuration errors only;
// asynchronous faults surface at the next synchronizing call).
#pragma once

#include "../../core/error.hpp"

#include <cuda_runtime.h>

namespace llaisys::nvidia {

[[noreturn]] inline void throwCudaError(cudaError_t err, const char *call, const char *file, int line) {
    // Reset the (non-sticky) error state so the next, unrelated call does not
    // report this failure again through cudaGetLastError().
    (void)cudaGetLastError();
    llaisysStatus_t code = err == cudaErrorMemoryAllocation ? LLAISYS_ERROR_OUT_OF_MEMORY : LLAISYS_ERROR_CUDA;
    fail(code, "CUDA error: ", call, " failed: ", cudaGetErrorName(err), " (", int(err), "): ",
         cudaGetErrorString(err), " [", file, ":", line, "]");
}

} // namespace llaisys::nvidia

#define LLAISYS_CUDA_CHECK(call)                                                    \
    do {                                                                            \
        cudaError_t llaisys_err_ = (call);                                          \
        if (llaisys_err_ != cudaSuccess)                                            \
            ::llaisys::nvidia::throwCudaError(llaisys_err_, #call, __FILE__, __LINE__); \
    } while (0)

#define LLAISYS_CUDA_CHECK_LAUNCH(kernel_name)                                      \
    do {                                                                            \
        cudaError_t llaisys_err_ = cudaGetLastError();                              \
        if (llaisys_err_ != cudaSuccess)                                            \
            ::llaisys::nvidia::throwCudaError(llaisys_err_, "launch of " kernel_name, \
                                              __FILE__, __LINE__);                  \
    } while (0)
