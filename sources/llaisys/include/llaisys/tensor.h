/* Tensor C API. A tensor is a strided view (shape, strides in elements, byte
 * offset) over a reference-counted storage on one device. Destroying a handle
 * never invalidates other views of the same storage. */
#ifndef LLAISYS_TENSOR_H
#define LLAISYS_TENSOR_H

#include "llaisys.h"

typedef struct LlaisysTensor *llaisysTensor_t;

#define LLAISYS_T LLAISYS_EXTERN_C LLAISYS_API llaisysStatus_t

LLAISYS_T llaisysTensorCreate(const size_t *shape, size_t ndim,
                              llaisysDataType_t dtype, llaisysDeviceType_t dev,
                              int device_id, llaisysTensor_t *out);
LLAISYS_T llaisysTensorDestroy(llaisysTensor_t t);

LLAISYS_T llaisysTensorGetData(llaisysTensor_t t, void **data);
LLAISYS_T llaisysTensorGetNdim(llaisysTensor_t t, size_t *ndim);
LLAISYS_T llaisysTensorGetShape(llaisysTensor_t t, size_t *shape);      /* ndim entries */
LLAISYS_T llaisysTensorGetStrides(llaisysTensor_t t, ptrdiff_t *strides);/* in elements */
LLAISYS_T llaisysTensorGetDtype(llaisysTensor_t t, llaisysDataType_t *dtype);
LLAISYS_T llaisysTensorGetDevice(llaisysTensor_t t, llaisysDeviceType_t *dev, int *device_id);
LLAISYS_T llaisysTensorIsContiguous(llaisysTensor_t t, int *contiguous);

/* Host <-> tensor: `host` is a dense row-major buffer in ordinary (or pinned)
 * host memory; the copy kind (H2H or H2D / D2H) follows the tensor's device.
 * The tensor must be contiguous. */
LLAISYS_T llaisysTensorLoad(llaisysTensor_t t, const void *host);
LLAISYS_T llaisysTensorStore(llaisysTensor_t t, void *host);
/* Tensor -> tensor copy between any two devices (H2H/H2D/D2H/D2D chosen from
 * the two tensors' devices). Same shape and dtype, both contiguous. */
LLAISYS_T llaisysTensorCopy(llaisysTensor_t dst, llaisysTensor_t src);

/* Views sharing storage. */
LLAISYS_T llaisysTensorView(llaisysTensor_t t, const size_t *shape, size_t ndim,
                            llaisysTensor_t *out);
LLAISYS_T llaisysTensorPermute(llaisysTensor_t t, const size_t *order,
                               llaisysTensor_t *out);
LLAISYS_T llaisysTensorSlice(llaisysTensor_t t, size_t dim, size_t start,
                             size_t end, llaisysTensor_t *out);

#undef LLAISYS_T
#endif /* LLAISYS_TENSOR_H */
