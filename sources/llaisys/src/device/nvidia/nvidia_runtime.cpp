// NVIDIA backend of the runtime API over the CUDA runtime (cudart). Compiled
// by the host compiler into the static llaisys_nvidia part.
#include "../../core/runtime.hpp"
#include "cuda_check.hpp"

namespace llaisys::nvidia {
namespace {

// Last reason cudaGetDeviceCount gave for "no devices" (set once per process
// in practice; a plain string is enough for diagnostics).
std::string g_unavailable_reason;

cudaMemcpyKind toCuda(llaisysMemcpyKind_t k) {
    switch (k) {
    case LLAISYS_MEMCPY_H2H: return cudaMemcpyHostToHost;
    case LLAISYS_MEMCPY_H2D: return cudaMemcpyHostToDevice;
    case LLAISYS_MEMCPY_D2H: return cudaMemcpyDeviceToHost;
    case LLAISYS_MEMCPY_D2D: return cudaMemcpyDeviceToDevice;
    default: break;
    }
    fail(LLAISYS_ERROR_INVALID_ARGUMENT, "bad memcpy kind ", int(k));
}

// True if `p` is device (or managed) memory. Ordinary and pinned host memory
// are host. Requires a CUDA context, i.e. a GPU.
bool isDevicePtr(const void *p) {
    cudaPointerAttributes attr{};
    LLAISYS_CUDA_CHECK(cudaPointerGetAttributes(&attr, p));
    return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

class NvidiaRuntime final : public RuntimeAPI {
public:
    const char *name() const override { return "nvidia"; }

    int deviceCount() const override {
        int n = 0;
        cudaError_t err = cudaGetDeviceCount(&n);
        // No GPU / no driver is a normal situation (CI, build machines): report
        // zero devices instead of failing, so callers can skip cleanly.
        if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
            err == cudaErrorInitializationError || err == cudaErrorSystemDriverMismatch ||
            err == cudaErrorCompatNotSupportedOnDevice) {
            (void)cudaGetLastError();
            g_unavailable_reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + ": " +
                                   cudaGetErrorString(err);
            return 0;
        }
        LLAISYS_CUDA_CHECK(err);
        return n;
    }
    void setDevice(int id) const override {
        int n = deviceCount();
        if (id < 0 || id >= n)
            fail(n == 0 ? LLAISYS_ERROR_UNSUPPORTED : LLAISYS_ERROR_INVALID_ARGUMENT,
                 "NVIDIA device ", id, " does not exist (", n, " device(s) visible)");
        LLAISYS_CUDA_CHECK(cudaSetDevice(id));
    }
    int getDevice() const override {
        if (deviceCount() == 0)
            fail(LLAISYS_ERROR_UNSUPPORTED, "no NVIDIA device visible (cudaGetDeviceCount reports 0)");
        int id = 0;
        LLAISYS_CUDA_CHECK(cudaGetDevice(&id));
        return id;
    }
    void synchronize() const override { LLAISYS_CUDA_CHECK(cudaDeviceSynchronize()); }

    llaisysStream_t streamCreate() const override {
        cudaStream_t s = nullptr;
        LLAISYS_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        return s;
    }
    void streamDestroy(llaisysStream_t s) const override {
        LLAISYS_CUDA_CHECK(cudaStreamDestroy(static_cast<cudaStream_t>(s)));
    }
    void streamSynchronize(llaisysStream_t s) const override {
        LLAISYS_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
    }

    void *malloc(size_t bytes) const override {
        void *p = nullptr;
        LLAISYS_CUDA_CHECK(cudaMalloc(&p, bytes));
        return p;
    }
    void free(void *p) const override { LLAISYS_CUDA_CHECK(cudaFree(p)); }
    void *mallocHost(size_t bytes) const override {
        void *p = nullptr;
        LLAISYS_CUDA_CHECK(cudaMallocHost(&p, bytes));
        return p;
    }
    void freeHost(void *p) const override { LLAISYS_CUDA_CHECK(cudaFreeHost(p)); }

    llaisysMemcpyKind_t resolveKind(void *dst, const void *src) const override {
        bool d = isDevicePtr(dst), s = isDevicePtr(src);
        if (d && s) return LLAISYS_MEMCPY_D2D;
        if (d) return LLAISYS_MEMCPY_H2D;
        if (s) return LLAISYS_MEMCPY_D2H;
        return LLAISYS_MEMCPY_H2H;
    }
    void memcpy(void *dst, const void *src, size_t bytes, llaisysMemcpyKind_t kind) const override {
        if (!bytes) return;
        if (kind == LLAISYS_MEMCPY_AUTO) kind = resolveKind(dst, src);
        LLAISYS_CUDA_CHECK(cudaMemcpy(dst, src, bytes, toCuda(kind)));
    }
    void memcpyAsync(void *dst, const void *src, size_t bytes, llaisysMemcpyKind_t kind,
                     llaisysStream_t s) const override {
        if (!bytes) return;
        if (kind == LLAISYS_MEMCPY_AUTO) kind = resolveKind(dst, src);
        LLAISYS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, toCuda(kind), static_cast<cudaStream_t>(s)));
    }
    void memset(void *p, int value, size_t bytes) const override {
        if (bytes) LLAISYS_CUDA_CHECK(cudaMemset(p, value, bytes));
    }

    llaisysEvent_t eventCreate() const override {
        cudaEvent_t e = nullptr;
        LLAISYS_CUDA_CHECK(cudaEventCreate(&e));
        return e;
    }
    void eventDestroy(llaisysEvent_t e) const override {
        LLAISYS_CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(e)));
    }
    void eventRecord(llaisysEvent_t e, llaisysStream_t s) const override {
        LLAISYS_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)));
    }
    void eventSynchronize(llaisysEvent_t e) const override {
        LLAISYS_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(e)));
    }
    float eventElapsedMs(llaisysEvent_t a, llaisysEvent_t b) const override {
        float ms = 0.f;
        LLAISYS_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(a), static_cast<cudaEvent_t>(b)));
        return ms;
    }
};

} // namespace

const RuntimeAPI &runtimeAPI() {
    static const NvidiaRuntime rt;
    return rt;
}

std::string unavailableReason() {
    return runtimeAPI().deviceCount() > 0 ? std::string() : g_unavailable_reason;
}

} // namespace llaisys::nvidia
