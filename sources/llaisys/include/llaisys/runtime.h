/* Per-device runtime C API: one entry point per function, the device type
 * selects the backend (CPU or NVIDIA). In a build without CUDA the NVIDIA
 * backend reports 0 devices and fails every other call with
 * LLAISYS_ERROR_UNSUPPORTED. */
#ifndef LLAISYS_RUNTIME_H
#define LLAISYS_RUNTIME_H

#include "llaisys.h"

#define LLAISYS_RT LLAISYS_EXTERN_C LLAISYS_API llaisysStatus_t

/* Devices. With no GPU/driver the NVIDIA count is 0 (not an error). */
LLAISYS_RT llaisysGetDeviceCount(llaisysDeviceType_t dev, int *count);
LLAISYS_RT llaisysSetDevice(llaisysDeviceType_t dev, int device_id);
LLAISYS_RT llaisysGetDevice(llaisysDeviceType_t dev, int *device_id);
LLAISYS_RT llaisysDeviceSynchronize(llaisysDeviceType_t dev);

/* Streams (CPU: a dummy non-null token; work runs synchronously). */
LLAISYS_RT llaisysStreamCreate(llaisysDeviceType_t dev, llaisysStream_t *stream);
LLAISYS_RT llaisysStreamDestroy(llaisysDeviceType_t dev, llaisysStream_t stream);
LLAISYS_RT llaisysStreamSynchronize(llaisysDeviceType_t dev, llaisysStream_t stream);

/* Device memory on the current device of `dev`. */
LLAISYS_RT llaisysMalloc(llaisysDeviceType_t dev, size_t bytes, void **ptr);
LLAISYS_RT llaisysFree(llaisysDeviceType_t dev, void *ptr);
/* Page-locked host memory (cudaMallocHost on NVIDIA, plain malloc on CPU). */
LLAISYS_RT llaisysMallocHost(llaisysDeviceType_t dev, size_t bytes, void **ptr);
LLAISYS_RT llaisysFreeHost(llaisysDeviceType_t dev, void *ptr);

/* Copies. kind may be LLAISYS_MEMCPY_AUTO. The async variant is ordered on
 * `stream` (NULL = default stream); on CPU it is synchronous. */
LLAISYS_RT llaisysMemcpy(llaisysDeviceType_t dev, void *dst, const void *src,
                         size_t bytes, llaisysMemcpyKind_t kind);
LLAISYS_RT llaisysMemcpyAsync(llaisysDeviceType_t dev, void *dst, const void *src,
                              size_t bytes, llaisysMemcpyKind_t kind,
                              llaisysStream_t stream);
/* The kind AUTO would resolve to for this pointer pair. */
LLAISYS_RT llaisysMemcpyResolveKind(llaisysDeviceType_t dev, void *dst,
                                    const void *src, llaisysMemcpyKind_t *kind);
LLAISYS_RT llaisysMemset(llaisysDeviceType_t dev, void *ptr, int value, size_t bytes);

/* Events, for timing kernels (cudaEvent on NVIDIA, steady_clock on CPU). */
LLAISYS_RT llaisysEventCreate(llaisysDeviceType_t dev, llaisysEvent_t *event);
LLAISYS_RT llaisysEventDestroy(llaisysDeviceType_t dev, llaisysEvent_t event);
LLAISYS_RT llaisysEventRecord(llaisysDeviceType_t dev, llaisysEvent_t event,
                              llaisysStream_t stream);
LLAISYS_RT llaisysEventSynchronize(llaisysDeviceType_t dev, llaisysEvent_t event);
LLAISYS_RT llaisysEventElapsedTime(llaisysDeviceType_t dev, llaisysEvent_t start,
                                   llaisysEvent_t end, float *ms);

#undef LLAISYS_RT
#endif /* LLAISYS_RUNTIME_H */
