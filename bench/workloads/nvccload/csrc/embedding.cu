// Medium: embedding lookup (gather rows by token id), float types only.
#include <torch/extension.h>

#include "nvccload.h"

namespace {

template <typename T>
__global__ void gather_rows(const T* table, const int64_t* ids, T* out, int64_t n, int64_t dim) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * dim;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = table[ids[i / dim] * dim + i % dim];
}

}  // namespace

at::Tensor embedding_fwd(const at::Tensor& table, const at::Tensor& ids) {
  const int64_t n = ids.numel(), dim = table.size(1);
  auto out = torch::empty({n, dim}, table.options());
  AT_DISPATCH_FLOATING_TYPES(table.scalar_type(), "embedding", [&] {
    gather_rows<scalar_t><<<nvccload::grid_for(n * dim), 256>>>(
        table.data_ptr<scalar_t>(), ids.data_ptr<int64_t>(), out.data_ptr<scalar_t>(), n, dim);
  });
  return out;
}
