// Tensor: a strided view over reference-counted device storage.
#pragma once

#include "dtype.hpp"
#include "runtime.hpp"

#include <cstddef>
#include <memory>
#include <vector>

namespace llaisys {

// One allocation on one device; freed by the device's runtime when the last
// view goes away.
struct Storage {
    void *data = nullptr;
    size_t bytes = 0;
    llaisysDeviceType_t dev = LLAISYS_DEVICE_CPU;
    int device_id = 0;
    Storage(size_t bytes, llaisysDeviceType_t dev, int device_id);
    ~Storage();
    Storage(const Storage &) = delete;
    Storage &operator=(const Storage &) = delete;
};

class Tensor {
public:
    static Tensor create(const std::vector<size_t> &shape, llaisysDataType_t dtype,
                         llaisysDeviceType_t dev, int device_id);

    void *data() const { return static_cast<char *>(storage_->data) + offset_; }
    const std::vector<size_t> &shape() const { return shape_; }
    const std::vector<ptrdiff_t> &strides() const { return strides_; }
    size_t ndim() const { return shape_.size(); }
    size_t dim(size_t i) const { return shape_.at(i); }
    llaisysDataType_t dtype() const { return dtype_; }
    llaisysDeviceType_t deviceType() const { return storage_->dev; }
    int deviceId() const { return storage_->device_id; }
    size_t numel() const;
    size_t elementSize() const { return dtypeSize(dtype_); }
    size_t nbytes() const { return numel() * elementSize(); }
    bool isContiguous() const;
    std::string describe() const; // e.g. "f16[2, 3] on nvidia:0", for messages

    Tensor view(const std::vector<size_t> &shape) const;
    Tensor permute(const std::vector<size_t> &order) const;
    Tensor slice(size_t dim, size_t start, size_t end) const;

    void load(const void *host);  // dense host buffer -> tensor
    void store(void *host) const; // tensor -> dense host buffer
    void copyFrom(const Tensor &src);

private:
    std::shared_ptr<Storage> storage_;
    size_t offset_ = 0; // bytes
    std::vector<size_t> shape_;
    std::vector<ptrdiff_t> strides_; // elements
    llaisysDataType_t dtype_ = LLAISYS_DTYPE_F32;
};

} // namespace llaisys
