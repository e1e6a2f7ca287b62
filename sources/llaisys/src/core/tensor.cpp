#include "tensor.hpp"

#include <numeric>
#include <sstream>

namespace llaisys {

Storage::Storage(size_t n, llaisysDeviceType_t d, int id) : bytes(n), dev(d), device_id(id) {
    const RuntimeAPI &rt = getRuntime(dev);
    DeviceGuard guard(dev, id);
    data = rt.malloc(bytes ? bytes : 1); // keep a valid, unique pointer for empty tensors
}

Storage::~Storage() {
    try {
        DeviceGuard guard(dev, device_id);
        getRuntime(dev).free(data);
    } catch (...) {
        // Destructors must not throw; a failed free (e.g. a dead context at
        // exit) only leaks.
    }
}

Tensor Tensor::create(const std::vector<size_t> &shape, llaisysDataType_t dtype,
                      llaisysDeviceType_t dev, int device_id) {
    Tensor t;
    t.dtype_ = dtype;
    t.shape_ = shape;
    t.strides_.resize(shape.size());
    ptrdiff_t s = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        t.strides_[i] = s;
        s *= ptrdiff_t(shape[i]);
    }
    t.storage_ = std::make_shared<Storage>(t.numel() * dtypeSize(dtype), dev, device_id);
    return t;
}

size_t Tensor::numel() const {
    return std::accumulate(shape_.begin(), shape_.end(), size_t(1), std::multiplies<size_t>());
}

bool Tensor::isContiguous() const {
    ptrdiff_t expect = 1;
    for (size_t i = shape_.size(); i-- > 0;) {
        if (shape_[i] != 1 && strides_[i] != expect) return false;
        expect *= ptrdiff_t(shape_[i]);
    }
    return true;
}

std::string Tensor::describe() const {
    std::ostringstream os;
    os << dtypeName(dtype_) << "[";
    for (size_t i = 0; i < shape_.size(); ++i) os << (i ? ", " : "") << shape_[i];
    os << "] on " << getRuntime(deviceType()).name() << ":" << deviceId();
    return os.str();
}

Tensor Tensor::view(const std::vector<size_t> &shape) const {
    LLAISYS_CHECK_ARG(isContiguous(), "view() needs a contiguous tensor, got ", describe());
    size_t n = std::accumulate(shape.begin(), shape.end(), size_t(1), std::multiplies<size_t>());
    LLAISYS_CHECK_ARG(n == numel(), "view() cannot change the element count of ", describe());
    Tensor t = *this;
    t.shape_ = shape;
    t.strides_.assign(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) t.strides_[i - 1] = t.strides_[i] * ptrdiff_t(shape[i]);
    return t;
}

Tensor Tensor::permute(const std::vector<size_t> &order) const {
    LLAISYS_CHECK_ARG(order.size() == ndim(), "permute() order has ", order.size(), " entries for ", describe());
    std::vector<bool> seen(ndim(), false);
    Tensor t = *this;
    for (size_t i = 0; i < order.size(); ++i) {
        LLAISYS_CHECK_ARG(order[i] < ndim() && !seen[order[i]], "permute() order is not a permutation");
        seen[order[i]] = true;
        t.shape_[i] = shape_[order[i]];
        t.strides_[i] = strides_[order[i]];
    }
    return t;
}

Tensor Tensor::slice(size_t d, size_t start, size_t end) const {
    LLAISYS_CHECK_ARG(d < ndim(), "slice() dim ", d, " out of range for ", describe());
    LLAISYS_CHECK_ARG(start <= end && end <= shape_[d], "slice() range [", start, ", ", end,
                      ") out of bounds for ", describe());
    Tensor t = *this;
    t.offset_ += start * size_t(strides_[d]) * elementSize();
    t.shape_[d] = end - start;
    return t;
}

void Tensor::load(const void *host) {
    LLAISYS_CHECK_ARG(host, "load() from a null host pointer");
    LLAISYS_CHECK_ARG(isContiguous(), "load() needs a contiguous tensor, got ", describe());
    DeviceGuard guard(deviceType(), deviceId());
    auto kind = deviceType() == LLAISYS_DEVICE_CPU ? LLAISYS_MEMCPY_H2H : LLAISYS_MEMCPY_H2D;
    getRuntime(deviceType()).memcpy(data(), host, nbytes(), kind);
}

void Tensor::store(void *host) const {
    LLAISYS_CHECK_ARG(host, "store() to a null host pointer");
    LLAISYS_CHECK_ARG(isContiguous(), "store() needs a contiguous tensor, got ", describe());
    DeviceGuard guard(deviceType(), deviceId());
    auto kind = deviceType() == LLAISYS_DEVICE_CPU ? LLAISYS_MEMCPY_H2H : LLAISYS_MEMCPY_D2H;
    getRuntime(deviceType()).memcpy(host, data(), nbytes(), kind);
}

void Tensor::copyFrom(const Tensor &src) {
    LLAISYS_CHECK_ARG(src.shape_ == shape_ && src.dtype_ == dtype_, "copy from ", src.describe(),
                      " into ", describe(), ": shape/dtype differ");
    LLAISYS_CHECK_ARG(isContiguous() && src.isContiguous(), "copy needs contiguous tensors");
    bool dst_dev = deviceType() != LLAISYS_DEVICE_CPU, src_dev = src.deviceType() != LLAISYS_DEVICE_CPU;
    LLAISYS_CHECK_ARG(!(dst_dev && src_dev) || deviceType() == src.deviceType(),
                      "copy between different accelerator types");
    // The kind follows from the two devices; the copy runs on the accelerator's
    // runtime whenever one side is on an accelerator.
    llaisysMemcpyKind_t kind = dst_dev ? (src_dev ? LLAISYS_MEMCPY_D2D : LLAISYS_MEMCPY_H2D)
                                       : (src_dev ? LLAISYS_MEMCPY_D2H : LLAISYS_MEMCPY_H2H);
    llaisysDeviceType_t rt_dev = dst_dev ? deviceType() : src.deviceType();
    int rt_id = dst_dev ? deviceId() : src.deviceId();
    DeviceGuard guard(rt_dev, rt_id);
    getRuntime(rt_dev).memcpy(data(), src.data(), nbytes(), kind);
}

} // namespace llaisys
