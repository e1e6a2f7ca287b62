// Plain CUDA (no torch header): a counter-based hash RNG and dropout mask.
#include <cstdint>

#include "nvccload.h"

namespace {

__device__ uint32_t hash3(uint32_t a, uint32_t b, uint32_t c) {
  a -= c; a ^= (c << 4) | (c >> 28); c += b;
  b -= a; b ^= (a << 6) | (a >> 26); a += c;
  c -= b; c ^= (b << 8) | (b >> 24); b += a;
  return c;
}

__global__ void dropout_mask(uint8_t* mask, float p, uint64_t seed, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t r = hash3(static_cast<uint32_t>(i), static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    mask[i] = (r * 2.3283064e-10f) >= p;
  }
}

}  // namespace

void nvccload_dropout_mask(uint8_t* mask, float p, uint64_t seed, int64_t n) {
  dropout_mask<<<nvccload::grid_for(n), 256>>>(mask, p, seed, n);
}
