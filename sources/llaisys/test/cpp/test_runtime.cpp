// C++ runtime test through the public C API (what the Python package uses).
//   llaisys_test_runtime cpu|nvidia
// Exit 0 = pass, 1 = fail, 77 = skipped (NVIDIA requested but not built / no
// GPU; ctest maps 77 to "Skipped" via SKIP_RETURN_CODE).
#include "llaisys/ops.h"
#include "llaisys/runtime.h"
#include "llaisys/tensor.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

static int g_failures = 0;
#define EXPECT(cond)                                                                   \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            std::fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, \
                         #cond, llaisysGetLastError());                                \
            ++g_failures;                                                              \
        }                                                                              \
    } while (0)
#define OK(call) EXPECT((call) == LLAISYS_OK)

int main(int argc, char **argv) {
    std::string which = argc > 1 ? argv[1] : "cpu";
    llaisysDeviceType_t dev = which == "nvidia" ? LLAISYS_DEVICE_NVIDIA : LLAISYS_DEVICE_CPU;
    std::printf("%s\n", llaisysBuildInfo());
    int count = -1;
    OK(llaisysGetDeviceCount(dev, &count));
    if (dev == LLAISYS_DEVICE_NVIDIA && (!llaisysCudaCompiled() || count == 0)) {
        std::printf("SKIP: %s\n", llaisysCudaCompiled() ? "no NVIDIA GPU visible" : "built without CUDA");
        return 77;
    }
    EXPECT(count >= 1);
    OK(llaisysSetDevice(dev, 0));

    // Host -> device -> device -> host round trip, kinds resolved automatically.
    const size_t n = 1000;
    std::vector<float> host(n), back(n, 0.f);
    for (size_t i = 0; i < n; ++i) host[i] = float(i) * 0.5f;
    void *d0 = nullptr, *d1 = nullptr, *pinned = nullptr;
    OK(llaisysMalloc(dev, n * 4, &d0));
    OK(llaisysMalloc(dev, n * 4, &d1));
    OK(llaisysMallocHost(dev, n * 4, &pinned));
    llaisysMemcpyKind_t kind;
    OK(llaisysMemcpyResolveKind(dev, d0, host.data(), &kind));
    EXPECT(kind == (dev == LLAISYS_DEVICE_CPU ? LLAISYS_MEMCPY_H2H : LLAISYS_MEMCPY_H2D));
    OK(llaisysMemcpy(dev, d0, host.data(), n * 4, LLAISYS_MEMCPY_AUTO));
    OK(llaisysMemcpy(dev, d1, d0, n * 4, LLAISYS_MEMCPY_AUTO));
    llaisysStream_t s = nullptr;
    OK(llaisysStreamCreate(dev, &s));
    OK(llaisysMemcpyAsync(dev, pinned, d1, n * 4, LLAISYS_MEMCPY_AUTO, s));
    OK(llaisysStreamSynchronize(dev, s));
    std::memcpy(back.data(), pinned, n * 4);
    EXPECT(back == host);
    OK(llaisysStreamDestroy(dev, s));
    OK(llaisysFreeHost(dev, pinned));
    OK(llaisysFree(dev, d0));
    OK(llaisysFree(dev, d1));

    // One op through tensors: c = a + b.
    size_t shape[2] = {4, 250};
    llaisysTensor_t a, b, c;
    OK(llaisysTensorCreate(shape, 2, LLAISYS_DTYPE_F32, dev, 0, &a));
    OK(llaisysTensorCreate(shape, 2, LLAISYS_DTYPE_F32, dev, 0, &b));
    OK(llaisysTensorCreate(shape, 2, LLAISYS_DTYPE_F32, dev, 0, &c));
    OK(llaisysTensorLoad(a, host.data()));
    OK(llaisysTensorLoad(b, host.data()));
    OK(llaisysAdd(c, a, b));
    OK(llaisysTensorStore(c, back.data()));
    for (size_t i = 0; i < n; ++i) EXPECT(back[i] == 2 * host[i]);

    // Error path: a shape mismatch is an error code + message, not a crash.
    size_t other[1] = {3};
    llaisysTensor_t bad;
    OK(llaisysTensorCreate(other, 1, LLAISYS_DTYPE_F32, dev, 0, &bad));
    EXPECT(llaisysAdd(c, a, bad) == LLAISYS_ERROR_INVALID_ARGUMENT);
    EXPECT(std::strstr(llaisysGetLastError(), "add") != nullptr);
    for (llaisysTensor_t t : {a, b, c, bad}) OK(llaisysTensorDestroy(t));

    std::printf("%s: %s\n", which.c_str(), g_failures ? "FAILED" : "passed");
    return g_failures ? 1 : 0;
}
