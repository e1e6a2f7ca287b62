/* Common C types of the LLAISYS C API.
 *
 * Conventions (all headers under include/llaisys/):
 *  - every function that can fail returns llaisysStatus_t (0 == LLAISYS_OK);
 *    results come back through out-pointers;
 *  - on failure the message of the C++ exception (for CUDA failures: the failed
 *    call and cudaGetErrorString) is kept per thread and can be read with
 *    llaisysGetLastError() until the next failing call on that thread.
 */
#ifndef LLAISYS_LLAISYS_H
#define LLAISYS_LLAISYS_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define LLAISYS_API __declspec(dllexport)
#else
#define LLAISYS_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
#define LLAISYS_EXTERN_C extern "C"
#else
#define LLAISYS_EXTERN_C
#endif

typedef enum {
    LLAISYS_DEVICE_CPU = 0,
    LLAISYS_DEVICE_NVIDIA = 1,
    LLAISYS_DEVICE_TYPE_COUNT
} llaisysDeviceType_t;

/* f32/f16/bf16 are the compute types; i64 is for indices (argmax, embedding,
 * rope positions). */
typedef enum {
    LLAISYS_DTYPE_F32 = 0,
    LLAISYS_DTYPE_F16 = 1,
    LLAISYS_DTYPE_BF16 = 2,
    LLAISYS_DTYPE_I64 = 3,
} llaisysDataType_t;

typedef enum {
    LLAISYS_OK = 0,
    LLAISYS_ERROR_INVALID_ARGUMENT = 1, /* bad shape, dtype, device, null pointer */
    LLAISYS_ERROR_UNSUPPORTED = 2,      /* e.g. NVIDIA device in a CPU-only build */
    LLAISYS_ERROR_CUDA = 3,             /* a CUDA runtime/cuBLAS call failed */
    LLAISYS_ERROR_OUT_OF_MEMORY = 4,
    LLAISYS_ERROR_INTERNAL = 5,
} llaisysStatus_t;

/* Memcpy direction. AUTO lets the runtime pick H2H/H2D/D2H/D2D from where the
 * pointers live (cudaPointerGetAttributes). */
typedef enum {
    LLAISYS_MEMCPY_H2H = 0,
    LLAISYS_MEMCPY_H2D = 1,
    LLAISYS_MEMCPY_D2H = 2,
    LLAISYS_MEMCPY_D2D = 3,
    LLAISYS_MEMCPY_AUTO = 4,
} llaisysMemcpyKind_t;

typedef void *llaisysStream_t; /* cudaStream_t on NVIDIA, unused token on CPU */
typedef void *llaisysEvent_t;  /* cudaEvent_t on NVIDIA, a timestamp on CPU */

/* Message of the last failed call on this thread ("" if none). The pointer is
 * valid until the next failing call on the same thread. */
LLAISYS_EXTERN_C LLAISYS_API const char *llaisysGetLastError(void);
LLAISYS_EXTERN_C LLAISYS_API void llaisysClearLastError(void);

/* 1 if the library was compiled with LLAISYS_ENABLE_CUDA=ON. */
LLAISYS_EXTERN_C LLAISYS_API int llaisysCudaCompiled(void);
/* 1 if the CUDA part uses cuBLAS for linear (LLAISYS_HAVE_CUBLAS). */
LLAISYS_EXTERN_C LLAISYS_API int llaisysCublasCompiled(void);
/* "" when NVIDIA devices are usable, otherwise why not: "built without CUDA",
 * or the CUDA error of cudaGetDeviceCount (e.g. no device, driver too old). */
LLAISYS_EXTERN_C LLAISYS_API const char *llaisysNvidiaUnavailableReason(void);
/* Human-readable build summary, e.g. "llaisys 0.1.0 cuda=1 cublas=0 archs=80;90". */
LLAISYS_EXTERN_C LLAISYS_API const char *llaisysBuildInfo(void);

LLAISYS_EXTERN_C LLAISYS_API size_t llaisysDtypeSize(llaisysDataType_t dtype);

#endif /* LLAISYS_LLAISYS_H */
