// Per-device runtime interface. Each backend (src/device/<dev>/) provides one
// RuntimeAPI instance; getRuntime(dev) picks it. The C API in src/api is a thin
// exception-catching layer over this.
#pragma once

#include "error.hpp"
#include "llaisys/runtime.h"

#include <string>

namespace llaisys {

class RuntimeAPI {
public:
    virtual ~RuntimeAPI() = default;
    virtual const char *name() const = 0;

    virtual int deviceCount() const = 0;
    virtual void setDevice(int id) const = 0;
    virtual int getDevice() const = 0;
    virtual void synchronize() const = 0;

    virtual llaisysStream_t streamCreate() const = 0;
    virtual void streamDestroy(llaisysStream_t s) const = 0;
    virtual void streamSynchronize(llaisysStream_t s) const = 0;

    virtual void *malloc(size_t bytes) const = 0;
    virtual void free(void *p) const = 0;
    virtual void *mallocHost(size_t bytes) const = 0;
    virtual void freeHost(void *p) const = 0;

    virtual llaisysMemcpyKind_t resolveKind(void *dst, const void *src) const = 0;
    virtual void memcpy(void *dst, const void *src, size_t bytes, llaisysMemcpyKind_t kind) const = 0;
    virtual void memcpyAsync(void *dst, const void *src, size_t bytes, llaisysMemcpyKind_t kind,
                             llaisysStream_t s) const = 0;
    virtual void memset(void *p, int value, size_t bytes) const = 0;

    virtual llaisysEvent_t eventCreate() const = 0;
    virtual void eventDestroy(llaisysEvent_t e) const = 0;
    virtual void eventRecord(llaisysEvent_t e, llaisysStream_t s) const = 0;
    virtual void eventSynchronize(llaisysEvent_t e) const = 0;
    virtual float eventElapsedMs(llaisysEvent_t start, llaisysEvent_t end) const = 0;
};

// Throws INVALID_ARGUMENT for an unknown device type. In a CPU-only build the
// NVIDIA entry is a stub (0 devices, every other call UNSUPPORTED).
const RuntimeAPI &getRuntime(llaisysDeviceType_t dev);

namespace cpu { const RuntimeAPI &runtimeAPI(); }
#ifdef LLAISYS_ENABLE_CUDA
namespace nvidia {
const RuntimeAPI &runtimeAPI();
// Why deviceCount() is 0 (the CUDA error of cudaGetDeviceCount), "" otherwise.
std::string unavailableReason();
}
#endif

// Makes `id` the current device of `dev` for a scope and restores the previous
// one, so ops and allocations land on the tensor's own GPU.
class DeviceGuard {
public:
    DeviceGuard(llaisysDeviceType_t dev, int id) : rt_(getRuntime(dev)) {
        prev_ = rt_.getDevice();
        if (prev_ != id) rt_.setDevice(id);
    }
    ~DeviceGuard() {
        try { if (rt_.getDevice() != prev_) rt_.setDevice(prev_); } catch (...) {}
    }
    DeviceGuard(const DeviceGuard &) = delete;
    DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
    const RuntimeAPI &rt_;
    int prev_;
};

} // namespace llaisys
