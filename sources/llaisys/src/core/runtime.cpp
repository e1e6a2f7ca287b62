#include "runtime.hpp"

namespace llaisys {

#ifndef LLAISYS_ENABLE_CUDA
namespace {
// Stands in for the NVIDIA backend in a CPU-only build: it has no devices, and
// anything else explains how to get CUDA support instead of crashing.
class UnsupportedRuntime final : public RuntimeAPI {
    [[noreturn]] static void no() {
        fail(LLAISYS_ERROR_UNSUPPORTED,
             "NVIDIA device requested but llaisys was built without CUDA "
             "(configure with -DLLAISYS_ENABLE_CUDA=ON)");
    }
public:
    const char *name() const override { return "nvidia(unavailable)"; }
    int deviceCount() const override { return 0; }
    void setDevice(int) const override { no(); }
    int getDevice() const override { no(); }
    void synchronize() const override { no(); }
    llaisysStream_t streamCreate() const override { no(); }
    void streamDestroy(llaisysStream_t) const override { no(); }
    void streamSynchronize(llaisysStream_t) const override { no(); }
    void *malloc(size_t) const override { no(); }
    void free(void *) const override { no(); }
    void *mallocHost(size_t) const override { no(); }
    void freeHost(void *) const override { no(); }
    llaisysMemcpyKind_t resolveKind(void *, const void *) const override { no(); }
    void memcpy(void *, const void *, size_t, llaisysMemcpyKind_t) const override { no(); }
    void memcpyAsync(void *, const void *, size_t, llaisysMemcpyKind_t, llaisysStream_t) const override { no(); }
    void memset(void *, int, size_t) const override { no(); }
    llaisysEvent_t eventCreate() const override { no(); }
    void eventDestroy(llaisysEvent_t) const override { no(); }
    void eventRecord(llaisysEvent_t, llaisysStream_t) const override { no(); }
    void eventSynchronize(llaisysEvent_t) const override { no(); }
    float eventElapsedMs(llaisysEvent_t, llaisysEvent_t) const override { no(); }
};
} // namespace
#endif

const RuntimeAPI &getRuntime(llaisysDeviceType_t dev) {
    switch (dev) {
    case LLAISYS_DEVICE_CPU: return cpu::runtimeAPI();
    case LLAISYS_DEVICE_NVIDIA: {
#ifdef LLAISYS_ENABLE_CUDA
        return nvidia::runtimeAPI();
#else
        static const UnsupportedRuntime stub;
        return stub;
#endif
    }
    default: break;
    }
    fail(LLAISYS_ERROR_INVALID_ARGUMENT, "unknown device type ", int(dev));
}

} // namespace llaisys
