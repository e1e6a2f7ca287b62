// CPU backend of the runtime API: host memory, synchronous copies, and
// steady_clock "events" so timing code is device-agnostic.
#include "../../core/runtime.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace llaisys::cpu {
namespace {

using Clock = std::chrono::steady_clock;
struct CpuEvent { Clock::time_point t; };
// Streams on CPU are only tokens: work is already synchronous.
int g_stream_token;

class CpuRuntime final : public RuntimeAPI {
public:
    const char *name() const override { return "cpu"; }
    int deviceCount() const override { return 1; }
    void setDevice(int id) const override {
        LLAISYS_CHECK_ARG(id == 0, "CPU has a single device 0, got ", id);
    }
    int getDevice() const override { return 0; }
    void synchronize() const override {}

    llaisysStream_t streamCreate() const override { return &g_stream_token; }
    void streamDestroy(llaisysStream_t) const override {}
    void streamSynchronize(llaisysStream_t) const override {}

    void *malloc(size_t bytes) const override {
        // 64-byte alignment suits SIMD loads; aligned_alloc needs a multiple of it.
        if (bytes > (size_t(1) << 62)) fail(LLAISYS_ERROR_OUT_OF_MEMORY, "CPU malloc of ", bytes, " bytes: too large");
        size_t rounded = (bytes + 63) / 64 * 64;
        void *p = std::aligned_alloc(64, rounded ? rounded : 64);
        if (!p) fail(LLAISYS_ERROR_OUT_OF_MEMORY, "CPU malloc of ", bytes, " bytes failed");
        return p;
    }
    void free(void *p) const override { std::free(p); }
    void *mallocHost(size_t bytes) const override { return malloc(bytes); }
    void freeHost(void *p) const override { std::free(p); }

    llaisysMemcpyKind_t resolveKind(void *, const void *) const override { return LLAISYS_MEMCPY_H2H; }
    void memcpy(void *dst, const void *src, size_t bytes, llaisysMemcpyKind_t kind) const override {
        LLAISYS_CHECK_ARG(kind == LLAISYS_MEMCPY_H2H || kind == LLAISYS_MEMCPY_AUTO,
                          "the CPU runtime only copies host to host");
        if (bytes) {
            LLAISYS_CHECK_ARG(dst && src, "null pointer in memcpy");
            std::memcpy(dst, src, bytes);
        }
    }
    void memcpyAsync(void *dst, const void *src, size_t bytes, llaisysMemcpyKind_t kind,
                     llaisysStream_t) const override {
        memcpy(dst, src, bytes, kind);
    }
    void memset(void *p, int value, size_t bytes) const override {
        if (bytes) std::memset(p, value, bytes);
    }

    llaisysEvent_t eventCreate() const override { return new CpuEvent{Clock::now()}; }
    void eventDestroy(llaisysEvent_t e) const override { delete static_cast<CpuEvent *>(e); }
    void eventRecord(llaisysEvent_t e, llaisysStream_t) const override {
        LLAISYS_CHECK_ARG(e, "null event");
        static_cast<CpuEvent *>(e)->t = Clock::now();
    }
    void eventSynchronize(llaisysEvent_t) const override {}
    float eventElapsedMs(llaisysEvent_t a, llaisysEvent_t b) const override {
        LLAISYS_CHECK_ARG(a && b, "null event");
        auto d = static_cast<CpuEvent *>(b)->t - static_cast<CpuEvent *>(a)->t;
        return std::chrono::duration<float, std::milli>(d).count();
    }
};

} // namespace

const RuntimeAPI &runtimeAPI() {
    static const CpuRuntime rt;
    return rt;
}

} // namespace llaisys::cpu
