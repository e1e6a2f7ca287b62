// extern "C" runtime entry points, build information and error reporting.
#include "api_common.hpp"
#include "llaisys/runtime.h"

using namespace llaisys;
using llaisys::api::checkOut;
using llaisys::api::guarded;

namespace {
thread_local std::string t_last_error;
}

llaisysStatus_t llaisys::api::setLastError(llaisysStatus_t code, const std::string &msg) {
    t_last_error = msg;
    return code;
}

extern "C" {

const char *llaisysGetLastError(void) { return t_last_error.c_str(); }
void llaisysClearLastError(void) { t_last_error.clear(); }

int llaisysCudaCompiled(void) {
#ifdef LLAISYS_ENABLE_CUDA
    return 1;
#else
    return 0;
#endif
}

int llaisysCublasCompiled(void) {
#ifdef LLAISYS_HAVE_CUBLAS
    return 1;
#else
    return 0;
#endif
}

const char *llaisysBuildInfo(void) {
#ifndef LLAISYS_CUDA_ARCHS
#define LLAISYS_CUDA_ARCHS "none"
#endif
    static const std::string info = std::string("llaisys " LLAISYS_VERSION " cuda=") +
                                    std::to_string(llaisysCudaCompiled()) +
                                    " cublas=" + std::to_string(llaisysCublasCompiled()) +
                                    " archs=" LLAISYS_CUDA_ARCHS;
    return info.c_str();
}

const char *llaisysNvidiaUnavailableReason(void) {
    thread_local std::string reason;
#ifdef LLAISYS_ENABLE_CUDA
    try {
        reason = nvidia::unavailableReason();
    } catch (const std::exception &e) {
        reason = e.what();
    }
#else
    reason = "built without CUDA (LLAISYS_ENABLE_CUDA=OFF)";
#endif
    return reason.c_str();
}

size_t llaisysDtypeSize(llaisysDataType_t dtype) {
    try { return dtypeSize(dtype); } catch (...) { return 0; }
}

llaisysStatus_t llaisysGetDeviceCount(llaisysDeviceType_t dev, int *count) {
    return guarded(__func__, [&] { *checkOut(count, "count") = getRuntime(dev).deviceCount(); });
}
llaisysStatus_t llaisysSetDevice(llaisysDeviceType_t dev, int id) {
    return guarded(__func__, [&] { getRuntime(dev).setDevice(id); });
}
llaisysStatus_t llaisysGetDevice(llaisysDeviceType_t dev, int *id) {
    return guarded(__func__, [&] { *checkOut(id, "device_id") = getRuntime(dev).getDevice(); });
}
llaisysStatus_t llaisysDeviceSynchronize(llaisysDeviceType_t dev) {
    return guarded(__func__, [&] { getRuntime(dev).synchronize(); });
}

llaisysStatus_t llaisysStreamCreate(llaisysDeviceType_t dev, llaisysStream_t *s) {
    return guarded(__func__, [&] { *checkOut(s, "stream") = getRuntime(dev).streamCreate(); });
}
llaisysStatus_t llaisysStreamDestroy(llaisysDeviceType_t dev, llaisysStream_t s) {
    return guarded(__func__, [&] { getRuntime(dev).streamDestroy(s); });
}
llaisysStatus_t llaisysStreamSynchronize(llaisysDeviceType_t dev, llaisysStream_t s) {
    return guarded(__func__, [&] { getRuntime(dev).streamSynchronize(s); });
}

llaisysStatus_t llaisysMalloc(llaisysDeviceType_t dev, size_t bytes, void **p) {
    return guarded(__func__, [&] { *checkOut(p, "ptr") = getRuntime(dev).malloc(bytes); });
}
llaisysStatus_t llaisysFree(llaisysDeviceType_t dev, void *p) {
    return guarded(__func__, [&] { getRuntime(dev).free(p); });
}
llaisysStatus_t llaisysMallocHost(llaisysDeviceType_t dev, size_t bytes, void **p) {
    return guarded(__func__, [&] { *checkOut(p, "ptr") = getRuntime(dev).mallocHost(bytes); });
}
llaisysStatus_t llaisysFreeHost(llaisysDeviceType_t dev, void *p) {
    return guarded(__func__, [&] { getRuntime(dev).freeHost(p); });
}

llaisysStatus_t llaisysMemcpy(llaisysDeviceType_t dev, void *dst, const void *src, size_t bytes,
                              llaisysMemcpyKind_t kind) {
    return guarded(__func__, [&] { getRuntime(dev).memcpy(dst, src, bytes, kind); });
}
llaisysStatus_t llaisysMemcpyAsync(llaisysDeviceType_t dev, void *dst, const void *src, size_t bytes,
                                   llaisysMemcpyKind_t kind, llaisysStream_t s) {
    return guarded(__func__, [&] { getRuntime(dev).memcpyAsync(dst, src, bytes, kind, s); });
}
llaisysStatus_t llaisysMemcpyResolveKind(llaisysDeviceType_t dev, void *dst, const void *src,
                                         llaisysMemcpyKind_t *kind) {
    return guarded(__func__, [&] { *checkOut(kind, "kind") = getRuntime(dev).resolveKind(dst, src); });
}
llaisysStatus_t llaisysMemset(llaisysDeviceType_t dev, void *p, int value, size_t bytes) {
    return guarded(__func__, [&] { getRuntime(dev).memset(p, value, bytes); });
}

llaisysStatus_t llaisysEventCreate(llaisysDeviceType_t dev, llaisysEvent_t *e) {
    return guarded(__func__, [&] { *checkOut(e, "event") = getRuntime(dev).eventCreate(); });
}
llaisysStatus_t llaisysEventDestroy(llaisysDeviceType_t dev, llaisysEvent_t e) {
    return guarded(__func__, [&] { getRuntime(dev).eventDestroy(e); });
}
llaisysStatus_t llaisysEventRecord(llaisysDeviceType_t dev, llaisysEvent_t e, llaisysStream_t s) {
    return guarded(__func__, [&] { getRuntime(dev).eventRecord(e, s); });
}
llaisysStatus_t llaisysEventSynchronize(llaisysDeviceType_t dev, llaisysEvent_t e) {
    return guarded(__func__, [&] { getRuntime(dev).eventSynchronize(e); });
}
llaisysStatus_t llaisysEventElapsedTime(llaisysDeviceType_t dev, llaisysEvent_t a, llaisysEvent_t b, float *ms) {
    return guarded(__func__, [&] { *checkOut(ms, "ms") = getRuntime(dev).eventElapsedMs(a, b); });
}

} // extern "C"
