// nvccload: a bench workload, not a library anyone uses. Shared declarations.
#pragma once

#include <cstdint>

namespace nvccload {

// grid size for n elements at `block` threads per block, capped like real launchers do
inline unsigned grid_for(int64_t n, int block = 256) {
  int64_t g = (n + block - 1) / block;
  return static_cast<unsigned>(g < 65535 ? (g > 0 ? g : 1) : 65535);
}

}  // namespace nvccload
