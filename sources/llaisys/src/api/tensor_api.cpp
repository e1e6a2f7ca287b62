// extern "C" tensor entry points.
#include "api_common.hpp"

#include <algorithm>

using namespace llaisys;
using llaisys::api::checkOut;
using llaisys::api::deref;
using llaisys::api::guarded;

namespace {
llaisysTensor_t wrap(Tensor t) { return new LlaisysTensor{std::move(t)}; }
} // namespace

extern "C" {

llaisysStatus_t llaisysTensorCreate(const size_t *shape, size_t ndim, llaisysDataType_t dtype,
                                    llaisysDeviceType_t dev, int device_id, llaisysTensor_t *out) {
    return guarded(__func__, [&] {
        checkOut(out, "tensor");
        LLAISYS_CHECK_ARG(shape || ndim == 0, "null shape");
        dtypeSize(dtype); // validates dtype
        *out = wrap(Tensor::create(std::vector<size_t>(shape, shape + ndim), dtype, dev, device_id));
    });
}

llaisysStatus_t llaisysTensorDestroy(llaisysTensor_t t) {
    return guarded(__func__, [&] { delete t; });
}

llaisysStatus_t llaisysTensorGetData(llaisysTensor_t t, void **data) {
    return guarded(__func__, [&] { *checkOut(data, "data") = deref(t, "t").data(); });
}
llaisysStatus_t llaisysTensorGetNdim(llaisysTensor_t t, size_t *ndim) {
    return guarded(__func__, [&] { *checkOut(ndim, "ndim") = deref(t, "t").ndim(); });
}
llaisysStatus_t llaisysTensorGetShape(llaisysTensor_t t, size_t *shape) {
    return guarded(__func__, [&] {
        const auto &s = deref(t, "t").shape();
        if (!s.empty()) std::copy(s.begin(), s.end(), checkOut(shape, "shape"));
    });
}
llaisysStatus_t llaisysTensorGetStrides(llaisysTensor_t t, ptrdiff_t *strides) {
    return guarded(__func__, [&] {
        const auto &s = deref(t, "t").strides();
        if (!s.empty()) std::copy(s.begin(), s.end(), checkOut(strides, "strides"));
    });
}
llaisysStatus_t llaisysTensorGetDtype(llaisysTensor_t t, llaisysDataType_t *dtype) {
    return guarded(__func__, [&] { *checkOut(dtype, "dtype") = deref(t, "t").dtype(); });
}
llaisysStatus_t llaisysTensorGetDevice(llaisysTensor_t t, llaisysDeviceType_t *dev, int *device_id) {
    return guarded(__func__, [&] {
        const Tensor &x = deref(t, "t");
        *checkOut(dev, "dev") = x.deviceType();
        *checkOut(device_id, "device_id") = x.deviceId();
    });
}
llaisysStatus_t llaisysTensorIsContiguous(llaisysTensor_t t, int *contiguous) {
    return guarded(__func__, [&] { *checkOut(contiguous, "contiguous") = deref(t, "t").isContiguous() ? 1 : 0; });
}

llaisysStatus_t llaisysTensorLoad(llaisysTensor_t t, const void *host) {
    return guarded(__func__, [&] { deref(t, "t").load(host); });
}
llaisysStatus_t llaisysTensorStore(llaisysTensor_t t, void *host) {
    return guarded(__func__, [&] { deref(t, "t").store(host); });
}
llaisysStatus_t llaisysTensorCopy(llaisysTensor_t dst, llaisysTensor_t src) {
    return guarded(__func__, [&] { deref(dst, "dst").copyFrom(deref(src, "src")); });
}

llaisysStatus_t llaisysTensorView(llaisysTensor_t t, const size_t *shape, size_t ndim, llaisysTensor_t *out) {
    return guarded(__func__, [&] {
        LLAISYS_CHECK_ARG(shape || ndim == 0, "null shape");
        *checkOut(out, "out") = wrap(deref(t, "t").view(std::vector<size_t>(shape, shape + ndim)));
    });
}
llaisysStatus_t llaisysTensorPermute(llaisysTensor_t t, const size_t *order, llaisysTensor_t *out) {
    return guarded(__func__, [&] {
        const Tensor &x = deref(t, "t");
        LLAISYS_CHECK_ARG(order || x.ndim() == 0, "null order");
        *checkOut(out, "out") = wrap(x.permute(std::vector<size_t>(order, order + x.ndim())));
    });
}
llaisysStatus_t llaisysTensorSlice(llaisysTensor_t t, size_t dim, size_t start, size_t end, llaisysTensor_t *out) {
    return guarded(__func__, [&] { *checkOut(out, "out") = wrap(deref(t, "t").slice(dim, start, end)); });
}

} // extern "C"
